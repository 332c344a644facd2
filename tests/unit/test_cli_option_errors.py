"""CLI errors name the option a user typed, not the client's field (newcomer trial, twenty-fifth session:
``forget --to`` was called ``selector.observed_to``, ``forget --memory nope`` ``selector.memory_ids.0``, ``prune
--grace-days -5`` ``grace_s`` and ``prune --store-kind FOO`` listed no store kind). No broker, no database: each
is refused before anything is read or published."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memwarden.cli import app
from memwarden.cli_forget import _FORGET_OPTIONS, option_error
from memwarden.errors import ValidationError


@pytest.mark.parametrize(("field", "option"), [
    ("selector.observed_to", "--to"),
    ("selector.observed_from", "--from"),
    ("selector.memory_ids.0", "--memory"),
    ("selector.scopes.2", "--scope"),
    ("query", "--query"),
    ("purposes.0", "--purpose"),
])
def test_a_client_field_becomes_the_option_that_set_it(field: str, option: str) -> None:
    renamed = option_error(ValidationError(field, "bad"), _FORGET_OPTIONS)
    assert isinstance(renamed, ValidationError) and (renamed.field, renamed.reason) == (option, "bad")


def test_the_reason_names_options_too() -> None:
    renamed = option_error(ValidationError("selector.observed_to", "Value error, must be later than observed_from"),
                           _FORGET_OPTIONS)
    assert str(renamed) == "--to: must be later than --from"


def test_a_field_no_option_sets_and_other_errors_are_left_as_they_are() -> None:
    other = ValidationError("envelope.principal", "unknown")
    assert option_error(other, _FORGET_OPTIONS) is other
    boom = RuntimeError("x")
    assert option_error(boom, _FORGET_OPTIONS) is boom


@pytest.mark.parametrize(("args", "said"), [
    (["--grace-days", "-5"], "--grace-days: must be a number of days >= 0"),
    (["--store-kind", "FOO"], "--store-kind: 'FOO' is not a store kind: one of PROFILE, EXPERIENCE, PROCEDURE, EVENT"),
])
def test_prune_names_its_own_options(args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["prune", *args])
    assert result.exit_code == 1 and said in " ".join(result.output.split()), result.output


def test_a_cut_is_shown_as_replay_takes_it() -> None:
    from memwarden.stores.namespaces import cut_positions

    assert cut_positions('{"0": 5, "1": 1, "10": 0}') == "commands:0:4,commands:1:0,commands:10:-1"
    assert cut_positions({2: 7, 0: 3}) == "commands:0:2,commands:2:6"  # what replay --until reads back as the cut


def test_a_cut_cell_says_so() -> None:
    from memwarden.cli_audit import CELL_CHARS
    from memwarden.cli_ledger import cut_text

    assert cut_text("short", CELL_CHARS) == "short"
    long = "x" * (CELL_CHARS + 40)
    assert cut_text(long, CELL_CHARS) == "x" * CELL_CHARS + "… (+40 chars; --json shows all)"
