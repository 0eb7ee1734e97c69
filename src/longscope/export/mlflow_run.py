"""MLflow runs, one per longscope run, logged with MLflow's own client.

Params: the run's identity and suite parameters and its determinism record (flattened,
`suite.lengths`, `determinism.engine`...). Metrics: the overall score, the score per length and
every breakdown cell (0-100), and the completeness counts (`requests.scored`...). Artifacts:
summary.json, the self-contained HTML report and longscope.json (identity, completeness,
determinism). Tags: `longscope.run_id`, `longscope.state`; a run that is not complete ends as
FAILED with the incomplete line as its note, never as FINISHED. Exporting a run again replaces its
earlier MLflow run (deleted the MLflow way: restorable with `mlflow runs restore`).

The target is a tracking URI (`http://HOST:5000`, `sqlite:///PATH.db`, `databricks`) or a
folder, which becomes a local store: `sqlite:///FOLDER/mlflow.db` with artifacts in
FOLDER/artifacts (MLflow 3 keeps its plain-file store in maintenance mode and refuses it unless
MLFLOW_ALLOW_FILE_STORE=true is set, so a folder gets its SQLite store).
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path

from longscope.errors import UsageError
from longscope.export.record import (
    ExportRun,
    MissingDependency,
    flat_strings,
    metric_points,
    require,
)
from longscope.files import write_atomic
from longscope.urls import shown

EXPERIMENT = "longscope"
RUN_ID_TAG = "longscope.run_id"
BARE_URIS = ("databricks", "databricks-uc", "uc")
"""Tracking URIs MLflow takes without a `scheme:` (never folder names here)."""
PROBE_TIMEOUT_S = 10.0
"""How long a tracking server has to answer at all before it is reported unreachable."""


def tracking_uri(target: str) -> tuple[str, str | None]:
    """Return (tracking URI, artifact location for a new experiment) for a URI or a folder.

    A SQLite store keeps its artifacts beside its database (`DB_FOLDER/artifacts`), never in
    `./mlruns` of whatever folder the command runs in.
    """
    if target in BARE_URIS:
        return target, None
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) and not re.match(r"^[A-Za-z]:\\", target):
        if target.startswith("sqlite:///"):
            database = Path(target.removeprefix("sqlite:///")).expanduser()
            return target, (database.resolve().parent / "artifacts").as_uri()
        return target, None
    folder = Path(target).resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write {folder}: {exc.strerror or exc}") from exc
    return f"sqlite:///{folder / 'mlflow.db'}", (folder / "artifacts").as_uri()


def write(run: ExportRun, target: str) -> str:
    """Log `run` as one MLflow run at `target`; return `URI run MLFLOW_RUN_ID` (the URI without
    any password)."""
    require("mlflow", "mlflow", "mlflow-skinny")
    from mlflow.exceptions import MlflowException

    # MLflow narrates migrations and credential fallbacks; the command prints its own one line.
    logging.getLogger("mlflow").setLevel(logging.ERROR)
    uri, artifacts = tracking_uri(target)
    _probe(uri)
    try:
        run_id = _log(run, uri, artifacts)
    except ImportError as exc:  # a SQL store without SQLAlchemy / Alembic
        raise MissingDependency(
            f"--format mlflow needs {exc.name or 'a package'} for {shown(uri)}: "
            "pip install 'longscope[mlflow]'"
        ) from None
    except MlflowException as exc:
        first = " ".join(str(exc.message).split())[:300]
        raise UsageError(f"MLflow refused {shown(uri)}: {_hidden(first, uri)}") from None
    return f"{shown(uri)} run {run_id}"


def _probe(uri: str) -> None:
    """Refuse in one line, within seconds, a tracking server that does not answer at all.

    MLflow's client retries a refused connection for about four minutes before it says so;
    any HTTP answer (even 401 or 404) means a server is there, and MLflow takes it from here.
    """
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = f":{parts.port}" if parts.port else ""
    health = f"{parts.scheme}://{parts.hostname}{port}{parts.path.rstrip('/')}/health"
    try:
        with urllib.request.urlopen(health, timeout=PROBE_TIMEOUT_S):
            pass
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        if "CERTIFICATE" in str(reason).upper() or "SSL" in str(reason).upper():
            return  # a TLS question is MLflow's (MLFLOW_TRACKING_INSECURE_TLS...)
        raise UsageError(
            f"no MLflow tracking server answers at {shown(uri)} ({reason}): start it "
            "(mlflow server) or fix -o"
        ) from None


def _hidden(text: str, uri: str) -> str:
    """Return `text` with the URI's password (if any) replaced by ***."""
    from urllib.parse import urlsplit

    password = urlsplit(uri).password
    return text.replace(password, "***") if password else text


