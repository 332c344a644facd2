"""memwarden.projections."""
