"""Every Eval Ever records, built with the `every-eval-ever` package's own types and checked by its
validator before the command reports success.

One aggregate record per run at the datastore's path,
`data/longscope_SUITE/DEVELOPER/MODEL/UUID.json` (the package's `datastore_repo_file_path`; the
UUID is derived from the run id, so exporting a run again replaces its record). Results: the
overall score, each length and each breakdown cell of every view, on 0-100 with their standard
errors and intervals. The run's identity, completeness (a provisional run is marked so in
`source_metadata` and in every result's name and details) and determinism record go in the
schema's string maps (`additional_details`). Beside it, `UUID_samples.jsonl` holds one instance
record per scored answer; the validator checks the pair together.

every-eval-ever 0.3 asks for Python 3.12 for its other tools (converters, datastore); its types
and validator run on 3.11, where it is installed without its dependencies (`make install`).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.export.record import ExportRun, MissingDependency, Point, flat_strings, metric_points
from longscope.files import write_atomic

SCHEMA_VERSION = "0.3.0"


def _require() -> None:
    try:
        import every_eval_ever.eval_types
        import every_eval_ever.validator  # noqa: F401
    except ImportError:
        command = (
            "pip install 'longscope[eee]'"
            if sys.version_info >= (3, 12)
            else "pip install --no-deps --ignore-requires-python 'every-eval-ever==0.3.0' "
            "(it asks Python 3.12 for tools the validator does not use)"
        )
        raise MissingDependency(
            f"--format eee needs every-eval-ever, which is not installed: {command}"
        ) from None


def record(run: ExportRun, retrieved: float | None = None, detail: Any = None) -> Any:
    """Return `run` as an every-eval-ever `EvaluationLog` (validated by its pydantic model);
    `detail` points at its samples file (`DetailedEvaluationResults`)."""
    _require()
    from every_eval_ever import eval_types as eee

    rules, counts = run.determinism(), run.completeness()
    state = {"state": run.state, "final": str(run.final).lower()}
    engine_name, engine_version = run.engine()
    provider = run.model.split("/", 1)[0]
    return eee.EvaluationLog(
        schema_version=SCHEMA_VERSION,
        evaluation_id=evaluation_id(run),
        evaluation_timestamp=run.created_iso,
        retrieved_timestamp=str(int(retrieved if retrieved is not None else time.time())),
        source_metadata=eee.SourceMetadata(
            source_name="longscope",
            source_type=eee.SourceType.evaluation_run,
            source_organization_name="longscope (local run)",
            evaluator_relationship=eee.EvaluatorRelationship.other,
            additional_details={
                **state,
                **flat_strings(run.identity(), "run"),
                **flat_strings(counts, "completeness"),
            },
        ),
        eval_library=eee.EvalLibrary(
            name="longscope",
            version=str(run.header.get("longscope") or "unknown"),
            additional_details={"git": str(run.header.get("git") or "unknown")},
        ),
        model_info=eee.ModelInfo(
            name=run.model,
            id=run.served_id,
            developer=run.developer,
            inference_platform=_PLATFORMS.get(provider, provider),
            inference_engine=eee.InferenceEngine(name=engine_name, version=engine_version),
            additional_details={
                **flat_strings(rules, "determinism"),
                **_deployment(provider, engine_name),
            },
        ),
        evaluation_results=[_result(run, point, state) for point in metric_points(run.summary)],
        detailed_evaluation_results=detail,
    )


def instances(run: ExportRun) -> list[Any]:
    """Return one instance record per scored answer (question, gold, answer, score 0-1), linked
    to the aggregate's first overall result. Unscored requests are counted in the aggregate's
    completeness, not listed: a skipped or failed request is no answer to grade."""
    _require()
    from every_eval_ever import instance_level_types as eee

    points = metric_points(run.summary, breakdowns=False)
    result_id = points[0].name if points else "overall"
    title = run.summary.title or run.suite
    out = []
    for row in run.scores.rows:
        if row.score is None:
            continue
        sample, generation = row.sample, row.generation
        question, gold = (
            str(sample.get("question") or ""),
            [str(g) for g in sample.get("gold") or []],
        )
        tokens = generation.prompt_tokens + generation.completion_tokens
        out.append(
            eee.InstanceLevelEvaluationLog(
                schema_version=SCHEMA_VERSION,
                evaluation_id=evaluation_id(run),
                model_id=run.served_id,
                evaluation_name=f"{title} {sample.get('length')} tokens",
                evaluation_result_id=result_id,
                sample_id=f"{sample['id']}#{row.repeat}" if row.repeat else str(sample["id"]),
                sample_hash=hashlib.sha256(
                    json.dumps([question, gold], ensure_ascii=False).encode()
                ).hexdigest(),
                interaction_type=eee.InteractionType.single_turn,
                input=eee.Input(raw=question, reference=gold),
                output=eee.Output(
                    raw=[generation.text],
                    reasoning_trace=[generation.reasoning] if generation.reasoning else None,
                ),
                answer_attribution=[
                    eee.AnswerAttributionItem(
                        turn_idx=0,
                        source="output.raw",
                        extracted_value=generation.text,
                        extraction_method=f"longscope.{run.suite} metric",
                        is_terminal=True,
                    )
                ],
                evaluation=eee.Evaluation(
                    score=row.score.fraction, is_correct=row.score.value >= row.score.max
                ),
                token_usage=eee.TokenUsage(
                    input_tokens=generation.prompt_tokens,
                    output_tokens=generation.completion_tokens,
                    total_tokens=tokens,
                ),
                performance=eee.Performance(latency_ms=max(0.0, generation.latency_s * 1000)),
                metadata={
                    "task": sample.get("task"),
                    "language": sample.get("language"),
                    "length": sample.get("length"),
                    "repeat": row.repeat,
                    "status": generation.status,
                    "context_sha": run.context_hashes.get(sample["id"], ""),
                    "evidence": row.score.evidence,
                },
            )
        )
    return out


def evaluation_id(run: ExportRun) -> str:
    """Return the record's id, `COLLECTION/MODEL_ID/RUN_ID`: one per longscope run."""
    return f"{collection(run)}/{run.served_id}/{run.run_id}"


