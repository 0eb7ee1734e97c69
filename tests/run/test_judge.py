"""The LLM judge: verdict parsing, storage, resume, failures recorded (never silent zeros)."""

from pathlib import Path
from typing import Any

import pytest

from longscope.models.openai_api import OpenAIBackend
from longscope.run.judge import judge
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.suites.hundred.judging import parse_verdict
from longscope.types import Generation, GenerationConfig

from ..models.fault_server import FaultServer, completion_body, text_completion_body

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("qa", 'Fluent and right. {"fluency": 2, "correctness": 3}', 1.0),
        ("qa", '{"fluency": 1, "correctness": 3} then {"fluency": 2, "correctness": 1}', 2 / 6),
        ("qa", '{"fluency": 2, "correctness": 7}', None),  # out of range
        ("qa", "no json at all", None),
        ("summary", '{"fluency": 1, "sentences": 4, "supported": 3}', 0.75),
        ("summary", '{"fluency": 0, "sentences": 4, "supported": 4}', 0.0),
        ("summary", '{"fluency": 1, "sentences": 0, "supported": 0}', None),
    ],
)
def test_parse_verdict(kind, text, value) -> None:
    assert parse_verdict(kind, text) == (pytest.approx(value) if value is not None else None)


def qa_suite_and_samples(qwen_tokenizer) -> tuple[Any, list]:
    """100-LongBench's judged single_doc_qa on the fixture source: 2 samples at 1K, chat mode."""
    params = {
        "tasks": ["single_doc_qa"],
        "lengths": [1024],
        "samples": 2,
        "metric": "judge",
        "sources": {"single_doc_qa": str(FIXTURES / "longbench_v1_qa.jsonl")},
    }
    suite = create_suite("hundred", params)
    samples = suite.build(BuildContext(qwen_tokenizer, "chat", GenerationConfig(max_tokens=64)))
    return suite, samples


def _qa_run(run_dir: Path, qwen_tokenizer, answer: str | None = None) -> None:
    suite, samples = qa_suite_and_samples(qwen_tokenizer)
    with RunStore(run_dir) as store:
        store.put_run("j1", "hundred", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("j1", samples)
        for sample in samples:
            store.put_generation(
                "j1",
                sample.id,
                0,
                Generation(
                    "unanswerable"
                    if sample.meta.get("no_context")
                    else (sample.gold[0] if answer is None else answer),
                    "ok",
                ),
            )


def test_verdicts_are_stored_resumed_and_failures_counted(tmp_path: Path, qwen_tokenizer) -> None:
    _qa_run(tmp_path, qwen_tokenizer)
    with FaultServer() as server:
        server.script.extend(
            [
                ("ok", completion_body('Good. {"fluency": 2, "correctness": 3}')),
                ("ok", completion_body("I refuse to give JSON.")),
                ("ok", completion_body("Still no JSON.")),
                ("ok", completion_body("Nope.")),
            ]
        )
        counts = judge(tmp_path, OpenAIBackend("m", base_url=server.url, backoff_base_s=0.01))
        assert counts == {"judged": 1, "failed": 1, "cached": 0}
        assert len(server.requests) == 4  # 1 + (1 try + 2 retries)
        again = judge(tmp_path, OpenAIBackend("m", base_url=server.url))
        assert again == {"judged": 0, "failed": 0, "cached": 2} and len(server.requests) == 4
    summary = score_run(tmp_path).to_dict()
    assert summary["judge_failures"] == {"single_doc_qa": {"1024": 1}}
    assert summary["by_task"]["single_doc_qa"]["1024"] == 100.0  # the failure is not a 0


@pytest.mark.model
def test_embedded_model_as_judge_records_what_it_says(tmp_path: Path, qwen_tokenizer) -> None:
    from longscope.models.registry import create_backend

    _qa_run(tmp_path, qwen_tokenizer)
    counts = judge(tmp_path, create_backend("llamacpp/gemma3-270m", {"context_length": 2048}))
    assert counts["judged"] + counts["failed"] == 2
    with RunStore(tmp_path, create=False) as store:
        verdicts = store.judgements("j1")
    assert len(verdicts) == 2
    for verdict in verdicts.values():
        assert verdict.judge.startswith("gguf:") and (verdict.value is not None or verdict.error)


def test_a_base_model_judge_is_handed_the_verdicts_opening(tmp_path: Path, qwen_tokenizer) -> None:
    _qa_run(tmp_path, qwen_tokenizer)
    with FaultServer() as server:
        server.script.extend(
            [
                ("ok", text_completion_body(' 2, "correctness": 3')),  # stopped before "}"
                ("ok", text_completion_body(" very fluent indeed")),
                ("ok", text_completion_body(' 1, "correctness": 0}')),
            ]
        )
        backend = OpenAIBackend("m", base_url=server.url, prompt_mode="completion")
        assert judge(tmp_path, backend) == {"judged": 2, "failed": 0, "cached": 0}
    first, retry = server.requests[0]["body"], server.requests[2]["body"]
    assert first["prompt"].endswith('Verdict: {"fluency":') and first["stop"] == ["}"]
    assert first["temperature"] == 0.0 and retry["temperature"] > 0  # a retry may differ
    with RunStore(tmp_path, create=False) as store:
        values = sorted(j.value for j in store.judgements("j1").values())
    assert values == [0.0, 1.0]


def test_an_empty_answer_scores_0_without_asking_the_judge(tmp_path: Path, qwen_tokenizer) -> None:
    _qa_run(tmp_path, qwen_tokenizer, answer="  \n")
    with FaultServer() as server:
        assert judge(tmp_path, OpenAIBackend("m", base_url=server.url))["judged"] == 2
        assert server.requests == []
    assert score_run(tmp_path).to_dict()["by_task"]["single_doc_qa"]["1024"] == 0.0
