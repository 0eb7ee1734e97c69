"""Take the README's screenshot (docs/demo-report.png) from the current HTML report of stored runs.

    python docs/make_screenshot.py runs/demo/gemma3-270m runs/demo/smollm2-135m \
        -o docs/demo-report.png

Renders the report exactly as `longscope report RUN_DIR... --html` does, opens it in a headless
Chromium (Debian's `chromium`, which `make test` installs) and saves the top of the page. `make
screenshot` runs it on `make demo`'s runs; tests/docs/test_screenshot.py runs it on a stored run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
"""A browser that reaches nothing: the report is one self-contained file."""


def chromium() -> str | None:
    """Return the Chromium executable on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(run_dirs: list[Path], out: Path, width: int = 1200, height: int = 1800) -> Path:
    """Render the runs' HTML report and save a `width` x `height` screenshot of it at `out`."""
    from longscope import api

    browser = chromium()
    if browser is None:
        raise SystemExit("chromium is not installed: apt-get install chromium (make test does)")
    with tempfile.TemporaryDirectory(prefix="longscope-shot-") as tmp:
        page = Path(tmp) / "report.html"
        api.write_reports(api.report(run_dirs), html=page)
        shot = Path(tmp) / "shot.png"
        subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={Path(tmp) / 'profile'}",
                f"--screenshot={shot}",
                f"--window-size={width},{height}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, out)
    return out


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and take the screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=Path("docs/demo-report.png"))
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=1800)
    args = parser.parse_args(argv)
    made = screenshot(args.run_dirs, args.output, args.width, args.height)
    print(f"wrote {made}", file=sys.stderr)


if __name__ == "__main__":
    main()
