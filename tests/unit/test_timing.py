"""Stage timings: collected per request (threads included), rendered and parsed as Server-Timing."""

from __future__ import annotations

import asyncio
import time

from memwarden.timing import parse_server_timing, server_timing, stage, timed


def test_stages_sum_per_name_and_nothing_is_collected_outside_a_request() -> None:
    with stage("outside"):
        pass
    with timed() as found:
        with stage("embed"):
            time.sleep(0.01)
        with stage("embed"):
            time.sleep(0.01)
        with stage("index"):
            pass
    assert list(found) == ["embed", "index"]
    assert found["embed"] >= 20.0
    assert "outside" not in found


def test_a_stage_run_in_a_thread_counts_for_the_request_that_started_it() -> None:
    def work() -> None:
        with stage("thread"):
            time.sleep(0.005)

    async def request() -> dict[str, float]:
        with timed() as found:
            await asyncio.to_thread(work)
        return found

    assert asyncio.run(request())["thread"] >= 5.0


def test_concurrent_requests_keep_their_own_stages() -> None:
    async def request(name: str) -> dict[str, float]:
        with timed() as found, stage(name):
            await asyncio.sleep(0.01)
        return found

    async def both() -> list[dict[str, float]]:
        return list(await asyncio.gather(request("a"), request("b")))

    a, b = asyncio.run(both())
    assert list(a) == ["a"] and list(b) == ["b"]


def test_the_header_round_trips_and_bad_metrics_are_skipped() -> None:
    header = server_timing({"auth": 0.123, "index": 8.4})
    assert header == "auth;dur=0.12, index;dur=8.40"
    assert parse_server_timing(header) == {"auth": 0.12, "index": 8.4}
    assert parse_server_timing("cache;desc=hit, db;dur=x, ok;dur=1.5") == {"ok": 1.5}
    assert parse_server_timing(None) == {}
