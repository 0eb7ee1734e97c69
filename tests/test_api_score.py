"""api.score: a stored run re-scored without a model gives the run's own numbers; what it refuses
(a path that is no run, an unknown suite, an option that would change what the model was asked)
is one line naming it. Real SQLite store, the scripted backend; no model, fast for mutmut."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope import api
from longscope.errors import UsageError

from .api_helper import longctx_spec


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, api.RunResult]:
    run_dir = tmp_path_factory.mktemp("score") / "run"
    made = api.evaluate(longctx_spec(run_dir))
    assert made.sent == 2
    return run_dir, made


def test_a_stored_run_rescored_gives_its_own_numbers(stored: tuple[Path, api.RunResult]) -> None:
    run_dir, made = stored
    for again in (api.score(run_dir), api.score(str(run_dir), made.run_id)):
        assert (again.run_id, again.suite, again.run_dir) == (made.run_id, "longctx", run_dir)
        assert again.summary.overall == 100.0
        assert len(again.rows) == 2 and all(
            row.score and row.score.fraction == 1.0 for row in again.rows
        )
        assert again.completeness == made.scores.completeness  # type: ignore[union-attr]


def test_an_option_that_changes_what_was_asked_is_refused(
    stored: tuple[Path, api.RunResult],
) -> None:
    run_dir, _ = stored
    with pytest.raises(UsageError) as caught:
        api.score(run_dir, options=["types=needle"])
    assert str(caught.value) == (
        "-S types changes what the model is asked: run again with it; re-scoring takes only none"
    )
    with pytest.raises(UsageError, match=r"^unknown longctx option 'nope': longctx takes "):
        api.score(run_dir, options=["nope=1"])


@pytest.mark.parametrize("what", ["missing", "file"])
def test_a_path_that_is_no_run_is_refused_with_what_to_do(tmp_path: Path, what: str) -> None:
    target = tmp_path / what
    if what == "file":
        target.write_text("kept")
    with pytest.raises(UsageError) as caught:
        api.score(target)
    assert str(caught.value) == (
        f"{str(target)!r} is not a run directory; to score predictions made elsewhere give a "
        "suite name and --predictions FILE"
    )
    assert not target.exists() or target.read_text() == "kept"


def test_predictions_for_an_unknown_suite_are_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        api.score("nosuch", predictions=tmp_path / "p.jsonl", output=tmp_path / "out")
    assert str(caught.value).startswith("unknown suite 'nosuch': available are ")
    assert "longctx" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_routes_says_what_the_router_did_in_a_run(tmp_path: Path) -> None:
    made = api.evaluate(
        longctx_spec(tmp_path / "run", router_length="1536", router_strategy="truncate")
    )
    # 1536 less the output budget and the template: the 1K prompt passes, the 2K one is cut.
    assert api.routes(made) == (
        "router (prompt budget 1336 tokens): pass 1, truncate 1; 2 model calls for 2 requests"
    )


def test_in_a_directory_of_two_runs_the_run_id_picks_the_one_rescored(tmp_path: Path) -> None:
    def run(max_tokens: int) -> api.RunResult:
        return api.evaluate(longctx_spec(tmp_path / "run", lengths="1k", max_tokens=max_tokens))

    first, second = run(40), run(30)
    assert first.run_id != second.run_id
    for made in (first, second):
        again = api.score(tmp_path / "run", made.run_id)
        assert again.run_id == made.run_id
        assert again.header["config"]["max_tokens"] == made.scores.header["config"]["max_tokens"]  # type: ignore[union-attr]
    # Without a run id: the latest run, as the store reads it.
    assert api.score(tmp_path / "run").run_id == second.run_id
