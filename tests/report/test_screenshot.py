"""docs/make_screenshot.py, the script that takes the README's screenshot, run on a stored run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_html import CHROMIUM, _grid_run

ROOT = Path(__file__).parents[2]


def test_the_readme_screenshot_script_shoots_the_current_report(tmp_path: Path) -> None:
    if CHROMIUM is None:
        if os.environ.get("LONGSCOPE_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (LONGSCOPE_REQUIRE_BROWSER) but not installed")
        pytest.skip("chromium is not installed (make test installs it)")
    from PIL import Image

    _grid_run(tmp_path / "run")
    out = tmp_path / "shot.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_screenshot.py"), str(tmp_path / "run"), "-o",
         str(out), "--width", "1000", "--height", "1400"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"wrote {out}"
    image = Image.open(out).convert("RGB")
    assert image.size == (1000, 1400)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200, "the page rendered blank"
    # The heatmap's red-yellow-green cells and the score curve's blue line are on screen.
    assert any(r > 150 and g < 120 and b < 100 for _, (r, g, b) in colours)
    assert any(
        abs(r - 0x1F) < 20 and abs(g - 0x77) < 20 and abs(b - 0xB4) < 20 for _, (r, g, b) in colours
    )
    # The README's copy is a screenshot of that size too (the script's default).
    assert Image.open(ROOT / "docs" / "demo-report.png").size == (1200, 1800)
