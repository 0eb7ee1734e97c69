"""LLM-as-judge for 100-LongBench's QA and summary tasks: cached, resumable, failures recorded.

The judge is any backend. Its verdicts are stored beside the generations (table `judgements`), keyed
by (run, sample, repeat, judge), so a killed judge pass resumes and re-scoring needs no judge. A reply
whose JSON cannot be parsed is retried twice, then stored as a judge failure: scoring never turns it
into a silent 0.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from longscope.models.base import Backend
from longscope.run.store import RunStore
from longscope.types import SCORABLE, GenerationConfig, Message, Request

JUDGE_RETRIES = 2
_JSON = re.compile(r"\{[^{}]*\}")

QA_PROMPT = """You are grading an answer to a question against the correct answers.
Question: {question}
Correct answers: {gold}
Answer to grade: {answer}

Rate fluency from 0 to 2 (0: incoherent or repetitive, 1: understandable, 2: fluent) and correctness
from 0 to 3 (0: wrong, 1: partly right, 2: mostly right, 3: fully right). Explain briefly, then end
with exactly one JSON object: {{"fluency": <0-2>, "correctness": <0-3>}}"""

SUMMARY_PROMPT = """You are grading a summary against a reference summary.
Reference summary: {gold}
Summary to grade: {answer}

Decide whether the summary is fluent (1) or not (0). Then count its sentences and how many of them
are supported by the reference. Explain briefly, then end with exactly one JSON object:
{{"fluency": <0 or 1>, "sentences": <number of sentences>, "supported": <supported sentences>}}"""


VERDICT_OPENING = 'Verdict: {"fluency":'


@dataclass(frozen=True)
class Verdict:
    value: float | None
    """The judged score in [0, 1], or None when the judge failed."""
    text: str
    attempts: int
    error: str = ""


def parse_verdict(kind: str, text: str) -> float | None:
    """Return the score from the judge's last JSON object, or None if it is missing or invalid."""
    for raw in reversed(_JSON.findall(text)):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            continue
        try:
            if kind == "qa":
                fluency, correct = int(data["fluency"]), int(data["correctness"])
                if 0 <= fluency <= 2 and 0 <= correct <= 3:
                    return fluency * correct / 6
            else:
                fluency, sentences, supported = (
                    int(data[k]) for k in ("fluency", "sentences", "supported")
                )
                if fluency in (0, 1) and sentences > 0 and 0 <= supported <= sentences:
                    return fluency * supported / sentences
        except (KeyError, TypeError, ValueError):
            continue
        return None
    return None


def judge_prompt(kind: str, question: str, gold: list[str], answer: str) -> str:
    """Return the judge's prompt; the judge never sees the context."""
    if kind == "qa":
        return QA_PROMPT.format(question=question, gold=" | ".join(gold), answer=answer)
    return SUMMARY_PROMPT.format(gold=gold[0], answer=answer)


async def judge_one(backend: Backend, kind: str, prompt: str, mode: str) -> Verdict:
    """Ask the judge, retrying unparsable replies twice.

    A completion-mode judge (a base model) is handed the opening of the JSON verdict and stops at
    its closing brace: base models rarely volunteer JSON, but they continue it.
    """
    text, error = "", ""
    opening = VERDICT_OPENING if mode == "completion" else ""
    for attempt in range(1, JUDGE_RETRIES + 2):
        # Greedy first; a retry samples, or a deterministic judge would repeat its reply.
        temperature = 0.0 if attempt == 1 else 0.7
        config = GenerationConfig(max_tokens=256, temperature=temperature, seed=attempt)
        if mode == "completion":
            config = replace(config, max_tokens=48, stop=("}",))
        request = Request(
            "judge",
            attempt,
            mode,  # type: ignore[arg-type]
            prompt=prompt + "\n" + opening if mode == "completion" else "",
            messages=(Message("user", prompt),) if mode == "chat" else (),
            config=config,
        )
        generation = await backend.generate(request)
        text = opening + generation.text
        if mode == "completion" and "}" not in generation.text:
            text += "}"  # the stop sequence is not part of the reply
        if generation.status not in SCORABLE:
            error = f"judge {generation.status}: {generation.error}"
            continue
        value = parse_verdict(kind, text)
        if value is not None:
            return Verdict(value, text, attempt)
        error = "no valid JSON verdict in the judge's reply"
    return Verdict(None, text, JUDGE_RETRIES + 1, error)


async def judge_run(
    run_dir: str | Path, backend: Backend, run_id: str | None = None
) -> dict[str, int]:
    """Judge every judged-task generation of a run that has no verdict from this judge yet."""
    info = await backend.info()
    judge_id = info.model_id
    counts = {"judged": 0, "failed": 0, "cached": 0}
    with RunStore(run_dir, create=False) as store:
        run = store.run(run_id)
        run_id = run["run_id"]
        samples = store.samples(run_id)
        done = store.judged_keys(run_id, judge_id)
        for sample_id, repeat, generation in store.generations(run_id):
            sample = samples.get(sample_id)
            if sample is None or sample["meta"].get("metric") not in ("f1", "rouge_l"):
                continue
            if sample["meta"].get("no_context"):
                continue  # the QA filter stays deterministic: it must not depend on a judge
            if (sample_id, repeat) in done:
                counts["cached"] += 1
                continue
            kind = "qa" if sample["meta"]["metric"] == "f1" else "summary"
            if generation.status not in SCORABLE:
                continue
            if not generation.text.strip():
                # Nothing to grade: a wrong answer, not a judge's opinion (small judges rate it 1).
                verdict = Verdict(0.0, "empty answer: 0 without asking the judge", 0)
            else:
                prompt = judge_prompt(
                    kind, sample["meta"].get("question_text", ""), sample["gold"], generation.text
                )
                verdict = await judge_one(backend, kind, prompt, info.prompt_mode)
            store.put_judgement(
                run_id,
                sample_id,
                repeat,
                judge_id,
                verdict.value,
                verdict.text,
                verdict.attempts,
                verdict.error,
            )
            counts["failed" if verdict.value is None else "judged"] += 1
    return counts


def judge(run_dir: str | Path, backend: Backend, run_id: str | None = None) -> dict[str, int]:
    """Blocking `judge_run` that closes the judge backend afterwards."""

    async def main() -> dict[str, int]:
        try:
            return await judge_run(run_dir, backend, run_id)
        finally:
            await backend.aclose()

    return asyncio.run(main())
