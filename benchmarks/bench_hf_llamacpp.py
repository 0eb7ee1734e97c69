"""Real weights (issue 46.3): the hf engine's stored answers and llama.cpp's on the same prompts,
each scored by the suite's own metric, with the paired difference and its 95% interval.

    PYTHONPATH=src python benchmarks/bench_hf_llamacpp.py --work DIR --out FILE.jsonl \
        [--agreement FILE] [--model llamacpp/smollm2-135m] [--hf-tokenizer DIR] [--smoke]

The engine's side is a stored agreement run of `bench_hf_agreement.py` (`--agreement`: its
per-prompt jsonl, `engine_ids` per sample; the settings of the `longscope run` commands recorded
in its summary-*.json, which are the ones used here). llama.cpp's side is the product path:
`longscope run ruler` (13 tasks x the file's lengths, one sample each, the test fixtures'
essays, SQuAD and HotpotQA) and `longscope run longctx` (`-S depths=0.1,0.5,0.9`) on
`--model` (the embedded backend on SmolLM2-135M-Instruct's GGUF, the same weights the engine ran
dequantized), greedy, chat mode, stored in DIR/ruler and DIR/longctx (a second call resumes them).

The stored runs' samples are the prompts: every sample of the agreement file must be in the
llama.cpp run under the same id with the same prompt token count (the engine's count of the same
chat-templated prompt), else the script stops. The engine's ids are decoded as the engine decodes
them (the GGUF's vocabulary, special tokens dropped; `--hf-tokenizer DIR` also decodes them with
the tokenizer.json the engine ran with and requires the same text), cut at the run's stop strings
and scored with the suite's `score`; both sides are summarized and given their clustered standard
errors as `longscope score` does, and `analysis.compare.compare_runs` (what `longscope compare`
prints) gives llama.cpp minus the engine per length, paired by sample, clustered by the suite's
unit. Printed per suite and length: both scores with their SEs and whether the difference's 95%
interval holds 0. FILE.jsonl: one row per prompt (both answers and both scores);
FILE.summary.json: the numbers and the commands.

`--smoke`: RULER's niah_single_1 at 1K through llama.cpp, the "engine" side being llama.cpp's own
answers encoded to ids and decoded back by the same path: both sides must score alike (difference
0, within noise).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
AGREEMENT = (
    ROOT
    / "benchmarks"
    / "results"
    / "hf-h200-2026-11-29-issue46"
    / "agreement"
    / "agreement-fp32-4k-8k.jsonl"
)
RECORDED = AGREEMENT.parent / "llamacpp-fp32-4k-8k.jsonl"
"""The recorded comparison (BENCHMARKS.md, issue 46) that `--smoke` scores again."""
sys.path.insert(0, str(ROOT / "src"))

from longscope.analysis.compare import Comparison, compare_runs  # noqa: E402
from longscope.analysis.uncertainty import cluster_key_of, cluster_name, with_uncertainty  # noqa: E402
from longscope.models.base import split_reasoning  # noqa: E402
from longscope.run.scoring import as_summary, score_run  # noqa: E402
from longscope.run.store import RunStore  # noqa: E402
from longscope.suites import create_suite  # noqa: E402
from longscope.summary import Summary  # noqa: E402
from longscope.text.tokenizers import HFTokenizer, load_tokenizer  # noqa: E402
from longscope.types import SCORABLE, Generation, Score, ScoredRow  # noqa: E402

MODEL = "llamacpp/smollm2-135m"


def run_cli(
    suite: str, args: list[str], model: str, out: Path, prompt_mode: str = "chat"
) -> dict[str, Any]:
    """Run `longscope run SUITE` in this process (resuming `out`); return its command and time."""
    from typer.testing import CliRunner

    from longscope.cli import app

    command = ["run", suite, "--model", model, "-M", f"prompt_mode={prompt_mode}", *args]
    command += ["-o", str(out), "-q"]
    started = time.perf_counter()
    result = CliRunner().invoke(app, command, catch_exceptions=False)
    print(result.output[-1500:], flush=True)
    if result.exit_code != 0:
        raise SystemExit(f"longscope {' '.join(command)}: exit {result.exit_code}")
    return {
        "suite": suite,
        "wall_s": round(time.perf_counter() - started, 1),
        "command": "longscope " + " ".join(command),
    }


def engine_text(ids: list[int], tokenizer: Any, stop: list[str]) -> str:
    """Return the answer the hf engine made of `ids` (`models/hf/members.Answers.finish`)."""
    text = tokenizer.decode(ids)
    cuts = [text.find(s) for s in stop if s and s in text]
    text = text[: min(cuts)] if cuts else text
    return split_reasoning(text)[0]


def scored_side(
    suite: str,
    params: dict[str, Any],
    prompts: list[dict[str, Any]],
    answers: dict[str, Generation],
    name: str,
) -> tuple[Summary, list[ScoredRow], dict[str, Any]]:
    """Return one side's summary (with standard errors), scored rows and clusters, as
    `run.scoring.score_run` makes them: each prompt's stored sample scored by the suite's `score`
    on `answers[sample id]`, clustered by the suite's unit (else the sample's document)."""
    made = create_suite(suite, params)
    rows = []
    for prompt in prompts:
        generation = answers[prompt["sample"]]
        sample = prompt["sample_fields"]
        score = made.score(sample, generation) if generation.status in SCORABLE else None
        rows.append(ScoredRow(sample, 0, generation, score))
    summary = replace(as_summary(suite, made.summarize(rows)), run_id=name, suite=suite)
    documents = {p["sample"]: p["document"] for p in prompts}
    key = cluster_key_of(made.cluster_key, documents)
    summary = with_uncertainty(summary, rows, key, cluster_name=cluster_name(made.cluster_key))
    return summary, rows, {str(r.sample["id"]): key(r.sample) for r in rows}


def percent(score: Score | None) -> float | None:
    """Return a score as points of 100 (None when it was not scored)."""
    return None if score is None else round(100 * score.fraction, 2)


def score_cell(summary: Summary, length: int) -> dict[str, Any]:
    """Return one side's score at `length` with its clustered SE and 95% interval."""
    error = summary.view.length_errors.get(length)
    score = summary.view.by_length.get(length)
    return {
        "score": None if score is None else round(score, 2),
        "se": None if error is None or error.se is None else round(error.se, 2),
        "ci95": None
        if error is None or error.low is None
        else [round(error.low, 2), round(error.high or 0.0, 2)],
        "clusters": 0 if error is None else error.clusters,
    }


