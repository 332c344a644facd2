"""librdkafka's log lines through Python logging (the ``logger`` of every confluent-kafka client of ours), its
self-clearing retries demoted to debug lines: a fresh stack's first write no longer prints a raw
``%4|…|GETPID|…`` warning that asks nothing of anyone."""

from __future__ import annotations

import logging

__all__ = ["KAFKA_LOG", "TRANSIENT_STATES", "transient_retry"]

#: librdkafka's own log lines go through Python logging under this name (``logger`` in the producer's
#: configuration) rather than as raw ``%4|…|GETPID|…`` lines on stderr.
KAFKA_LOG = logging.getLogger("memwarden.kafka")
#: Broker states librdkafka retries by itself and that clear without anyone acting: a freshly started
#: broker's coordinator still loading its state at the first idempotent write, a coordinator moving.
TRANSIENT_STATES = ("coordinator load in progress", "not coordinator", "coordinator not available")


def transient_retry(message: str) -> bool:
    """Whether a librdkafka log ``message`` reports one of :data:`TRANSIENT_STATES` that it is retrying
    ("... Failed to acquire idempotence PID from broker ...: Broker: Coordinator load in progress:
    retrying"): nothing for the person at the terminal to do."""
    folded = message.casefold()
    return folded.rstrip().endswith("retrying") and any(state in folded for state in TRANSIENT_STATES)


def _quiet_transient(record: logging.LogRecord) -> bool:
    """Filter of :data:`KAFKA_LOG`: a warning of :func:`transient_retry` becomes a debug line (shown only
    when ``memwarden.kafka`` logs at DEBUG); everything else, connection failures included, passes as is."""
    if record.levelno <= logging.WARNING and transient_retry(record.getMessage()):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return KAFKA_LOG.isEnabledFor(logging.DEBUG)
    return True


KAFKA_LOG.addFilter(_quiet_transient)