def _result(run: ExportRun, point: Point, state: dict[str, str]) -> Any:
    from every_eval_ever import eval_types as eee

    rules = run.determinism()
    title = run.summary.title or run.suite
    mark = "" if run.final else " (provisional)"
    uncertainty = None
    if point.se is not None:
        interval = None
        if point.low is not None and point.high is not None:
            interval = eee.ConfidenceInterval(
                lower=point.low, upper=point.high, confidence_level=0.95, method="t, clustered"
            )
        uncertainty = eee.Uncertainty(
            standard_error=eee.StandardError(value=point.se, method="clustered by shared unit"),
            confidence_interval=interval,
            num_samples=point.n,
        )
    details = {"n": str(point.n) if point.n is not None else "unknown", **state}
    return eee.EvaluationResult(
        evaluation_result_id=point.name,
        evaluation_name=f"{title} {point.label}{mark}",
        source_data=eee.SourceDataPrivate(
            dataset_name=title,
            source_type="other",
            additional_details={
                "suite": run.suite,
                "suite_version": str(run.header.get("suite_version") or "unknown"),
                "params": json.dumps(run.identity()["params"], sort_keys=True),
            },
        ),
        evaluation_timestamp=run.created_iso,
        metric_config=eee.MetricConfig(
            evaluation_description=f"{title} score ({point.label}), as the suite's authors define it",
            metric_id=f"longscope.{run.suite}.score",
            metric_name="score",
            metric_kind="score",
            metric_unit="percent",
            lower_is_better=False,
            score_type=eee.ScoreType.continuous,
            min_score=0.0,
            max_score=100.0,
        ),
        score_details=eee.ScoreDetails(score=point.value, details=details, uncertainty=uncertainty),
        generation_config=eee.GenerationConfig(
            generation_args=eee.GenerationArgs(
                temperature=_number(rules["temperature"]),
                top_p=_number(rules["top_p"]),
                max_tokens=_whole(rules["max_tokens"]),
            ),
            additional_details={
                "seed": str(rules["seed"]),
                "requests_in_flight": str(rules["requests_in_flight"]),
                "batching": str(rules["batching"]),
                "prefix_cache": str(rules["prefix_cache"]),
            },
        ),
    )


