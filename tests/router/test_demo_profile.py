"""docs/gemma3-270m-profile.json (the router example's profile) is the demo's, and routes tier 2.

`make profile` regenerates it from the demo run. The cheap tests check its run id against the
identity the demo's Gemma command has now (`longscope plan`: no model call), that its relative
budget is below tier 2, so the documented example routes, and that the file has every field
`longscope profile` writes now (from a hand-built summary). The slow one runs the demo's Gemma
command afresh (8 prompts, 80K tokens: about 6 minutes of both cores on the 2-core VM) and
compares the scores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.analysis.profile import model_profile
from longscope.summary import Summary, View

ROOT = Path(__file__).parents[2]
PROFILE = ROOT / "docs" / "gemma3-270m-profile.json"
DEMO = ["longctx", "--model", "llamacpp/gemma3-270m", "-S", "tiers=1,2"]
REGENERATE = "stale: run `make profile` (after `rm -rf runs/demo`) and commit the profile"


def _longscope(*args: str, cwd: Path, timeout: float = 120) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "longscope"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr[-2000:]
    return done.stdout


def _committed() -> dict:
    return json.loads(PROFILE.read_text(encoding="utf-8"))


@pytest.mark.model
def test_profile_names_the_demo_run_and_routes_tier_2(tmp_path: Path) -> None:
    planned = json.loads(_longscope("plan", *DEMO, "--json", cwd=tmp_path))
    measured = _committed()["measured"][0]
    assert measured["run_id"] == planned["run_id"], REGENERATE
    # The router's relative budget must be below tier 2's 16K prompts, or the example passes them.
    assert measured["relative_effective_length"] < 16384
    assert set(measured["scores"]) == {"4096", "16384"}


def test_profile_has_every_field_the_profile_command_writes_now() -> None:
    # A field added to profiles (as `effective_label` was) leaves the committed file stale; only
    # the slow test below would see it. Here a hand-built summary's profile gives the fields.
    view = View(name="", overall=50.0, by_length={4096: 60.0, 16384: 40.0}, curves={})
    summary = Summary(
        suite="longctx", title="LongCtx", views=(view,), run_id="r", model="m", claimed=32768,
        completeness={"requested": 2, "scored": 2, "skipped": 0, "failed": 0, "missing": 0},
    )  # fmt: skip
    written = model_profile([summary])
    committed = _committed()
    assert set(committed) == set(written), REGENERATE
    # `intervals` comes with a scored run's bootstrap and `adaptive` with an adaptive run's
    # decision, which a hand-built summary has not; every other key both ways
    optional = {"intervals", "adaptive"}
    assert set(committed["measured"][0]) - optional == set(written["measured"][0]), REGENERATE
    assert committed["profile_version"] == written["profile_version"], REGENERATE


@pytest.mark.slow
@pytest.mark.model
def test_profile_scores_match_a_fresh_demo_run(tmp_path: Path) -> None:
    # Slow: the demo's whole Gemma run (see the module docstring); `make test-slow` runs it.
    _longscope("run", *DEMO, "-q", "-o", "runs/demo/gemma3-270m", cwd=tmp_path, timeout=1800)
    fresh = tmp_path / "profile.json"
    _longscope(
        "profile", "runs/demo/gemma3-270m", "--relative", "0.95", "-o", str(fresh), cwd=tmp_path
    )
    ours = json.loads(fresh.read_text(encoding="utf-8"))
    committed = _committed()
    ours.pop("date"), committed.pop("date")
    assert ours == committed, REGENERATE
