"""Where prompts may go (issue 21, defects 3 and 5, and the URL items of 9).

- no default host: an openai/ model needs --base-url or a non-empty OPENAI_BASE_URL;
- every endpoint must serve the model named (its /v1/models), checked before anything is sent;
- URLs are http(s) only, one endpoint however it is written, and a password in a URL is never
  printed nor stored.
Each command is the real CLI in a subprocess; the servers are the hostile test server (it lists
one model and answers fixed text) and count what was posted to them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helper import longscope
from .hostile_server import HostileServer, fails_never

GRID = ("-S", "lengths=1k", "-S", "depths=0.5", "-S", "types=needle", "-q")
CONTEXT = ("-M", "context_length=8192")


def _run(out: Path, model: str, *urls: str, extra: tuple[str, ...] = ()) -> object:
    flags = [part for url in urls for part in ("--base-url", url)]
    return longscope("run", "longctx", "--model", model, *CONTEXT, *GRID, "-o", str(out), *flags,
                     *extra)  # fmt: skip


def _one_line(made) -> str:
    assert made.returncode == 2, (made.returncode, made.stdout, made.stderr)
    lines = made.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), made.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("env", "urls", "expected"),
    [
        ({}, (), "no endpoint for the openai/ model"),
        ({"OPENAI_BASE_URL": ""}, (), "OPENAI_BASE_URL (is empty)"),
        ({}, ("",), "empty --base-url"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, ("  ",), "empty --base-url"),
        ({}, ("ftp://127.0.0.1/v1",), "bad --base-url 'ftp://127.0.0.1/v1'"),
        ({}, ("127.0.0.1:8000/v1",), "expected http:// or https:// and a host"),
        ({}, ("", ""), "empty --base-url"),
    ],
)
def test_no_host_is_ever_chosen_for_the_user(
    env: dict[str, str],
    urls: tuple[str, ...],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-sent")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    line = _one_line(_run(tmp_path / "run", "openai/gpt-4o", *urls))
    assert expected in line
    assert not (tmp_path / "run").exists()  # nothing stored


def test_endpoints_serving_another_model_are_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    with (
        HostileServer("m", fails=fails_never, answer="x") as named,
        HostileServer("other-model", fails=fails_never, answer="x") as other,
        HostileServer("m", fails=fails_never, answer="x") as named_too,
    ):
        # One endpoint lists the requested model, the other lists (and serves) another one.
        line = _one_line(_run(tmp_path / "a", "openai/m", named.base_url, other.base_url))
        assert "serves other-model" in line and "different models" in line
        # Neither lists the requested model: both serve one model each, and not the same one.
        line = _one_line(_run(tmp_path / "b", "openai/x", named.base_url, other.base_url))
        assert "different models" in line
        assert named.posts == other.posts == 0
        # Both list the requested model: the run goes ahead on both.
        made = _run(tmp_path / "c", "openai/m", named.base_url, named_too.base_url)
        assert made.returncode == 0, made.stderr
        assert named.posts + named_too.posts == 1


def test_one_server_written_two_ways_is_one_endpoint(tmp_path: Path) -> None:
    with HostileServer("m", fails=fails_never, answer="x") as server:
        upper = server.base_url.replace("http://", "HTTP://") + "/"
        line = _one_line(_run(tmp_path / "a", "openai/m", server.base_url, upper))
        assert "given twice" in line
        assert server.posts == 0


def test_a_password_in_an_endpoint_url_is_neither_printed_nor_stored(tmp_path: Path) -> None:
    secret = "Pa55w0rdXYZ"
    with (
        HostileServer("m", fails=fails_never, answer="x") as one,
        HostileServer("m", fails=fails_never, answer="x") as two,
    ):
        urls = [
            u.replace("http://", f"http://alice:{secret}@") for u in (one.base_url, two.base_url)
        ]
        made = _run(tmp_path / "run", "openai/m", *urls)
        assert made.returncode == 0, made.stderr
        assert "***@127.0.0.1" in made.stderr  # the per-endpoint lines name the hosts
    assert secret not in made.stdout + made.stderr
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    # A refusal that quotes the URL hides the password too.
    line = _one_line(_run(tmp_path / "b", "openai/m", f"ftp://alice:{secret}@h/v1"))
    assert secret not in line and "***@h" in line
