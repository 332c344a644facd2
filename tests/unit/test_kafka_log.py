"""librdkafka's log lines through ``memwarden.kafka``: its self-clearing retries are debug lines, every other
warning and error passes (``ops/kafka_log.py``)."""

from __future__ import annotations

import logging

import pytest

from memwarden.ops.kafka_log import KAFKA_LOG, transient_retry

#: the line a fresh stack's first idempotent write printed raw on stderr (newcomer trial, eighteenth session)
GETPID = ("GETPID [rdkafka#producer-2] [thrd:main]: Failed to acquire idempotence PID from broker "
          "127.0.0.1:19092/1: Broker: Coordinator load in progress: retrying")
REFUSED = ("FAIL [rdkafka#producer-1] [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to "
           "ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)")


@pytest.mark.parametrize(("message", "transient"), [
    (GETPID, True),
    ("COORD [rdkafka#producer-1] [thrd:main]: Broker: Not coordinator: retrying", True),
    (REFUSED, False),
    ("GETPID [rdkafka#producer-2] [thrd:main]: Failed to acquire idempotence PID: Broker: Coordinator load in "
     "progress", False),  # not retried: whoever reads it may have to act
    ("REQTMOUT [rdkafka#producer-1] [thrd:main]: Timed out 3 in-flight requests: retrying", False),
])
def test_transient_retry_names_only_self_clearing_broker_states(message: str, transient: bool) -> None:
    assert transient_retry(message) is transient


def _record(level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord(KAFKA_LOG.name, level, __file__, 0, message, None, None)


def test_a_self_clearing_retry_is_a_debug_line_and_a_refused_connection_still_warns() -> None:
    before = KAFKA_LOG.level
    try:
        KAFKA_LOG.setLevel(logging.WARNING)
        quiet = _record(logging.WARNING, GETPID)
        assert not KAFKA_LOG.filter(quiet) and quiet.levelno == logging.DEBUG
        loud = _record(logging.ERROR, REFUSED)
        assert KAFKA_LOG.filter(loud) and loud.levelno == logging.ERROR
        KAFKA_LOG.setLevel(logging.DEBUG)  # asked for: the retry is shown, as a debug line
        shown = _record(logging.WARNING, GETPID)
        assert KAFKA_LOG.filter(shown) and shown.levelname == "DEBUG"
    finally:
        KAFKA_LOG.setLevel(before)
