"""fill=ruler in chat mode: RULER counts its model template's tokens in the length it fills to;
a chat model's template is the backend's, so its tokens (`BuildContext.chat_overhead`) are
counted the same way and a sample at length L fits L with its answer budget."""

from __future__ import annotations

from pathlib import Path

from longscope.suites.base import BuildContext
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import TASKS
from longscope.types import GenerationConfig

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
TASKS_CHECKED = ["niah_single_1", "niah_multikey_2", "vt", "fwe", "qa_1"]
LENGTH = 4096


def _build(tokenizer, tasks, mode, overhead, length=LENGTH):  # type: ignore[no-untyped-def]
    suite = make_suite(RulerSuite, tasks=tasks, lengths=[length], samples=1, **DATA)
    ctx = BuildContext(tokenizer, mode, GenerationConfig(), chat_overhead=overhead)
    return suite, suite.build(ctx)


def test_a_chat_sample_fits_its_length_with_the_templates_tokens(qwen_tokenizer) -> None:
    overhead = 25
    suite, samples = _build(qwen_tokenizer, TASKS_CHECKED, "chat", overhead)
    assert {s.task for s in samples} == set(TASKS_CHECKED)
    for sample in samples:
        ttg = TASKS[sample.task].template.tokens_to_generate
        message = suite.template.render(sample, "chat")[1][0].content
        sent = len(qwen_tokenizer.encode(message)) + overhead  # as the model reads it
        # The stored prompt length is what is sent: the message and the template's tokens.
        assert sample.prompt_tokens == sample.meta["achieved_length"] == sent, sample.id
        assert sample.prompt_tokens + sample.max_tokens <= LENGTH, sample.id
        # RULER's own length counts the template too (and the answer prefix it counts).
        counted = len(qwen_tokenizer.encode(message + sample.meta["answer_prefix"]))
        assert sample.meta["ruler_length"] == counted + overhead + ttg <= LENGTH, sample.id


def test_the_templates_tokens_come_out_of_the_haystack(qwen_tokenizer) -> None:
    # niah's noise haystack grows by one short sentence: the fill tracks the overhead closely.
    texts = {}
    for overhead in (0, 200):
        suite, (sample,) = _build(qwen_tokenizer, ["niah_single_1"], "chat", overhead)
        texts[overhead] = len(
            qwen_tokenizer.encode(suite.template.render(sample, "chat")[1][0].content)
        )
    assert 200 - 20 <= texts[0] - texts[200] <= 200 + 20


def test_completion_samples_ignore_a_chat_overhead(qwen_tokenizer) -> None:
    _, plain = _build(qwen_tokenizer, TASKS_CHECKED, "completion", None)
    _, told = _build(qwen_tokenizer, TASKS_CHECKED, "completion", 25)
    assert [(s.context, s.question, s.prompt_tokens, s.meta) for s in told] == [
        (s.context, s.question, s.prompt_tokens, s.meta) for s in plain
    ]