def _log(run: ExportRun, uri: str, artifacts: str | None) -> str:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    experiment_id = (
        experiment.experiment_id
        if experiment is not None
        else client.create_experiment(EXPERIMENT, artifact_location=artifacts)
    )
    for earlier in client.search_runs(
        [experiment_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{run.run_id}'"
    ):
        client.delete_run(earlier.info.run_id)
    started = int(run.created * 1000)
    ended = int(max(run.finished or run.created, run.created) * 1000)
    logged = client.create_run(
        experiment_id,
        start_time=started,
        run_name=f"{run.suite} {run.model} {run.run_id[:12]}",
        tags=_tags(run),
    )
    mlflow_id = logged.info.run_id
    params = [Param(k, v) for k, v in _params(run).items()]
    metrics = [Metric(k, v, ended, 0) for k, v in _metrics(run).items()]
    for chunk in range(0, max(len(params), len(metrics)), 100):  # MLflow's batch limits
        client.log_batch(
            mlflow_id, metrics=metrics[chunk : chunk + 100], params=params[chunk : chunk + 100]
        )
    with tempfile.TemporaryDirectory(prefix="longscope-mlflow-") as tmp:
        for name, text in _artifacts(run).items():
            write_atomic(Path(tmp) / name, text)
            client.log_artifact(mlflow_id, str(Path(tmp) / name))
    client.set_terminated(mlflow_id, status="FINISHED" if run.final else "FAILED", end_time=ended)
    return mlflow_id


def _tags(run: ExportRun) -> dict[str, str]:
    return {
        RUN_ID_TAG: run.run_id,
        "longscope.suite": run.suite,
        "longscope.model": run.model,
        "longscope.state": run.state,
        "longscope.final": str(run.final).lower(),
        "mlflow.note.content": run.describe(),
    }


def _params(run: ExportRun) -> dict[str, str]:
    identity = run.identity()
    values = {
        **flat_strings(identity["params"], "suite"),
        "suite.name": run.suite,
        "suite.version": str(identity["suite_version"]),
        "model": run.model,
        "model_id": str(identity["model_id"]),
        **flat_strings(run.determinism(), "determinism"),
    }
    # MLflow keeps param values up to 6000 characters; longer ones are cut, saying so.
    return {
        _key(k): v if len(v) <= 6000 else v[:5980] + " [cut: see longscope.json]"
        for k, v in values.items()
    }


def _metrics(run: ExportRun) -> dict[str, float]:
    out = {}
    for point in metric_points(run.summary):
        out[f"score.{_key(point.name)}"] = point.value
        if point.se is not None:  # its standard error, on the same 0-100 scale
            out[f"score.{_key(point.name)}.se"] = point.se
    counts = run.completeness()
    for key in ("requested", "scored", "skipped", "failed", "missing"):
        out[f"requests.{key}"] = float(counts[key])
    return out


def _artifacts(run: ExportRun) -> dict[str, str]:
    from longscope.report.html import render_html

    record = {
        "identity": run.identity(),
        "completeness": run.completeness(),
        "determinism": run.determinism(),
        "final": run.final,
    }
    return {
        "summary.json": json.dumps(run.scores.to_dict(), indent=2, ensure_ascii=False),
        "report.html": render_html([(run.run_dir, run.scores)]),
        "longscope.json": json.dumps(record, indent=2, ensure_ascii=False, default=str),
    }


def _key(name: str) -> str:
    """Return `name` with what MLflow refuses in keys (beyond letters, digits, `_-. /:`) as `_`."""
    return re.sub(r"[^\w\-. /:]", "_", name)[:250]
