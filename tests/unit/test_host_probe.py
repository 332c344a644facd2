"""The host probe: a fixed workload timed in ms, refused for no rounds."""

from __future__ import annotations

import pytest

from memwarden.evals.host_probe import host_probe_ms


def test_the_probe_times_its_workload_in_ms() -> None:
    ms = host_probe_ms(rounds=2)
    assert isinstance(ms, float) and 0.0 < ms < 10_000.0


def test_the_probe_needs_a_round() -> None:
    with pytest.raises(ValueError, match="rounds"):
        host_probe_ms(rounds=0)
