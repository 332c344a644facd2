"""Written benign sets: the loader names the line and field of what is wrong, and the alarms count a
quarantine on any text but a suspicion only where the gate acts on one (memwarden.evals.benign_sets)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from memwarden.commands.injection import Detection, Finding, InstructionKind
from memwarden.evals.benign_sets import BenignSetError, benign_set_alarms, load_benign_set, packaged_report_set


def _line(**over: object) -> str:
    raw = {"id": "c1", "text": "Je vais au marché demain.", "label": "benign", "kinds": [],
           "source_kind": "USER_STATEMENT", "language": "fr"} | over
    return json.dumps(raw, ensure_ascii=False)


def _write(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "set.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_a_good_set_loads_in_file_order(tmp_path: Path) -> None:
    p = _write(tmp_path, _line(), _line(id="c2", text="明日は雨です。", language="ja", source_kind="IMPORTED_RECORD"))
    items = load_benign_set(p)
    assert [(t.id, t.language, t.source_kind.value) for t in items] == [("c1", "fr", "USER_STATEMENT"),
                                                                        ("c2", "ja", "IMPORTED_RECORD")]


@pytest.mark.parametrize(("line", "names"), [
    ("{not json", "line 2: not valid JSON"),
    (_line(label="injected"), "field 'label'"),
    (_line(kinds=["DIRECTIVE"]), "field 'kinds'"),
    (_line(text=" "), "field 'text'"),
    (_line(language="fra"), "field 'language'"),
    (_line(language="FR"), "field 'language'"),
    (_line(source_kind="GOSSIP"), "field 'source_kind'"),
    (_line(id="c1", text="autre texte"), "field 'id' repeats line 1"),
    (_line(id="c9"), "field 'text' repeats line 1"),
    (json.dumps({"id": "c9", "text": "x"}), "the keys must be exactly"),
])
def test_a_bad_line_is_refused_naming_its_line_and_field(tmp_path: Path, line: str, names: str) -> None:
    with pytest.raises(BenignSetError, match=re.escape(names)) as err:
        load_benign_set(_write(tmp_path, _line(), line))
    assert "set.jsonl line 2" in str(err.value)


class _Words:
    """A detector for the test: flags texts holding 'FLAG', suspects texts holding 'SUSPECT'."""

    def detect(self, text: str) -> Detection:
        if "FLAG" in text:
            return Detection((Finding(InstructionKind.DIRECTIVE, (0, 4), "test"),))
        return Detection(suspect="SUSPECT" in text)


def test_alarms_count_every_quarantine_and_the_suspicions_the_gate_acts_on(tmp_path: Path) -> None:
    p = _write(tmp_path,
               _line(id="a", text="FLAG one"),
               _line(id="b", text="SUSPECT said by a person", language="ko"),  # a person's statement: no effect
               _line(id="c", text="SUSPECT tool output", source_kind="OBSERVED_TOOL_RESULT", language="ko"),
               _line(id="d", text="plain record", source_kind="IMPORTED_RECORD", language="ko"),
               _line(id="e", text="FLAG in a record", source_kind="IMPORTED_RECORD", language="ko"))
    got = benign_set_alarms(_Words(), load_benign_set(p))
    assert (got["items"], got["flagged"], got["rate"]) == (5, 2, 0.4)
    assert (got["suspicion_items"], got["suspected"], got["suspected_rate"]) == (3, 1, round(1 / 3, 5))
    assert got["flagged_ids"] == ["a", "e"] and got["suspected_ids"] == ["c"]
    assert got["by_language"] == {"fr": {"items": 1, "flagged": 1, "suspected": 0},
                                  "ko": {"items": 4, "flagged": 1, "suspected": 1}}


def test_the_packaged_report_set_is_the_frozen_file_and_not_english() -> None:
    p = packaged_report_set()
    fixed = re.search(r"sha256: `([0-9a-f]{64})`", p.with_suffix(".md").read_text(encoding="utf-8"))
    assert fixed is not None and fixed.group(1) == hashlib.sha256(p.read_bytes()).hexdigest()
    items = load_benign_set(p)
    assert len(items) == 400 and "en" not in {t.language for t in items}
    assert len({t.language for t in items}) == 20
