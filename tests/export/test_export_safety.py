"""What an export must never do: write where it was not asked, print a password, publish this
machine's paths, end in a traceback or hang on a dead server (issue 39, item 9)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longscope.export import export

from ..conftest import free_port

pytestmark = pytest.mark.model

SECRET_DIR = "/home/someone/private/longbench.jsonl"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", "export", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def _copy(run_dir: Path, to: Path, **header: object) -> Path:
    """A copy of a stored run with header fields replaced (as another machine stored them)."""
    to.mkdir(parents=True)
    shutil.copy(run_dir / "longscope.sqlite", to / "longscope.sqlite")
    db = sqlite3.connect(to / "longscope.sqlite")
    with db:
        (text,) = db.execute("SELECT header FROM runs").fetchone()
        db.execute("UPDATE runs SET header = ?", (json.dumps({**json.loads(text), **header}),))
    db.close()
    return to


def test_mlflow_databricks_is_a_tracking_uri_never_a_local_folder(
    real_run: Path, tmp_path: Path
) -> None:
    done = _cli(str(real_run), "--format", "mlflow", "-o", "databricks", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "MLflow refused databricks:" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no ./databricks store, no ./mlruns


def test_a_dead_tracking_server_is_one_line_within_seconds_and_hides_the_password(
    real_run: Path, tmp_path: Path
) -> None:
    port = free_port()  # nothing listens there
    start = time.monotonic()
    done = _cli(
        str(real_run),
        "--format",
        "mlflow",
        "-o",
        f"http://ann:s3cret@127.0.0.1:{port}",
        cwd=tmp_path,
    )
    assert time.monotonic() - start < 30  # MLflow's own retries took 251 s
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"no MLflow tracking server answers at http://***@127.0.0.1:{port}" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout


def test_sqlite_tracking_uri_keeps_artifacts_beside_its_database(
    real_run: Path, tmp_path: Path
) -> None:
    from mlflow.tracking import MlflowClient

    store, here = tmp_path / "store", tmp_path / "here"
    store.mkdir()
    here.mkdir()
    uri = f"sqlite:///{store / 'x.db'}"
    done = _cli(str(real_run), "--format", "mlflow", "-o", uri, cwd=here)
    assert done.returncode == 0, done.stderr
    assert list(here.iterdir()) == []  # no ./mlruns where the command ran
    mlflow_id = done.stdout.strip().rpartition(" run ")[2]
    artifacts = MlflowClient(tracking_uri=uri).get_run(mlflow_id).info.artifact_uri
    assert artifacts.startswith((store / "artifacts").as_uri())
    assert {p.name for p in (store / "artifacts").rglob("*") if p.is_file()} >= {"summary.json"}


def test_records_carry_no_local_path(real_run: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    (original,) = __import__("longscope.export.record", fromlist=["x"]).load_runs([real_run])
    params = {**original.header["params"], "data": SECRET_DIR}
    model_info = original.header["model_info"]
    assert model_info["details"]["path"].startswith("/")  # the GGUF's absolute path is stored
    run_dir = _copy(real_run, tmp_path / "abs" / "run", params=params)
    (eee,) = export([run_dir.resolve()], "eee", tmp_path / "eee")
    (inspect,) = export([run_dir.resolve()], "inspect", tmp_path / "inspect")
    texts = {
        "eee": Path(eee.where).read_text(),
        "samples": next((tmp_path / "eee").rglob("*.jsonl")).read_text(),
        "inspect": read_eval_log(inspect.where).model_dump_json(),
    }
    for name, text in texts.items():
        for local in (SECRET_DIR, str(tmp_path), model_info["details"]["path"]):
            assert local not in text, (name, local)
    record = json.loads(texts["eee"])
    details = record["source_metadata"]["additional_details"]
    assert details["run.run_dir"] == "run"
    assert details["run.params.data"] == "<local>/longbench.jsonl"
    log = read_eval_log(inspect.where)
    assert log.eval.task_args["data"] == "<local>/longbench.jsonl"
    assert log.eval.model_args["model_info"]["details"]["path"].startswith("<local>/")


def test_a_model_named_dotdot_stays_inside_the_output_folder(
    real_run: Path, tmp_path: Path
) -> None:
    info = {"model_id": "openai:..", "tokenizer": "qwen2.5", "details": {}}
    run_dir = _copy(real_run, tmp_path / "run", model="openai/..", model_info=info)
    out = tmp_path / "deep" / "out"
    done = _cli(str(run_dir), "--format", "hf", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (written,) = [p for p in tmp_path.rglob("*.yaml")]
    assert written.resolve().is_relative_to(out.resolve())
    assert written.parent.parent.name == "model"


def test_inspect_into_a_file_or_an_unwritable_folder_is_one_line(
    real_run: Path, tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("mine\n")
    done = _cli(str(real_run), "--format", "inspect", "-o", "taken", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "-o taken is a file, not a folder" in done.stderr
    assert (tmp_path / "taken").read_text() == "mine\n"
    # /sys refuses new files even to root (where chmod would not).
    done = _cli(str(real_run), "--format", "inspect", "-o", "/sys", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "cannot write the inspect export to /sys" in done.stderr


def test_a_folder_holding_two_runs_exports_the_one_asked_for(
    real_run: Path, tmp_path: Path
) -> None:
    run_dir = _copy(real_run, tmp_path / "run")
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    (first,) = db.execute("SELECT run_id FROM runs").fetchone()
    second = "f" * len(first)
    with db:  # the same answers stored again as a later run of the folder
        for table in ("runs", "samples", "generations", "scores", "budgets", "routes"):
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            picked = ", ".join("?" if c == "run_id" else c for c in columns)
            db.execute(
                f"INSERT INTO {table} SELECT {picked} FROM {table} WHERE run_id = ?",
                (second, first),
            )
        db.execute("UPDATE runs SET created = created + 60 WHERE run_id = ?", (second,))
    db.close()
    done = _cli(str(run_dir), "--format", "hf", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"run {second[:12]} ")
    assert (
        f"holds 2 runs: exported the latest, {second[:12]} (choose another with --run-id)"
        in done.stderr
    )
    done = _cli(str(run_dir), "--format", "hf", "-o", "out", "--run-id", first[:8], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"run {first[:12]} "), done.stderr
    assert done.stderr == ""
    assert (
        tmp_path / "out" / "gemma-3-270m" / ".eval_results" / f"longctx-{first[:12]}.yaml"
    ).is_file()
    done = _cli(str(run_dir), "--format", "hf", "--run-id", "0123abc", cwd=tmp_path)
    assert done.returncode == 2 and "no run '0123abc'" in done.stderr
