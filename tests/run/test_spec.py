"""RunSpec: one checked value for run and plan, the command line's options by name; and the typed
results of the library's commands on a real stored run (scripted backend, real SQLite)."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from longscope import api
from longscope.cli_options import run_options, spec_options
from longscope.errors import UsageError
from longscope.results import Leaderboard, LongScores, Profile, Report
from longscope.run.plan import Plan
from longscope.run.spec import RunSpec

from ..cli_helper import longscope

NEEDLE = ("longctx", "scripted/x")
SMALL = {"suite_options": ["types=needle", "depths=0.5"], "lengths": "1k,2k"}
# The scripted model answers with the needle's value: every sample scores 100.
ANSWERS = {"pattern": r"(\d\.\d+ arc-seconds)", "tokenizer": "qwen2.5"}


def test_the_command_line_options_are_the_specs_keywords() -> None:
    """Each option of `run` (and `plan`) is a keyword of RunSpec.of by the same name and default,
    so the command line and the library take the same values."""
    keywords = inspect.signature(RunSpec.of).parameters
    declared = {
        **inspect.signature(spec_options).parameters,
        **inspect.signature(run_options).parameters,
    }
    assert set(declared) == set(keywords) - {"suite_params"}
    # The one deliberate difference: the command shows a progress bar, the library does not.
    assert (declared["quiet"].default, keywords["quiet"].default) == (False, True)
    for name, param in declared.items():
        if param.default is not inspect.Parameter.empty and name != "quiet":
            default = keywords[name].default
            assert param.default == default or (param.default is None and default == ()), name


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"concurrency": 0}, "bad --concurrency 0: expected a whole number of at least 1"),
        ({"concurrency": 5000}, "bad --concurrency 5000: at most 4,096"),
        (
            {"request_timeout": 0.0},
            "bad --request-timeout 0.0: expected a number of at least 0.001",
        ),
        ({"limit": 0}, "bad --limit 0: expected a whole number of at least 1"),
        ({"repeats": 1001}, "bad --repeats 1001: at most 1,000"),
        ({"seed": -1}, "bad --seed -1: expected a whole number of at least 0"),
        ({"temperature": 2.5}, "bad --temperature 2.5: expected a number from 0 to 2"),
        ({"max_tokens": 0}, "bad --max-tokens 0: expected a whole number of at least 1"),
        ({"prefill_rate": 0.0}, "bad --prefill-rate 0.0: expected a number of at least 0.001"),
        ({"price_in": -1.0}, "bad --price-in -1.0: expected a number from 0 to 1e+06"),
        ({"max_tokens_in_flight": 0}, "bad --max-tokens-in-flight 0: expected a whole number"),
        ({"judge_model": "openai/j\x1b"}, "bad --judge-model 'openai/j\\\\x1b': contains control"),
        ({"model_options": {"ram_gib": float("nan")}}, "bad -M ram_gib=nan: expected a finite"),
        ({"model_options": ["context_length"]}, "malformed model option 'context_length'"),
    ],
)
def test_a_bad_value_is_refused_when_the_spec_is_made(given: dict, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        RunSpec.of(*NEEDLE, **given)
    assert str(caught.value).startswith(message), str(caught.value)


def test_an_output_that_is_a_file_is_refused_and_kept(tmp_path: Path) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    with pytest.raises(UsageError, match=r"--output .* exists and is not a directory"):
        RunSpec.of(*NEEDLE, output=taken)
    assert taken.read_text() == "mine"


def test_a_spec_cannot_change_once_made() -> None:
    spec = RunSpec.of(*NEEDLE, model_options=["context_length=8192"], limit=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.generation.limit = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.model_options["context_length"] = 1  # type: ignore[index]
    assert spec.model_options == {"context_length": 8192}
    # `replace` checks again: a spec can only be made valid.
    with pytest.raises(UsageError, match="--limit"):
        dataclasses.replace(spec, generation=dataclasses.replace(spec.generation, limit=0))


def test_api_plan_is_what_the_command_prints() -> None:
    spec = RunSpec.of(*NEEDLE, model_options=ANSWERS, **SMALL)
    made = api.plan(spec)
    assert isinstance(made, Plan) and made.requests == 2
    printed = longscope("plan", "longctx", "--model", "scripted/x", "-M", "tokenizer=qwen2.5",
                        "-M", f"pattern={ANSWERS['pattern']}", "-S", "types=needle",
                        "-S", "depths=0.5", "--lengths", "1k,2k", "--json")  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == json.loads(json.dumps(made.as_dict()))


def test_every_command_on_a_stored_run_returns_its_typed_result(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = api.evaluate(RunSpec.of(*NEEDLE, model_options=ANSWERS, output=run_dir, **SMALL))
    assert result.sent == 2 and result.scores is not None
    assert result.scores.summary.overall == 100.0

    reported = api.report([run_dir])
    assert isinstance(reported, Report) and reported.incomplete_lines() == []
    assert [r.scored.run_id for r in reported.runs] == [result.run_id]
    assert reported.summaries() == json.loads((run_dir / "summary.json").read_text())

    board = api.compare([run_dir, run_dir])
    assert isinstance(board, Leaderboard) and board.provisional == 0 and board.sources == []
    assert [row["run_id"] for row in board.rows] == [result.run_id] * 2
    assert board.rows[0]["overall"] == 100.0

    scores = api.longscore([run_dir], base="1k", floor=5.0)
    assert isinstance(scores, LongScores) and scores.incomplete_lines() == []
    assert scores.rows() == [(run_dir, scores.runs[0].summary, (1024,), 5.0)]

    made = api.profile([run_dir], tmp_path / "profile.json")
    assert isinstance(made, Profile) and not made.provisional
    assert json.loads((tmp_path / "profile.json").read_text()) == made.data
    assert made.describe().endswith(f"-> {tmp_path / 'profile.json'}")
    assert made.effective_context == made.data["effective_context"]
