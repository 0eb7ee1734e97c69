"""RULER's count of model templates made of special tokens (Phi-3, Llama 3, command-r, chatglm, ...).

RULER's hf path counts with `AutoTokenizer.tokenize`, which reads a special-token string such as
`<|user|>` as one token; a GGUF vocabulary's `encode` (llama.cpp with `special=False`) spells it out,
several tokens, and the haystack search then lands on another size. `fixtures/
prepare_digests_special.json` holds the sha256 of each sample RULER's unmodified `prepare.py`
wrote (NVIDIA/RULER@c3f5e3b, `--tokenizer_type hf`, max_seq_length 4096, seed 42, this folder's
squad.json and hotpotqa.json as its json/ inputs) with a Hugging Face tokenizer of Qwen2.5's
vocabulary plus the special tokens of RULER's templates (`helpers.TEMPLATE_SPECIALS`), built and
compared by `benchmarks/bench_ruler.py --identity --special-tokens`; `helpers.SpecialQwen` is the
same vocabulary read as a GGUF one is.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.ruler import generate
from longscope.suites.ruler.counting import SpecialTokens, ruler_counting
from longscope.suites.ruler.data import NOISE
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import MODEL_TEMPLATES, TASKS
from longscope.types import GenerationConfig
from tests.suites.ruler.helpers import TEMPLATE_SPECIALS, SpecialQwen, fixture_env

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DIGESTS = json.loads((FIXTURES / "prepare_digests_special.json").read_text())
# The templates whose text holds special tokens of that vocabulary (the others: none at all).
SPECIAL = {"command-r-chat", "chatglm-chat", "Phi3", "meta-llama3", "jamba", "nemotron5-instruct"}


@pytest.fixture(scope="module")
def special_qwen() -> SpecialQwen:
    return SpecialQwen()


def _digest(w: generate.Written) -> str:
    fields = [w.input, w.answer_prefix, list(w.outputs), w.length]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def test_the_fixture_covers_every_model_template_ruler_ships() -> None:
    templates = {key.split("/")[0] for key in DIGESTS}
    assert templates == set(MODEL_TEMPLATES) and len(templates) == 11
    for template in SPECIAL:  # each special-token template on several tasks
        assert len({k.split("/")[1] for k in DIGESTS if k.startswith(f"{template}/")}) >= 4


@pytest.mark.parametrize("key", sorted(DIGESTS))
def test_samples_equal_rulers_hf_path_where_templates_are_special_tokens(special_qwen, key):
    template, task, length, seed = key.split("/")
    expected = DIGESTS[key]
    env = fixture_env(int(seed))
    env.model_template = template
    written = list(generate.ruler_cell(TASKS[task], env, special_qwen, int(length), len(expected)))
    assert [_digest(w) for w in written] == expected
    for w in written:  # RULER's `length`: the template's special tokens one token each
        prompt = w.input + w.answer_prefix
        ttg = TASKS[task].template.tokens_to_generate
        assert w.length == len(special_qwen.encode_special(prompt)) + ttg
        if template in SPECIAL:
            assert len(special_qwen.encode(prompt)) + ttg > w.length


def test_counting_reads_special_tokens_only_where_the_template_holds_them(
    special_qwen, qwen_tokenizer
):
    for template in MODEL_TEMPLATES:
        reader = ruler_counting(special_qwen, template)
        assert isinstance(reader, SpecialTokens) == (template in SPECIAL), template
        # Qwen2.5's own vocabulary has none of RULER's template tokens: counted as before.
        assert ruler_counting(qwen_tokenizer, template) is qwen_tokenizer
    phi3 = ruler_counting(special_qwen, "Phi3")
    assert phi3 is ruler_counting(special_qwen, "jamba")  # one reader per tokenizer
    assert len(phi3.encode("<|user|>\n")) == 2 and len(special_qwen.encode("<|user|>\n")) > 2
    assert phi3.decode(phi3.encode("plain")) == "plain" and phi3.name == special_qwen.name
    # Each added token is one of the templates' own strings.
    assert all(any(s in MODEL_TEMPLATES[t] for t in SPECIAL) for s in TEMPLATE_SPECIALS)


@pytest.mark.parametrize("fill", ["ruler", "exact"])
def test_the_suites_lengths_count_the_templates_special_tokens(special_qwen, fill) -> None:
    suite = make_suite(
        RulerSuite,
        tasks=["niah_single_1", "vt"],
        lengths=[4096],
        samples=2,
        model_template="Phi3",
        fill=fill,
    )
    ctx = BuildContext(special_qwen, "completion", GenerationConfig())
    unit = len(special_qwen.encode("\n" + NOISE))
    for task in suite.tasks:
        for sample in suite.iter_cell(ctx, task, 4096):
            prompt = sample.meta["head"] + sample.context + sample.question
            prompt += sample.meta["answer_prefix"]
            counted = len(special_qwen.encode_special(prompt))
            ttg = TASKS[task].template.tokens_to_generate
            assert sample.meta["ruler_length"] == counted + ttg <= 4096
            assert sample.meta["achieved_length"] == counted + 1  # the BOS of a base model
            if fill == "exact":  # the largest that fits (with BOS): one more noise block would not
                assert 4096 - ttg - 1 - unit < counted <= 4096 - ttg - 1


@pytest.mark.model
def test_the_embedded_gguf_has_none_of_rulers_template_tokens(gemma_tokenizer) -> None:
    # Gemma 3's vocabulary reads none of RULER's template markers as special tokens: its prompts
    # are counted as before for every template (a GGUF that has them, e.g. Phi-3's, is read
    # through `encode_special`, llama.cpp's `special=True`).
    for template, text in MODEL_TEMPLATES.items():
        frame = "".join(text.split("{task_template}"))
        assert gemma_tokenizer.encode_special(frame) == gemma_tokenizer.encode(frame), template
        assert ruler_counting(gemma_tokenizer, template) is gemma_tokenizer
    assert len(gemma_tokenizer.encode_special("<start_of_turn>")) == 1  # its own markers it has
