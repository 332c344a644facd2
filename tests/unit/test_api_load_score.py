"""The pure figures of ``memwarden eval api-load`` (issue 10 part 5): percentiles, per-endpoint
aggregation, expected answers and intended refusals, lost writes, live memories and the pass rule."""

from __future__ import annotations

import pytest

from memwarden.evals.api_load_score import (
    Ack,
    Call,
    content_refusals,
    endpoint_figures,
    expected,
    live_memories,
    lost,
    passed,
    percentile,
    refusal_figures,
    unexpected_errors,
)


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0  # order does not matter
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_expected_answers_per_endpoint() -> None:
    assert expected(Call("record", 202, 5.0))
    assert not expected(Call("record", 201, 5.0))
    assert expected(Call("record_wait", 201, 5.0))
    assert not expected(Call("record_wait", 403, 5.0, "NOT_OWNER"))
    # the gate holding a text for review is the API telling the caller why (counted apart), not an error
    assert expected(Call("record_wait", 422, 5.0, "INSTRUCTIONS_IN_CONTENT"))
    assert not expected(Call("record_wait", 422, 5.0, "UNKNOWN_FIELD"))
    assert not expected(Call("record", 422, 5.0, "INSTRUCTIONS_IN_CONTENT"))
    assert expected(Call("decision", 200, 5.0))
    assert expected(Call("decision", 404, 5.0, "NOT_DECIDED"))
    assert not expected(Call("decision", 404, 5.0, "UNKNOWN_MEMORY"))
    assert not expected(Call("recall", 503, 5.0, "STACK_UNAVAILABLE"))
    assert not expected(Call("recall", 0, 60_000.0, None, "ReadTimeout"))
    assert not expected(Call("nowhere", 200, 1.0))


def test_intended_refusals_must_answer_exactly_as_intended() -> None:
    calls = [Call("refusal:forget_other", 403, 4.0, "NOT_OWNER"), Call("refusal:forget_other", 404, 4.0,
                                                                      "UNKNOWN_MEMORY"),
             Call("refusal:unknown_token", 401, 2.0, "UNKNOWN_TOKEN"), Call("refusal:supersede_other", 0, 9.0,
                                                                          None, "ConnectError")]
    figures = refusal_figures(calls)
    assert figures["forget_other"] == {"count": 2, "expected": "403 NOT_OWNER", "as_expected": 1,
                                       "answers": {"403 NOT_OWNER": 1, "404 UNKNOWN_MEMORY": 1}}
    assert figures["unknown_token"]["as_expected"] == 1
    assert figures["supersede_other"]["answers"] == {"ConnectError": 1}
    # a refusal answered otherwise than intended is an unexpected error; one answered as intended is not
    assert [c.code for c in unexpected_errors(calls)] == ["UNKNOWN_MEMORY", None]


def test_endpoint_figures_aggregate_per_endpoint_without_refusals() -> None:
    calls = [Call("recall", 200, float(ms)) for ms in range(1, 101)]
    calls += [Call("recall", 0, 60_000.0, None, "ReadTimeout"), Call("record", 202, 10.0),
              Call("record", 500, 20.0, "INTERNAL"), Call("refusal:unknown_token", 401, 1.0, "UNKNOWN_TOKEN")]
    figures = endpoint_figures(calls, duration_s=10.0)
    assert set(figures) == {"recall", "record"}
    recall = figures["recall"]
    assert recall["count"] == 101 and recall["per_s"] == 10.1 and recall["unexpected"] == 1
    # latencies of answered calls only: the timeout has no latency of an answer
    assert (recall["p50_ms"], recall["p95_ms"], recall["p99_ms"], recall["max_ms"]) == (50.5, 95.0, 99.0, 100.0)
    assert figures["record"] == {"count": 2, "per_s": 0.2, "p50_ms": 15.0, "p95_ms": 19.5, "p99_ms": 19.9,
                                 "max_ms": 20.0, "unexpected": 1}
    with pytest.raises(ValueError):
        endpoint_figures(calls, 0.0)


def _ack(kind: str, cid: str, mid: str, seq: int, client: int = 0) -> Ack:
    return Ack(kind, cid, mid, "" if kind == "forget" else f"m-{cid}", client, seq)


def test_lost_are_acknowledged_writes_without_a_decision() -> None:
    acks = [_ack("record", "c1", "m1", 0), _ack("record", "c2", "m2", 1)]
    assert lost(acks, {"c1": "ACCEPTED"}) == [acks[1]]
    assert lost(acks, {"c1": "ACCEPTED", "c2": "REJECTED"}) == []


def test_live_memories_follow_accepted_writes_in_client_order() -> None:
    acks = [_ack("record", "r1", "m1", 0), _ack("supersede", "s1", "m1", 1), _ack("record", "r2", "m2", 2),
            _ack("forget", "f2", "m2", 3), _ack("record", "r3", "m3", 4), _ack("supersede", "s3", "m3", 5),
            _ack("record", "r4", "m4", 0, client=1), _ack("supersede", "s9", "m9", 1, client=1)]
    decided = {"r1": "ACCEPTED", "s1": "ACCEPTED", "r2": "ACCEPTED", "f2": "ACCEPTED", "r3": "ACCEPTED_UNVERIFIED",
               "s3": "REJECTED", "r4": "QUARANTINED", "s9": "ACCEPTED"}
    live = live_memories(list(reversed(acks)), decided)  # the given order does not matter
    assert {mid: a.command_id for mid, a in live.items()} == {"m1": "s1", "m3": "r3"}
    assert live["m1"].marker == "m-s1"  # the current text is the supersession's


def _figures(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"acknowledged": 10, "lost": 0, "unrecallable": 0, "unexpected_errors": 0,
                               "intended_refusals": {"forget_other": {"count": 2, "as_expected": 2}}}
    return base | over


def test_pass_rule() -> None:
    assert passed(_figures())
    assert not passed(_figures(acknowledged=0))
    assert not passed(_figures(lost=1))
    assert not passed(_figures(unrecallable=1))
    assert not passed(_figures(unexpected_errors=1))
    assert not passed(_figures(intended_refusals={}))
    assert not passed(_figures(intended_refusals={"forget_other": {"count": 2, "as_expected": 1}}))
    # at most 5 % of the writes held for review: 422 answers and acknowledged writes quarantined together
    assert passed(_figures(acknowledged=198, content_refusals=2, outcomes={"ACCEPTED": 190, "QUARANTINED": 8}))
    assert not passed(_figures(acknowledged=198, content_refusals=3, outcomes={"ACCEPTED": 190, "QUARANTINED": 8}))
    assert not passed(_figures(acknowledged=200, outcomes={"ACCEPTED": 189, "QUARANTINED": 11}))


def test_content_refusals_count_the_gate_holding_a_write_for_review() -> None:
    calls = [Call("record_wait", 422, 5.0, "INSTRUCTIONS_IN_CONTENT"), Call("record_wait", 201, 5.0),
             Call("record_wait", 422, 5.0, "UNKNOWN_FIELD"), Call("refusal:forget_other", 403, 5.0, "NOT_OWNER")]
    assert content_refusals(calls) == 1 and unexpected_errors(calls) == [calls[2]]
