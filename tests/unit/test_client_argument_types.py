"""Client arguments of the wrong type are refused with a ``ValidationError`` naming the field, never an
``AttributeError`` or a bare ``ValueError`` from inside (newcomer trial, twenty-fifth session:
``forget_matching(query=123)`` and ``record(fact="diet=vegan")``). No broker, no database."""

from __future__ import annotations

from typing import Any

import pytest

from memwarden.errors import ValidationError
from memwarden.producers.building import build_fact
from memwarden.producers.forgetting import ForgetCalls


@pytest.mark.parametrize("fact", ["diet=vegan", ["diet", "vegan"], 3, ("entity", "attribute")])
def test_a_fact_that_is_not_a_mapping_is_refused_naming_fact(fact: Any) -> None:
    with pytest.raises(ValidationError) as err:
        build_fact(fact)
    assert err.value.field == "fact"


def test_a_fact_mapping_is_built_and_no_fact_is_none() -> None:
    built = build_fact({"entity": "user:alice", "attribute": "diet", "value": "vegan"})
    assert built is not None and (built.attribute, built.value) == ("diet", "vegan")
    assert build_fact(None) is None and build_fact({}) is None


class _NoReads(ForgetCalls):
    def recall(self, principal: str, query: str, k: int = 10, **kwargs: Any) -> list[Any]:
        raise AssertionError("a refused argument reads nothing")


@pytest.mark.parametrize("query", [123, ["blue car"], b"blue car"])
def test_a_forget_query_that_is_not_text_is_refused_naming_query(query: Any) -> None:
    with pytest.raises(ValidationError) as err:
        _NoReads().forget_matching(principal="user:alice", query=query)
    assert err.value.field == "query"


def test_a_wait_that_gives_up_names_the_commands_and_both_causes() -> None:
    """Newcomer trial, twenty-fifth session: an id the ledger never carried waited out the timeout and then read as
    an outage ("1 commands not decided")."""
    from memwarden.producers.building import undecided_message

    message = undecided_message(["c1", "c2", "c3", "c4"], 60.0)
    assert message.startswith("4 command(s) not decided in 60 s (c1, c2, c3 ...)")
    assert "behind or stopped" in message and "no such command reached this namespace's ledger" in message
