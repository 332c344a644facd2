"""Avro contract of memwarden: ``avro/*.avsc`` and the single-object codec."""
