"""Stores and adapters: PostgreSQL state and offsets, the key ring. Plain I/O mapping between rows or
records and the pure types of :mod:`memwarden.commands`; no decisions are taken here."""
