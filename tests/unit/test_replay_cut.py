"""``--until`` of ``memwarden replay`` (:func:`memwarden.processors.replay_cut.parse_until`): every partition of
the commands topic named once, each offset inside its log, an empty partition as ``-1``; anything else is refused
naming ``until`` (newcomer trial, twentieth session: an empty ``--until`` replayed the whole ledger and a
partition named twice kept its last offset, silently)."""

from __future__ import annotations

import pytest

from memwarden.errors import ValidationError
from memwarden.processors.replay_cut import parse_until

HIGHS = {0: 5, 1: 0, 2: 3}


def test_every_partition_once_gives_exclusive_ends() -> None:
    assert parse_until("commands:0:4,commands:1:-1,commands:2:0", HIGHS) == {0: 5, 1: 0, 2: 1}


@pytest.mark.parametrize(("text", "says"), [
    ("", "is not commands"),
    ("commands:0:4,commands:0:2,commands:1:-1,commands:2:0", "named twice"),
    ("commands:0:4,commands:2:0", "name every partition"),
    ("commands:0:5,commands:1:-1,commands:2:0", "past the log end"),
    ("commands:0:4,commands:1:0,commands:2:0", "is empty"),
    ("commands:9:0", "no partition 9"),
    ("events:0:1", "on the commands topic"),
])
def test_a_bad_cut_is_refused_naming_until(text: str, says: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_until(text, HIGHS)
    assert err.value.field == "until" and says in str(err.value)
