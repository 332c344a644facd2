"""memwarden.commands."""
