"""memwarden.processors."""
