"""memwarden.producers."""
