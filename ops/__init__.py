"""memwarden.ops."""