def verdict(comparison: Comparison, length: int) -> str:
    """Return whether llama.cpp minus the engine at `length` lies within its 95% interval."""
    difference = comparison.by_length.get(length)
    if difference is None:
        return "not compared"
    if difference.low is None:
        # `Difference.within_noise` says True without an interval: say there is none instead.
        if difference.value == 0:
            return f"equal (no interval: {difference.clusters} cluster(s))"
        return f"no interval ({difference.clusters} cluster(s))"
    return "within" if difference.within_noise else "OUTSIDE"


def load_agreement(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Return the stored agreement rows by suite and sample id."""
    by_suite: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            by_suite[row["suite"]][row["sample"]] = row
    return dict(by_suite)


def hf_tokenizer(folder: Path) -> HFTokenizer:
    """Return the tokenizer.json of `folder` (a .gz copy decompressed to a scratch file)."""
    plain = folder / "tokenizer.json"
    if plain.is_file():
        return HFTokenizer(plain)
    packed = folder / "tokenizer.json.gz"
    with tempfile.TemporaryDirectory(prefix="tok-") as scratch:  # read whole when made
        unpacked = Path(scratch) / "tokenizer.json"
        unpacked.write_bytes(gzip.decompress(packed.read_bytes()))
        tokenizer = HFTokenizer(unpacked)
    tokenizer.name = str(packed)
    return tokenizer


def stored_prompts(
    suite: str, run_dir: Path, stored: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Return llama.cpp's run of `suite` (its params and stop strings) and one record per prompt
    of the agreement file: the stored sample, its document and llama.cpp's answer."""
    llama = score_run(run_dir, persist=False)
    with RunStore.open_readonly(run_dir) as store:
        documents = store.context_hashes(llama.run_id)
    by_id = {str(r.sample["id"]): r for r in llama.rows}
    missing = sorted(set(stored) - set(by_id))
    if missing:
        raise SystemExit(f"{suite}: samples of the agreement file not in {run_dir}: {missing}")
    prompts = []
    for sid, row in stored.items():
        mine = by_id[sid]
        got = mine.generation
        if got.prompt_tokens != row["prompt_tokens"]:
            raise SystemExit(
                f"{suite} {sid}: llama.cpp read {got.prompt_tokens} prompt tokens, the engine "
                f"{row['prompt_tokens']}: not the same prompt"
            )
        prompts.append(
            {
                "suite": suite,
                "sample": sid,
                "length": mine.sample.get("length"),
                "prompt_tokens": row["prompt_tokens"],
                "document": documents.get(sid, sid),
                "llamacpp_status": got.status,
                "llamacpp_answer": got.text,
                "llamacpp_completion_tokens": got.completion_tokens,
                "sample_fields": mine.sample,
            }
        )
    run = {
        "suite": suite,
        "run_id": llama.run_id,
        "params": llama.header["params"],
        "stop": list(llama.header.get("config", {}).get("stop") or []),
        "model_id": (llama.header.get("model_info") or {}).get("model_id"),
    }
    return run, prompts


def compare_suite(
    run: dict[str, Any],
    prompts: list[dict[str, Any]],
    stored: dict[str, dict[str, Any]],
    tokenizer: Any,
    check: HFTokenizer | None,
) -> list[dict[str, Any]]:
    """Score both sides of one suite's prompts (filling each prompt's answers and scores) and
    return the per-length cells: both scores and llama.cpp minus the engine, paired."""
    suite, params = run["suite"], run["params"]
    engine: dict[str, Generation] = {}
    for prompt in prompts:
        row = stored[prompt["sample"]]
        text = engine_text(row["engine_ids"], tokenizer, run["stop"])
        if check is not None and engine_text(row["engine_ids"], check, run["stop"]) != text:
            raise SystemExit(
                f"{suite} {prompt['sample']}: the GGUF and tokenizer.json decode apart"
            )
        engine[prompt["sample"]] = Generation(text=text, status=row["engine_status"])
    llama = {
        p["sample"]: Generation(text=p["llamacpp_answer"], status=p["llamacpp_status"])
        for p in prompts
    }
    ours = scored_side(suite, params, prompts, engine, "engine")
    theirs = scored_side(suite, params, prompts, llama, "llama.cpp")
    ours_by = {str(r.sample["id"]): r.score for r in ours[1]}
    theirs_by = {str(r.sample["id"]): r.score for r in theirs[1]}
    for prompt in prompts:
        prompt["engine_status"] = engine[prompt["sample"]].status
        prompt["engine_answer"] = engine[prompt["sample"]].text
        prompt["engine_score"] = percent(ours_by.get(prompt["sample"]))
        prompt["llamacpp_score"] = percent(theirs_by.get(prompt["sample"]))
    made = compare_runs(("engine", *ours), ("llama.cpp", *theirs))
    cells = []
    for length in sorted(ours[0].view.by_length):
        difference = made.by_length.get(length)
        cells.append(
            {
                "suite": suite,
                "length": length,
                "prompts": sum(1 for p in prompts if p["length"] == length),
                "engine": score_cell(ours[0], length),
                "llamacpp": score_cell(theirs[0], length),
                "difference": None if difference is None else difference.as_dict(),
                "verdict": verdict(made, length),
            }
        )
    overall = made.overall.as_dict() if made.overall is not None else None
    cells.append({"suite": suite, "length": "all", "difference": overall, "note": made.note})
    return cells


def show(cell: dict[str, Any]) -> str:
    """Return one printed line of a per-length cell."""
    if cell["length"] == "all":
        d = cell["difference"] or {}
        return (
            f"{cell['suite']:8} all    llama.cpp - engine {d.get('difference')} "
            f"(95% {d.get('ci95')}, {d.get('clusters')} clusters)  {cell['note']}"
        )
    e, m, d = cell["engine"], cell["llamacpp"], cell["difference"] or {}
    return (
        f"{cell['suite']:8} {cell['length']:>6} n={cell['prompts']:<3} "
        f"engine {e['score']} (SE {e['se']})  llama.cpp {m['score']} (SE {m['se']})  "
        f"diff {d.get('difference')} 95% {d.get('ci95')} [{d.get('clusters')} clusters]  "
        f"{cell['verdict']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agreement", type=Path, default=AGREEMENT)
    parser.add_argument("--work", type=Path, default=None, help="the llama.cpp runs' folder")
    parser.add_argument("--out", type=Path, default=None, help="the per-prompt jsonl")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--hf-tokenizer", type=Path, default=None)
    parser.add_argument(
        "--prompt-mode", default="chat", help="as the engine ran: completion for a base model"
    )
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    stored = load_agreement(args.agreement)
    tokenizer = load_tokenizer(args.model.split("/", 1)[1])
    check = hf_tokenizer(args.hf_tokenizer) if args.hf_tokenizer else None
    if args.smoke:
        # The recorded comparison again from what it stored (no llama.cpp run): the same scores
        # and verdicts, or the metric, the decoding or the statistics changed under it.
        recorded = json.loads(RECORDED.with_suffix(".summary.json").read_text())
        lines = [line for line in RECORDED.read_text().splitlines() if line]
        prompts = [json.loads(line) for line in lines]
        expected = {(p["suite"], p["sample"]): p for p in map(json.loads, lines)}
        runs = recorded["runs"]
    else:
        work = args.work or Path(tempfile.mkdtemp(prefix="llamacpp-agreement-"))
        work.mkdir(parents=True, exist_ok=True)
        runs = []
        prompts = []
        for suite, rows in stored.items():
            lengths = sorted({int(sid.split("-")[1]) for sid in rows})
            spelled = ",".join(f"{n // 1024}k" for n in lengths)
            if suite == "ruler":
                options = ["--lengths", spelled, "-S", "samples=1"]
                options += [f"-S{k}={FIXTURES / f}" for k, f in (
                    ("essays", "essays.json"), ("squad", "squad.json"),
                    ("hotpotqa", "hotpotqa.json"))]  # fmt: skip
            else:
                options = ["-S", f"lengths={spelled}", "-S", "depths=0.1,0.5,0.9"]
            command = run_cli(suite, options, args.model, work / suite, args.prompt_mode)
            run, made = stored_prompts(suite, work / suite, rows)
            runs.append({**command, **run})
            prompts += made
    cells = []
    for run in runs:
        mine = [p for p in prompts if p["suite"] == run["suite"]]
        cells += compare_suite(run, mine, stored[run["suite"]], tokenizer, check)
    for cell in cells:
        print(show(cell), flush=True)
    same = sum(p["engine_score"] == p["llamacpp_score"] for p in prompts)
    alike = sum(p["engine_answer"] == p["llamacpp_answer"] for p in prompts)
    print(f"{len(prompts)} prompts: {same} scored alike, {alike} with the same answer", flush=True)
    if args.smoke:
        for prompt in prompts:
            want = expected[(prompt["suite"], prompt["sample"])]
            for key in ("engine_answer", "engine_score", "llamacpp_score"):
                assert prompt[key] == want[key], (prompt["sample"], key, prompt[key], want[key])
        assert cells == recorded["cells"], "the per-length comparison changed"
        print(f"smoke: {len(prompts)} recorded prompts scored again alike", flush=True)
        return
    out = args.out or work / "llamacpp-agreement.jsonl"
    with open(out, "w") as handle:
        for row in prompts:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        "kind": "llamacpp-agreement",
        "agreement": str(args.agreement),
        "model": args.model,
        "prompts": len(prompts),
        "same_score": same,
        "same_answer": alike,
        "decode_checked_with": str(args.hf_tokenizer) if check else None,
        "cells": cells,
        "runs": runs,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=1))
    print(f"per prompt: {out}", flush=True)


if __name__ == "__main__":
    main()
