"""RULER's numbers users rely on: QA scored by any reference, prompts sized by what is sent."""

from __future__ import annotations

from pathlib import Path

from longscope.suites.base import CHAT_MARGIN_TOKENS, BuildContext
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import ALL_TASKS, TASKS
from longscope.types import Generation, GenerationConfig
from tests.suites.ruler.helpers import RunMergingTokenizer

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}


def _suite(tasks: list[str], samples: int = 2) -> RulerSuite:
    return make_suite(
        RulerSuite,
        tasks=tasks,
        lengths=[4096],
        samples=samples,
        random_seed=42,
        fill="exact",
        **DATA,
    )


def _sent(suite: RulerSuite, sample, mode: str) -> str:
    prompt, messages = suite.template.render(sample, mode)
    return prompt or messages[0].content


def test_qa_tasks_score_an_answer_naming_one_reference_as_right(qwen_tokenizer) -> None:
    suite = _suite(["qa_1", "qa_2"], samples=4)
    samples = suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    several = 0
    for sample in samples:
        record = sample.public()
        for reference in sample.gold:
            score = suite.score(record, Generation(f" {reference}", "ok"))
            assert (score.value, score.evidence["metric"]) == (1.0, "string_match_part")
        # An answer naming one reference but not another ("Black Sea" for "the Black Sea").
        several += any(g.lower() not in r.lower() for r in sample.gold for g in sample.gold)
    assert several >= 1, "the fixtures must hold a question with distinct references"


def test_prompts_are_counted_whole_where_the_pieces_do_not_add_up() -> None:
    tokenizer = RunMergingTokenizer()
    suite = _suite(["niah_single_1", "vt", "cwe", "fwe", "qa_1"])
    samples = suite.build(BuildContext(tokenizer, "completion", GenerationConfig()))
    for sample in samples:
        sent = len(tokenizer.encode(_sent(suite, sample, "completion"))) + 1  # BOS
        budget = 4096 - TASKS[sample.task].template.tokens_to_generate
        assert sample.prompt_tokens == sample.meta["achieved_length"] == sent, sample.id
        assert sent <= budget, sample.id
    assert any(s.meta["counted"] == "whole" for s in samples)


def test_an_unknown_chat_template_keeps_its_margin_free(qwen_tokenizer) -> None:
    suite = _suite(list(ALL_TASKS))
    samples = suite.build(BuildContext(qwen_tokenizer, "chat", GenerationConfig()))
    tightest = 4096
    for sample in samples:
        text = len(qwen_tokenizer.encode(_sent(suite, sample, "chat")))
        output = TASKS[sample.task].template.tokens_to_generate
        # The server's template adds tokens the harness cannot count: the margin stays free.
        room = 4096 - output - CHAT_MARGIN_TOKENS - text
        assert room >= 0, (sample.id, room)
        assert sample.prompt_tokens == text
        tightest = min(tightest, room)
    assert tightest < CHAT_MARGIN_TOKENS  # the haystack fills up to the margin, not far below it