def collection(run: ExportRun) -> str:
    """Return the datastore collection of a suite's records (`longscope_SUITE`)."""
    return f"longscope_{run.suite}"


def repo_path(run: ExportRun) -> str:
    """Return the record's datastore path (`data/COLLECTION/DEVELOPER/MODEL/UUID.json`)."""
    _require()
    from every_eval_ever.helpers.io import datastore_repo_file_path

    seed = hashlib.sha256(run.run_id.encode()).digest()[:16]
    name = f"{uuid.UUID(bytes=seed, version=4)}.json"
    if run.developer is None:
        raise UsageError(
            f"the run names its model {run.served_id!r}, without its developer: Every Eval Ever "
            "files records by DEVELOPER/MODEL; give it with --model-id ORG/NAME "
            "(e.g. Qwen/Qwen2.5-7B-Instruct)"
        )
    try:
        return datastore_repo_file_path(collection(run), run.served_id, None, name)
    except ValueError as exc:
        raise UsageError(f"{run.served_id!r} names no Every Eval Ever path: {exc}") from exc


def validate(root: Path, repos: list[str]) -> list[str]:
    """Return the validator's errors for the datastore files `repos` under `root` (with its
    repository checks: paths, model identity, score bounds, the samples companion)."""
    _require()
    from every_eval_ever.validator import validate_file

    errors = []
    for repo in repos:
        report = validate_file(
            root / repo,
            repo_path=repo,
            available_files=frozenset(repos),
            read_repo_file=lambda name: (root / name).read_text(encoding="utf-8"),
            run_semantic_checks=True,
        )
        errors += [f"{repo}: {e.get('loc')}: {e.get('msg')}" for e in report.errors]
    return errors


def write(run: ExportRun, out: Path) -> Path:
    """Write `run`'s record and its samples file under `out` (the datastore's root, holding
    `data/`); return the record's path."""
    _require()
    from every_eval_ever.eval_types import DetailedEvaluationResults, Format, HashAlgorithm

    repo = repo_path(run)
    samples_repo = repo.removesuffix(".json") + "_samples.jsonl"
    rows = [r.model_dump_json(exclude_none=True) for r in instances(run)]
    detail = None
    if rows:
        text = "\n".join(rows) + "\n"
        write_atomic(out / samples_repo, text)
        detail = DetailedEvaluationResults(
            format=Format.jsonl,
            file_path=samples_repo,
            hash_algorithm=HashAlgorithm.sha256,
            checksum=hashlib.sha256(text.encode()).hexdigest(),
            total_rows=len(rows),
        )
    else:  # nothing scored: no samples file, and none left from an earlier export
        (out / samples_repo).unlink(missing_ok=True)
    aggregate = record(run, detail=detail).model_dump_json(indent=2, exclude_none=True)
    write_atomic(out / repo, aggregate + "\n")
    written = [repo, samples_repo] if rows else [repo]
    errors = validate(out, written)
    if errors:  # our bug, not the user's: say what the validator said, keep nothing invalid
        for name in written:
            (out / name).unlink(missing_ok=True)
        raise RuntimeError(f"every-eval-ever rejects the export: {'; '.join(errors[:3])}")
    return out / repo


_PLATFORMS = {"llamacpp": "local", "hf": "local", "openai": "OpenAI-compatible API"}
"""Where each provider runs the model, in the schema's words (`inference_platform`)."""
_SELF_RUN = {"llama-cpp-python", "vLLM", "SGLang", "llama.cpp", "transformers"}


def _deployment(provider: str, engine: str | None) -> dict[str, str]:
    """Return the schema's `deployment_type` and `model_availability`: a model this machine or
    a known open engine ran has its weights at hand; a bare API says nothing."""
    own = provider in ("llamacpp", "hf") or engine in _SELF_RUN
    return {
        "deployment_type": "self_deployed" if own else "unknown",
        "model_availability": "open_weights" if own else "unknown",
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None
