"""Each format written from a real run of the embedded model and read back by its own library."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from longscope.errors import UsageError
from longscope.export import export
from longscope.run.scoring import read_run

pytestmark = pytest.mark.model


def _stored(run_dir: Path) -> tuple[float, float]:
    """Return when the run was stored and when its last answer arrived (Unix time)."""
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    try:
        created = db.execute("SELECT created FROM runs").fetchone()[0]
        last = db.execute("SELECT MAX(created) FROM generations").fetchone()[0]
    finally:
        db.close()
    return created, last


def _scores(run_dir: Path) -> tuple[float, dict[int, float], dict[tuple[str, int], float]]:
    """Return the run's overall score, its score per length and each answer's score (0-1)."""
    result = read_run(run_dir)
    rows = {(r.sample["id"], r.repeat): r.score.fraction for r in result.rows if r.score}
    return result.summary.overall, dict(result.summary.by_length), rows


def test_inspect_log_reads_back_with_the_runs_samples_scores_and_header(
    real_run: Path, tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log

    (done,) = export([real_run], "inspect", tmp_path)
    assert done.state == "complete" and done.where.endswith(".eval")
    log = read_eval_log(done.where)
    overall, by_length, rows = _scores(real_run)
    assert log.status == "success" and log.error is None
    assert log.eval.task == "longctx" and log.eval.run_id == log.eval.task_id == done.run_id
    assert Path(done.where).name.endswith(f"_longctx_{done.run_id}.eval")
    assert log.eval.model == "llamacpp/gemma3-270m"
    assert log.eval.task_args["lengths"] == [1024, 2048]
    assert log.eval.model_generate_config.max_tokens == 16
    assert log.eval.model_generate_config.temperature == 0.0
    metrics = log.results.scores[0].metrics
    # Inspect's scale (0-1, as its `mean()` gives) and its `stderr` metric.
    error = read_run(real_run).summary.view.overall_error
    assert metrics["mean"].value == pytest.approx(overall / 100)
    assert metrics["stderr"].value == pytest.approx(error.se / 100)
    assert {k: m.value for k, m in metrics.items() if k.startswith("length.")} == {
        f"length.{n}": pytest.approx(v / 100) for n, v in by_length.items()
    }
    # Started when the run was stored, completed when its last answer arrived.
    started = datetime.fromisoformat(log.stats.started_at)
    completed = datetime.fromisoformat(log.stats.completed_at)
    assert started.timestamp() == pytest.approx(_stored(real_run)[0], abs=1)
    assert completed.timestamp() == pytest.approx(_stored(real_run)[1], abs=1)
    assert completed > started
    assert log.results.total_samples == log.results.completed_samples == len(rows)
    assert {(s.id, s.epoch - 1): s.scores["longscope"].value for s in log.samples} == rows
    for sample in log.samples:
        assert sample.input and sample.output.completion == sample.scores["longscope"].answer
        assert sample.metadata["status"] in ("ok", "length")
        assert len(sample.metadata["context_sha"]) == 32
    record = log.eval.metadata
    assert record["completeness"]["requested"] == record["completeness"]["scored"] == len(rows)
    rules = record["determinism"]
    assert rules["engine"].startswith("llama-cpp-python ")
    assert "AVX2 = 1" in rules["build"]
    assert rules["requests_in_flight"] == 1 and rules["batching"].startswith("none")
    assert rules["seed"] == 0 and rules["temperature"] == 0.0
    assert "KV cache" in rules["prefix_cache"]


def test_eee_record_and_samples_pass_the_every_eval_ever_validator(
    real_run: Path, tmp_path: Path
) -> None:
    from every_eval_ever.eval_types import EvaluationLog
    from every_eval_ever.instance_level_types import InstanceLevelEvaluationLog
    from every_eval_ever.validator import validate_file

    (done,) = export([real_run], "eee", tmp_path)
    path = Path(done.where)
    samples = path.with_name(f"{path.stem}_samples.jsonl")
    repo = path.relative_to(tmp_path).as_posix()
    # Filed under the model's own name, not longscope's provider spec.
    assert re.fullmatch(r"data/longscope_longctx/google/gemma-3-270m/[0-9a-f-]{36}\.json", repo)
    repos = frozenset({repo, samples.relative_to(tmp_path).as_posix()})

    def check(name: str) -> object:
        return validate_file(
            tmp_path / name,
            repo_path=name,
            available_files=repos,
            read_repo_file=lambda n: (tmp_path / n).read_text(encoding="utf-8"),
            run_semantic_checks=True,
        )

    for name in repos:
        report = check(name)
        assert report.valid and not report.errors and not report.warnings, report.errors
    log = EvaluationLog.model_validate_json(path.read_text())
    overall, by_length, rows = _scores(real_run)
    results = {r.evaluation_result_id: r for r in log.evaluation_results}
    assert results["overall"].score_details.score == pytest.approx(overall)
    for length, value in by_length.items():
        assert results[f"length.{length}"].score_details.score == pytest.approx(value)
    assert log.source_metadata.additional_details["state"] == "complete"
    assert log.source_metadata.additional_details["run.run_id"] == done.run_id
    assert log.model_info.id == "google/gemma-3-270m" and log.model_info.developer == "google"
    assert log.model_info.name == "llamacpp/gemma3-270m"
    assert log.model_info.inference_engine.name == "llama-cpp-python"
    assert re.fullmatch(r"\d+\.\d+\.\d+", log.model_info.inference_engine.version)
    assert log.model_info.additional_details["determinism.requests_in_flight"] == "1"
    assert not any("provisional" in r.evaluation_name for r in log.evaluation_results)
    answers = [
        InstanceLevelEvaluationLog.model_validate_json(x) for x in samples.read_text().splitlines()
    ]
    assert {(a.sample_id, 0): a.evaluation.score for a in answers} == rows
    assert log.detailed_evaluation_results.total_rows == len(answers)
    # The validator is not a rubber stamp: the same record without its model is refused.
    broken = json.loads(path.read_text())
    del broken["model_info"]
    path.write_text(json.dumps(broken))
    assert not check(repo).valid
    # Exporting again replaces the record (its name comes from the run id).
    (again,) = export([real_run], "eee", tmp_path)
    assert again.where == done.where and check(repo).valid


# The Hub's documented entry (hub-docs eval_results.yaml and docs/hub/eval-results.md).
ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
DATASET_KEYS = {"id", "task_id", "revision"}


def test_hf_eval_results_parse_to_the_documented_shape(real_run: Path, tmp_path: Path) -> None:
    from huggingface_hub import parse_eval_result_entries

    (done,) = export([real_run], "hf", tmp_path)
    path = Path(done.where)
    assert path.parent.name == ".eval_results" and path.suffix == ".yaml"
    assert path.parent.parent.name == "gemma-3-270m"  # the model repository's name
    entries = yaml.safe_load(path.read_text())
    assert isinstance(entries, list)
    # Read back by the Hub library's own parser, every entry names the data's revision: a
    # generated suite's is the checksum of the samples the run asked.
    parsed = parse_eval_result_entries(entries)
    assert len(parsed) == len(entries)
    revision = {e.dataset_revision for e in parsed}
    assert len(revision) == 1 and re.fullmatch(r"sha256:[0-9a-f]{64}", revision.pop())
    assert {e.dataset_id for e in parsed} == {"longscope/longctx"}
    overall, by_length, _ = _scores(real_run)
    values = {}
    for entry in entries:
        assert set(entry) <= ENTRY_KEYS and {"dataset", "value"} <= set(entry)
        assert set(entry["dataset"]) <= DATASET_KEYS
        assert isinstance(entry["dataset"]["id"], str) and "/" in entry["dataset"]["id"]
        assert isinstance(entry["dataset"]["task_id"], str)
        assert isinstance(entry["value"], float)
        assert isinstance(entry["date"], str)  # "Format this as a string"
        assert f"longscope run {done.run_id} (final)" in entry["notes"]
        values[entry["dataset"]["task_id"]] = entry["value"]
    assert values == {
        "overall": pytest.approx(overall),
        **{str(n): pytest.approx(v) for n, v in by_length.items()},
    }


def test_mlflow_client_reads_the_runs_metrics_params_and_artifacts(
    real_run: Path, tmp_path: Path
) -> None:
    from mlflow.tracking import MlflowClient

    (done,) = export([real_run], "mlflow", tmp_path / "store")
    uri, _, mlflow_id = done.where.partition(" run ")
    assert uri == f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').resolve()}"
    client = MlflowClient(tracking_uri=uri)
    got = client.get_run(mlflow_id)
    overall, by_length, rows = _scores(real_run)
    assert got.info.status == "FINISHED"
    assert got.data.metrics["score.overall"] == pytest.approx(overall)
    error = read_run(real_run).summary.view
    assert got.data.metrics["score.overall.se"] == pytest.approx(error.overall_error.se)
    for length, value in error.length_errors.items():
        if value.se is not None:
            assert got.data.metrics[f"score.length.{length}.se"] == pytest.approx(value.se)
    # The run's own times, not the export's.
    first, last = _stored(real_run)
    assert got.info.start_time == pytest.approx(first * 1000, abs=1000)
    assert got.info.end_time == pytest.approx(last * 1000, abs=1000)
    for length, value in by_length.items():
        assert got.data.metrics[f"score.length.{length}"] == pytest.approx(value)
    assert got.data.metrics["requests.scored"] == len(rows)
    assert got.data.params["determinism.engine"].startswith("llama-cpp-python ")
    assert got.data.params["determinism.seed"] == "0"
    assert got.data.params["suite.lengths"] == "[1024, 2048]"
    assert got.data.tags["longscope.run_id"] == done.run_id
    assert got.data.tags["longscope.state"] == "complete"
    assert {a.path for a in client.list_artifacts(mlflow_id)} == {
        "summary.json",
        "report.html",
        "longscope.json",
    }
    local = client.download_artifacts(mlflow_id, "summary.json", str(tmp_path))
    assert json.loads(Path(local).read_text())["run_id"] == done.run_id
    # One MLflow run per longscope run: exporting again replaces the earlier one.
    (again,) = export([real_run], "mlflow", tmp_path / "store")
    active = client.search_runs([got.info.experiment_id])
    assert [r.info.run_id for r in active] == [again.where.partition(" run ")[2]]


def test_a_provisional_run_is_exported_as_provisional_in_every_format(
    provisional_run: Path, tmp_path: Path
) -> None:
    from every_eval_ever.eval_types import EvaluationLog
    from inspect_ai.log import read_eval_log
    from mlflow.tracking import MlflowClient

    (inspect,) = export([provisional_run], "inspect", tmp_path / "inspect")
    assert inspect.state == "provisional" and "1 of 2 requests were not answered" in inspect.note
    log = read_eval_log(inspect.where)
    assert log.status == "error" and "not answered" in log.error.message
    assert log.results.completed_samples == 1 and log.results.total_samples == 2

    (eee,) = export([provisional_run], "eee", tmp_path / "eee")
    record = EvaluationLog.model_validate_json(Path(eee.where).read_text())
    assert record.source_metadata.additional_details["state"] == "provisional"
    assert record.source_metadata.additional_details["final"] == "false"
    assert all(r.evaluation_name.endswith("(provisional)") for r in record.evaluation_results)

    # The Hub shows values as final: refused, nothing written, unless asked for.
    with pytest.raises(UsageError, match=r"is provisional .*pass --provisional"):
        export([provisional_run], "hf", tmp_path / "hf")
    assert not list((tmp_path / "hf").rglob("*.yaml"))
    (hf,) = export([provisional_run], "hf", tmp_path / "hf", provisional=True)
    for entry in yaml.safe_load(Path(hf.where).read_text()):
        assert f"longscope run {hf.run_id} (PROVISIONAL, not final" in entry["notes"]

    (ml,) = export([provisional_run], "mlflow", tmp_path / "mlflow")
    uri, _, mlflow_id = ml.where.partition(" run ")
    got = MlflowClient(tracking_uri=uri).get_run(mlflow_id)
    assert got.info.status == "FAILED" and got.data.tags["longscope.state"] == "provisional"
    assert got.data.metrics["requests.missing"] == 1
