"""A minimal suite, outside `src/`: everything a suite must give longscope, and nothing more.

Each sample hides a key in filler text; the answer is right when it names the key. It plugs in
through the `longscope.suites` entry-point group (tests/plugin/test_plugin_suite.py) or
`register_suite`, and every command works on it with no change anywhere else: its options are
declared once (`OPTIONS`, defaults included) and reach the constructor complete and typed;
`longscope data echo` reads its `sources()`; `longscope list echo` its options.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildContext, PromptTemplate, Suite
from longscope.summary import Summary, simple_summary
from longscope.types import Generation, GenerationConfig, Sample, Score, ScoredRow

FILLER = "The grass is green and the sky is blue. "


class EchoSuite(Suite):
    name = "echo"
    title = "Echo"
    version = "echo-1"
    DESCRIPTION = "Echo: find one key in filler text (a plug-in example)"
    OPTIONS = (
        Param("lengths", "lengths", (256, 512), "context lengths"),
        Param("samples", "int", 2, "samples per length", low=1),
        Param("word", "str", "key", "what the key is called"),
    )
    template = PromptTemplate(
        body="{context}\n\nQuestion: {question}", answer_prefix="\nAnswer:", completion_stop=("\n",)
    )
    default_config = GenerationConfig(max_tokens=16)
    default_repeats = 1

    def __init__(self, lengths: Sequence[int], samples: int, word: str) -> None:
        # The registry hands every option, typed, its default applied: nothing to restate here.
        self.lengths, self.samples, self.word = tuple(lengths), samples, word

    @classmethod
    def sources(cls) -> Sources:
        return Sources("echo", by_hand=("nothing to download: echo writes its own filler",))

    def params(self) -> dict[str, Any]:
        return {"lengths": list(self.lengths), "samples": self.samples, "word": self.word}

    def prepare(self) -> None:
        pass

    def build(self, ctx: BuildContext) -> list[Sample]:
        out = []
        for length in self.lengths:
            for i in range(self.samples):
                key = f"K{length}x{i}"
                filler = FILLER * max(1, length // 12)
                context = f"{filler}The {self.word} is {key}. {filler}"
                out.append(
                    Sample(
                        id=f"echo-{length}-{i}",
                        task="echo",
                        language="en",
                        context=context,
                        question=f"What is the {self.word}?",
                        gold=(key,),
                        length=length,
                    )
                )
        return out

    def timeout_s(self, sample: Sample) -> float:
        return 30.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return Score(1.0 if sample["gold"][0] in generation.text else 0.0, 1.0)

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return simple_summary(self.name, self.title, rows)
