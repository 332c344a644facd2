"""memwarden: governed long-term memory for LLM agents on an Apache Kafka ledger."""

__version__ = "0.1.0"
