"""``high_watermark`` asks again while partition leaders move and gives up on fatal answers."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from memwarden.stores.ledger import high_watermark


class _Answers:
    """A consumer whose watermark query fails with the given codes, then answers (0, 42)."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = list(codes)
        self.asked = 0

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        self.asked += 1
        if self.codes:
            raise KafkaException(KafkaError(self.codes.pop(0)))
        return 0, 42


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                                  KafkaError._TIMED_OUT, KafkaError._TRANSPORT])
def test_a_moving_leader_is_asked_again(code: int) -> None:
    consumer = _Answers([code, code])
    assert high_watermark(consumer, "t", 0, timeout_s=5) == 42  # type: ignore[arg-type]
    assert consumer.asked == 3


def test_a_fatal_answer_is_raised_at_once() -> None:
    consumer = _Answers([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(KafkaException):
        high_watermark(consumer, "t", 0, timeout_s=5)  # type: ignore[arg-type]
    assert consumer.asked == 1


def test_a_leader_that_never_comes_back_is_raised_after_the_timeout() -> None:
    consumer = _Answers([KafkaError.NOT_LEADER_FOR_PARTITION] * 1000)
    with pytest.raises(KafkaException):
        high_watermark(consumer, "t", 0, timeout_s=0.3)  # type: ignore[arg-type]
    assert 1 < consumer.asked < 1000
