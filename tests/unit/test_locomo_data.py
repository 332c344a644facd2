"""Unit tests for :mod:`memwarden.evals.locomo_data` on the shipped sample and inline fixtures."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memwarden.evals.locomo_data import (
    CATEGORY_NAMES,
    Conversation,
    RecallTable,
    Turn,
    load_conversations,
    memory_text,
    normalise_evidence,
    parse_session_datetime,
    session_of,
    session_recall,
    turn_recall,
)

SAMPLE = Path(__file__).resolve().parents[2] / "memwarden" / "evals" / "samples" / "sample_conversation.json"


@pytest.fixture(scope="module")
def sample() -> Conversation:
    (conv,) = load_conversations(SAMPLE)
    return conv


def _write(tmp_path: Path, samples: list[dict[str, object]]) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _mini_sample(sample_id: str, evidence: list[str]) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            # Out of numeric order on purpose; session_11 has a date but no turns, session_12 no list.
            "session_10_date_time": "3:00 pm on 2 January, 2021",
            "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "later"}],
            "session_2_date_time": "12:05 am on 1 January, 2021",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "hello"},
                {"speaker": "Bo", "dia_id": "D2:2", "text": "hi", "blip_caption": "   "},
            ],
            "session_11_date_time": "4:00 pm on 3 January, 2021",
            "session_12": None,
        },
        "qa": [{"question": "q?", "answer": 7, "evidence": evidence, "category": 2}],
    }


# --- loading the sample -------------------------------------------------------------------------


def test_sample_shape(sample: Conversation) -> None:
    assert sample.conversation_id == "sample-1"
    assert sample.speakers == ("Priya", "Tomasz")
    assert len(sample.turns) == 24
    assert [t.session for t in sample.turns] == [1] * 8 + [2] * 8 + [3] * 8
    assert [t.index for t in sample.turns[:8]] == list(range(8))
    assert {t.speaker for t in sample.turns} == set(sample.speakers)
    assert all(t.conversation_id == "sample-1" for t in sample.turns)
    assert len(sample.questions) == 10


def test_sample_timestamps_are_utc_and_ordered(sample: Conversation) -> None:
    first, second = sample.turns[0], sample.turns[1]
    assert first.observed_at == datetime(2024, 3, 3, 9, 15, tzinfo=UTC)
    assert second.observed_at - first.observed_at == timedelta(seconds=1)
    assert sample.turns[8].observed_at == datetime(2024, 3, 17, 12, 40, tzinfo=UTC)
    assert sample.turns[16].observed_at == datetime(2024, 4, 2, 19, 5, tzinfo=UTC)
    stamps = [t.observed_at for t in sample.turns]
    assert all(s.utcoffset() == timedelta(0) for s in stamps)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_sample_caption_and_memory_text(sample: Conversation) -> None:
    with_caption = [t for t in sample.turns if t.caption is not None]
    assert [t.dia_id for t in with_caption] == ["D2:3"]
    turn = with_caption[0]
    assert memory_text(turn) == f"Tomasz: {turn.text} [shares an image: {turn.caption}]"
    plain = sample.turns[0]
    assert memory_text(plain) == f"Priya: {plain.text}"


def test_sample_questions_normalised(sample: Conversation) -> None:
    by_raw = {q.raw_evidence: q for q in sample.questions}
    assert by_raw[("D2:03",)].evidence == ("D2:3",)
    assert by_raw[("D3:4; D3:6",)].evidence == ("D3:4", "D3:6")
    adversarial = [q for q in sample.questions if q.category == 5]
    assert len(adversarial) == 1 and adversarial[0].answer is not None
    ids = {t.dia_id for t in sample.turns}
    assert all(q.evidence and set(q.evidence) <= ids for q in sample.questions)
    assert {q.category for q in sample.questions} == set(CATEGORY_NAMES)


def test_sessions_counted_by_list_keys_in_numeric_order(tmp_path: Path) -> None:
    (conv,) = load_conversations(_write(tmp_path, [_mini_sample("m-1", ["D2:1"])]))
    # Only keys holding lists are sessions, in numeric (not key or lexical) order.
    assert [t.session for t in conv.turns] == [2, 2, 10]
    assert conv.turns[0].observed_at == datetime(2021, 1, 1, 0, 5, tzinfo=UTC)
    assert conv.turns[1].caption is None  # a blank caption is no caption
    assert conv.questions[0].answer == "7"


# --- loading errors and selection ---------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load_conversations(missing)


def test_unknown_ids_are_named_with_available(tmp_path: Path) -> None:
    path = _write(tmp_path, [_mini_sample("m-1", []), _mini_sample("m-2", [])])
    with pytest.raises(ValueError) as err:
        load_conversations(path, ["m-2", "ghost", "m-1"])
    message = str(err.value)
    assert "ghost" in message and "m-1" in message and "m-2" in message


def test_ids_select_and_order(tmp_path: Path) -> None:
    path = _write(tmp_path, [_mini_sample("m-1", []), _mini_sample("m-2", [])])
    assert [c.conversation_id for c in load_conversations(path, ["m-2", "m-1"])] == ["m-2", "m-1"]
    assert [c.conversation_id for c in load_conversations(path)] == ["m-1", "m-2"]
    assert [c.conversation_id for c in load_conversations(path, ["m-2"])] == ["m-2"]


def test_question_evidence_drops_ids_outside_conversation(tmp_path: Path) -> None:
    path = _write(tmp_path, [_mini_sample("m-1", ["D2:02", "D2:9", "D", "D:10:1"])])
    (conv,) = load_conversations(path)
    assert conv.questions[0].evidence == ("D2:2", "D10:1")
    assert conv.questions[0].raw_evidence == ("D2:02", "D2:9", "D", "D:10:1")


# --- evidence noise (SCHEMA.md) -----------------------------------------------------------------

VALID = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5", "D10:18", "D1:3"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D9:1 D4:4 D4:6"], ("D9:1", "D4:4", "D4:6")),
        (["D:11:26"], ("D11:26",)),
        (["D30:05"], ("D30:5",)),
        (["D"], ()),
        (["D10:19"], ()),  # past the end of the session
        (["D1:3", "D1:3", "D01:03"], ("D1:3",)),
        (["D4:6", "D4:4;D4:6"], ("D4:6", "D4:4")),
        ([], ()),
    ],
)
def test_normalise_evidence(raw: list[str], expected: tuple[str, ...]) -> None:
    assert normalise_evidence(raw, VALID) == expected


# --- dates --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("11:59 pm on 31 December, 2022", datetime(2022, 12, 31, 23, 59, tzinfo=UTC)),
        ("9:00 AM on 2 Feb, 2020", datetime(2020, 2, 2, 9, 0, tzinfo=UTC)),
    ],
)
def test_parse_session_datetime(text: str, expected: datetime) -> None:
    parsed = parse_session_datetime(text)
    assert parsed == expected
    assert parsed.tzinfo is not None and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "8 May, 2023",
        "13:00 pm on 8 May, 2023",
        "1:56 pm on 8 Maytember, 2023",
        "1:56 pm on 31 April, 2023",
    ],
)
def test_parse_session_datetime_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_session_datetime(text)


# --- recall arithmetic --------------------------------------------------------------------------


def test_turn_recall() -> None:
    retrieved = ["D1:1", "D2:2", "D3:3", "D4:4"]
    assert turn_recall(["D2:2"], retrieved, 1) == 0.0
    assert turn_recall(["D2:2"], retrieved, 2) == 1.0
    assert turn_recall(["D2:2", "D4:4"], retrieved, 3) == 0.5
    assert turn_recall(["D2:2", "D4:4", "D9:9"], retrieved, 10) == pytest.approx(2 / 3)
    assert turn_recall(["D2:2", "D2:2"], retrieved, 2) == 1.0  # gold duplicates count once
    with pytest.raises(ValueError):
        turn_recall([], retrieved, 5)
    with pytest.raises(ValueError):
        turn_recall(["D1:1"], retrieved, 0)


def test_session_of() -> None:
    assert session_of("D7:12") == 7
    assert session_of("D30:5") == 30
    for bad in ("D", "7:12", "D:7:12", "x"):
        with pytest.raises(ValueError):
            session_of(bad)


def test_session_recall() -> None:
    retrieved = ["D1:1", "D2:5", "D2:6", "D3:1"]
    assert session_recall(["D2:1"], retrieved, 1) == 0.0
    assert session_recall(["D2:1"], retrieved, 2) == 1.0  # another turn of the same session
    assert session_recall(["D2:1", "D2:9", "D5:1"], retrieved, 4) == 0.5  # sessions {2, 5}
    assert session_recall(["D1:9", "D3:9"], retrieved, 4) == 1.0
    with pytest.raises(ValueError):
        session_recall([], retrieved, 3)


# --- aggregation --------------------------------------------------------------------------------


def test_recall_table_means_per_category_and_all() -> None:
    table = RecallTable(ks=(1, 2))
    table.add(4, ["a"], ["a", "b"])  # k1: 1,   k2: 1
    table.add(4, ["b"], ["a", "b"])  # k1: 0,   k2: 1
    table.add(2, ["a", "b", "c"], ["a", "b"])  # k1: 1/3, k2: 2/3
    table.add(1, [], ["a"])  # skipped
    assert table.skipped == 1
    assert table.result() == {
        1: {"2": 0.3333, "4": 0.5, "all": 0.4444},
        2: {"2": 0.6667, "4": 1.0, "all": 0.8889},
    }
    assert table.counts() == {"2": 1, "4": 2, "all": 3}


def test_recall_table_all_is_question_mean_not_category_mean() -> None:
    table = RecallTable(ks=(1,))
    for _ in range(3):
        table.add(1, ["x"], ["x"])
    table.add(5, ["x"], ["y"])
    row = table.result()[1]
    assert row == {"1": 1.0, "5": 0.0, "all": 0.75}
    assert list(row) == ["1", "5", "all"]


def test_recall_table_session_metric_and_question(sample: Conversation) -> None:
    table = RecallTable(ks=(1,), metric=session_recall)
    question = next(q for q in sample.questions if q.raw_evidence == ("D2:03",))
    table.add_question(question, ["D2:8", "D1:1"])
    assert table.result() == {1: {"4": 1.0, "all": 1.0}}


def test_recall_table_empty_and_bad_ks() -> None:
    assert RecallTable(ks=(5, 10)).result() == {5: {}, 10: {}}
    assert RecallTable().counts() == {}
    with pytest.raises(ValueError):
        RecallTable(ks=(0,))
    with pytest.raises(ValueError):
        RecallTable(ks=())


def test_category_names() -> None:
    assert CATEGORY_NAMES == {
        4: "single-hop",
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        5: "adversarial",
    }


def test_turn_is_frozen(sample: Conversation) -> None:
    turn: Turn = sample.turns[0]
    with pytest.raises(AttributeError):
        turn.text = "changed"  # type: ignore[misc]


def test_turn_records_chain_each_session_and_keep_their_ids(sample: Conversation) -> None:
    from memwarden.evals.locomo import turn_records

    items = turn_records(sample)
    assert [i["memory_id"] for i in items] == [i["memory_id"] for i in turn_records(sample)]  # stable run to run
    assert len({i["memory_id"] for i in items}) == len(items) == len({i["command_id"] for i in items})
    for before, (item, turn) in zip([None, *sample.turns], zip(items, sample.turns, strict=True), strict=False):
        same_session = before is not None and before.session == turn.session
        previous = items[sample.turns.index(before)]["memory_id"] if same_session and before else None
        assert item["follows"] == previous
        assert item["source_ref"] == turn.dia_id and item["scope"] == f"conversation:{sample.conversation_id}"
    assert items[0]["follows"] is None and all(i["follows"] for i in items[1:2])
