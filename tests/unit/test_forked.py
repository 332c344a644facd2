"""``Forked``: work in a forked child, its ticks, result and errors back in the parent."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import pytest

from memwarden.errors import ValidationError
from memwarden.processors.forked import ChildFailed, Forked, available

pytestmark = pytest.mark.skipif(not available(), reason="no fork start method on this platform")


def _double_what_arrives(tick: Callable[[str, int, int], None], inbox: Callable[[], Any]) -> int:
    tick("ready", 1, 1)
    value = inbox()
    tick("work", 1, 2)
    tick("work", 2, 2)
    return int(value) * 2


def _raise_validation(tick: Callable[[str, int, int], None], inbox: Callable[[], Any]) -> None:
    raise ValidationError("until", "past the log end")


class _Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a}/{b}")


def _raise_unpicklable(tick: Callable[[str, int, int], None], inbox: Callable[[], Any]) -> None:
    raise _Unpicklable(1, 2)


def _die(tick: Callable[[str, int, int], None], inbox: Callable[[], Any]) -> None:
    os._exit(3)


def test_the_result_comes_back_after_the_ticks_and_what_was_sent() -> None:
    ticks: list[tuple[str, int, int]] = []

    async def run() -> int:
        child = Forked(_double_what_arrives)
        await child.until("ready", ticks.append)  # type: ignore[arg-type]
        child.send(21)
        result: int = await child.result(lambda *t: ticks.append(t))
        return result

    assert asyncio.run(run()) == 42
    assert ticks == [("work", 1, 2), ("work", 2, 2)]


def test_an_error_in_the_child_is_raised_in_the_parent_as_it_was() -> None:
    with pytest.raises(ValidationError, match="until: past the log end"):
        asyncio.run(Forked(_raise_validation).result())


def test_an_error_that_cannot_travel_arrives_as_child_failed_naming_it() -> None:
    with pytest.raises(ChildFailed, match="_Unpicklable: 1/2"):
        asyncio.run(Forked(_raise_unpicklable).result())


def test_a_child_that_dies_without_a_result_is_reported_with_its_exit_code() -> None:
    with pytest.raises(ChildFailed, match="exited with code 3"):
        asyncio.run(Forked(_die).result())


def test_waiting_for_a_stage_the_child_never_reaches_fails() -> None:
    async def run() -> None:
        child = Forked(_raise_validation)
        try:
            await child.until("ready")
        finally:
            child.stop()

    with pytest.raises(ValidationError):
        asyncio.run(run())
