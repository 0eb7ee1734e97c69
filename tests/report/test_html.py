"""The HTML report: self-contained, escaped, and rendered by a real headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from longscope.report.html import curve_png, render_html, render_markdown
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
# A model name is untrusted too: HTML, rich markup, a javascript: link, matplotlib mathtext.
MODEL = (
    "openai/test-model<img src=x onerror=\"document.title='pwned'\">[/][link](javascript:x)$\\x{$"
)


def _grid_run(run_dir: Path) -> None:
    """A stored LongCtx grid run whose model answers include hostile markup."""
    params = {
        "lengths": [1024, 2048],
        "depths": [0.1, 0.5, 0.9],
        "types": ["needle"],
        "language": "en",
        "seed": 0,
    }
    suite = create_suite("longctx", params)
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    with RunStore(run_dir) as store:
        store.put_run(
            "hostile1",
            "longctx",
            {
                "params": suite.params(),
                "model": MODEL,
                "model_info": {"context_length": 2048},
            },
        )
        store.put_samples("hostile1", samples)
        for index, sample in enumerate(samples):
            text = "0.003 arc-seconds" if index % 2 == 0 else HOSTILE
            route = {
                "decision": "map-reduce",
                "prompt_tokens": 2000,
                "budget": 900,
                "chunks": [{"part": 1, "context_tokens": 880, "status": "ok", "answer": text}],
                "reduce": "skipped: only part 1 answered",
                "calls": 1,
            }
            store.put_generation(
                "hostile1", sample.id, 0, Generation(text, "ok", reasoning=HOSTILE, route=route)
            )


@pytest.fixture
def report(tmp_path: Path) -> Path:
    _grid_run(tmp_path / "run")
    html = render_html([(tmp_path / "run", score_run(tmp_path / "run"))])
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_report_is_self_contained_and_escapes_model_text(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert "<script" not in html and "onerror=" not in html.replace("onerror=&#34;", "")
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in html
    # no network: every image is inline, no external reference at all
    assert re.findall(r'src="([^"]+)"', html) and all(
        src.startswith("data:image/png;base64,") for src in re.findall(r'src="([^"]+)"', html)
    )
    assert "http://" not in html and "https://" not in html
    assert "Needle score % (length x depth)" in html  # the heatmap's caption
    assert "map-reduce: 2000 prompt tokens, budget 900" in html  # the router's plan per answer
    assert "part 1 (880 tokens, ok): &lt;script&gt;" in html


def test_markdown_report(tmp_path: Path) -> None:
    _grid_run(tmp_path / "run")
    text = render_markdown([(tmp_path / "run", score_run(tmp_path / "run"))])
    assert "## longctx: openai/test-model" in text and "| 1024 |" in text
    # the model name is inert: no tag, no link, no image; shown escaped
    assert "<img" not in text and not re.search(r"(?<!\\)\]\(javascript:", text)
    assert (
        "openai/test-model&lt;img src=x onerror=&quot;document.title=&#x27;pwned&#x27;&quot;&gt;"
        in text
    )
    assert "\\[/\\]\\[link\\]\\(javascript:x)$\\\\x{$" in text


def test_hostile_dataset_strings_and_errors_are_inert(tmp_path: Path) -> None:
    """A sample whose id, task, question and gold are hostile, failed with a hostile error."""
    import dataclasses

    from longscope.text.safe_text import markdown
    from longscope.types import Sample

    _grid_run(tmp_path / "run")
    bad = Sample(
        id="id" + HOSTILE,
        task="task[/]$\\x{$" + HOSTILE,
        language="en",
        context="ctx \u202e" + HOSTILE,
        question="q" + HOSTILE,
        gold=("gold \x1b[2J" + HOSTILE,),
        length=1024,
        meta={"depth": 0.5},
    )
    with RunStore(tmp_path / "run") as store:
        store.put_samples("hostile1", [dataclasses.replace(bad)])
        store.put_generation(
            "hostile1", bad.id, 0, Generation("", "error", error="HTTP 500: \u202e" + HOSTILE)
        )
    result = score_run(tmp_path / "run", persist=False)
    assert result.to_dict()["completeness"]["reasons"] == {"500": 1}
    html = render_html([(tmp_path / "run", result)])  # the hostile task is a bar label too
    assert "<script" not in html and "<img src=x" not in html
    assert "\x1b" not in html and "\u202e" not in html
    assert "gold \\x1b[2J&lt;script&gt;" in html and "HTTP 500: \\u202e&lt;script&gt;" in html
    text = render_markdown([(tmp_path / "run", result)])
    assert "<script" not in text and "<img" not in text
    assert markdown("task[/]$\\x{$") == "task\\[/\\]$\\\\x{$" and markdown("task[/]$\\x{$") in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def test_report_renders_in_headless_chromium_with_plots_and_no_script(
    report: Path, tmp_path: Path
) -> None:
    if CHROMIUM is None:
        if os.environ.get("LONGSCOPE_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (LONGSCOPE_REQUIRE_BROWSER) but not installed")
        pytest.skip("chromium is not installed (make test installs it)")
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            report.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", report.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "<title>longscope report</title>" in dom  # no injected script changed it
    assert "pwned</title>" not in dom
    # neither the answers' nor the model name's markup became elements
    assert '<img src="x"' not in dom and "<script>document" not in dom
    assert "<h1>longscope report</h1>" in dom and "longctx: openai/test-model" in dom
    assert dom.count('src="data:image/png;base64,') >= 2
    # Every score on the page carries its SE: length AUC beside effective length, and each
    # heatmap cell (one sample each here: `±n/a`, never a bare number or a 0).
    from longscope.run.scoring import read_run

    metrics = read_run(tmp_path / "run").summary.view.metrics
    assert metrics is not None and metrics.auc_se is not None
    assert f"length AUC</th><td>{metrics.auc:.1f} ± {metrics.auc_se:.1f}" in dom
    assert '<td class="num">100 ±n/a</td>' in dom or '<td class="num">0 ±n/a</td>' in dom
    from PIL import Image

    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1600)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200, "the page rendered blank"
    # the heatmap's red-yellow-green cells are on screen
    assert any(r > 150 and g < 120 and b < 100 for _, (r, g, b) in colours)


def test_every_suite_renders(tmp_path: Path) -> None:
    from ..lbp_helper import score_predictions

    fixtures = Path(__file__).parents[1] / "fixtures"
    lbp = score_predictions(
        str(fixtures / "longbench_pro_mini.json"),
        fixtures / "longbench_pro_mini_predictions.jsonl",
        tmp_path / "lbp",
    )
    suite = create_suite("hundred", {"lengths": [2048, 4096, 6144, 8192], "samples": 1})
    samples = suite.build(
        BuildContext(QwenTokenizer(), "completion", GenerationConfig(max_tokens=64))
    )
    with RunStore(tmp_path / "h") as store:
        store.put_run("h1", "hundred", {"params": suite.params(), "model": "openai/x"})
        store.put_samples("h1", samples)
        for sample in samples:
            right = sample.meta["target_length"] <= 4096
            store.put_generation(
                "h1", sample.id, 0, Generation(sample.gold[0] if right else "0", "ok")
            )
    hundred = score_run(tmp_path / "h")
    # base = mean(100, 100, 0) at 2K/4K/6K; 8K scores 0: LongScore (0 - base) / base = -100%
    assert hundred.to_dict()["longscore"]["overall"]["lc"] == {"8192": -100.0}
    html = render_html([(tmp_path / "lbp", lbp), (tmp_path / "h", hundred)])
    assert "longbench-pro: predictions:" in html and "hundred: openai/x" in html
    assert "LongScore -100.0" in html


def _line_pixels(level: float) -> int:
    """Return how many pixels of a score-by-length line (matplotlib's first colour) one curve at
    `level` puts on the image."""
    import base64
    import io

    from PIL import Image

    png = curve_png({"model": {1024: level, 2048: level, 4096: level}}, 85.6, "t")
    image = Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1]))).convert("RGB")
    blue = (0x1F, 0x77, 0xB4)
    return sum(
        n
        for n, rgb in image.getcolors(maxcolors=1 << 20)
        if all(abs(a - b) <= 12 for a, b in zip(rgb, blue, strict=True))
    )


def test_a_line_at_100_is_drawn_whole_not_under_the_frame() -> None:
    # Before: the line at 100 lay under the top edge, its markers cut in half (~half the pixels).
    middle, top, bottom = _line_pixels(50.0), _line_pixels(100.0), _line_pixels(0.0)
    assert middle > 500
    assert top >= 0.9 * middle and bottom >= 0.9 * middle


def _bound_run(run_dir: Path, status: str) -> None:
    """A stored LongCtx run answered right everywhere; `status` "length": every answer hit its
    budget (a budget-bound run)."""
    params = {"lengths": [1024], "depths": [0.5], "types": ["needle"], "seed": 0}
    suite = create_suite("longctx", params)
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    with RunStore(run_dir) as store:
        store.put_run("bound1", "longctx", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("bound1", samples)
        for sample in samples:
            store.put_generation("bound1", sample.id, 0, Generation(sample.gold[0], status))


def test_a_budget_bound_run_shows_no_level(tmp_path: Path) -> None:
    from longscope.report.terminal import headline_text

    _bound_run(tmp_path / "free", "ok")
    _bound_run(tmp_path / "bound", "length")
    free, bound = score_run(tmp_path / "free"), score_run(tmp_path / "bound")
    level = free.summary.headline.level
    assert level and bound.summary.headline.level == level  # the suite gives both a level
    assert bound.summary.overall == free.summary.overall > 0
    free_html = render_html([(tmp_path / "free", free)])
    bound_html = render_html([(tmp_path / "bound", bound)])
    assert f"({level})" in free_html
    assert f"({level})" not in bound_html and "(no level: budget-bound at 1K)" in bound_html
    terminal = headline_text(bound.summary, bound.summary.view).plain
    assert level not in terminal and "no level: budget-bound at 1K" in terminal
    assert level in headline_text(free.summary, free.summary.view).plain


def test_compare_html_sets_runs_side_by_side(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from longscope.cli import app

    _grid_run(tmp_path / "a")
    _bound_run(tmp_path / "b", "ok")
    page = tmp_path / "compare.html"
    done = CliRunner().invoke(
        app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(page)]
    )
    assert done.exit_code == 0, done.output
    html = page.read_text(encoding="utf-8")
    assert "<title>longscope comparison</title>" in html and "2 run(s) side by side" in html
    # Both runs, their leaderboard rows and the difference of the second from the first.
    assert "<h2>Leaderboard</h2>" in html and "openai/m" in html
    assert "Difference from" in html
    a, b = score_run(tmp_path / "a"), score_run(tmp_path / "b")
    for result in (a, b):
        assert result.run_id[:12] in html
        assert f"{result.summary.overall:.1f}" in html
    # One plot of both runs' curves (the grid run has two lengths; the other one).
    assert html.count('src="data:image/png;base64,') == 1
    # The hostile model name is text, never markup.
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert "<script" not in html
