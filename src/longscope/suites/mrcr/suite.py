"""OpenAI MRCR: a long chat holding 2, 4 or 8 identical requests; reproduce the i-th answer.

The prompt is the row's own conversation, sent as its messages (chat mode only); the grade is the
card's (`grading.grade`); rows are binned by prompt and answer tokens with OpenAI's edges, per
needle count (one view each, as MRCR is reported: never averaged across needle counts). A row is
counted in the model's tokenizer and skipped, never truncated, when it cannot fit.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildCell, BuildContext, Suite
from longscope.suites.mrcr.data import REVISION, Dataset, load_hub, load_local
from longscope.suites.mrcr.grading import grade
from longscope.suites.mrcr.schema import bin_label, bin_of, bins_of_lengths
from longscope.suites.mrcr.summary import mrcr_summary
from longscope.summary import Summary
from longscope.types import (
    Generation,
    GenerationConfig,
    Message,
    PromptMode,
    PromptParts,
    Sample,
    Score,
    ScoredRow,
)

MESSAGE_MARGIN = 8
"""Tokens reserved (not counted as sent) for each further message's role markers: a chat template
adds about 5 per message (ChatML, Llama 3, Gemma), and a tokenizer may merge one or two where
message and marker meet. The template around one message is counted (`BuildContext.fit`)."""
ANSWER_FACTOR = 4
ANSWER_SLACK = 256
"""The default output budget is ANSWER_FACTOR x the gold's tokens plus ANSWER_SLACK: far above
the gold, as the card's script (no cap) and lm-evaluation-harness (the room left in the context)
let a model finish. An answer cut there is scored 0, never on its cut text: a cut answer is closer
to the gold than the whole one it stands for (SequenceMatcher's 2M / (|a| + |b|) falls as the
answer grows), and the card's script scores the whole answer. The whole answer, at least as long
as the cut one, would score at most 2|gold| / (|cut| + |gold|) (recorded as `whole_at_most`)."""
BIN_COUNTERS = ("model", "o200k")


class Counted(NamedTuple):
    """A row's tokens in the model's tokenizer (and what its bin was counted on)."""

    index: int
    contents: int
    """The messages' texts."""
    answer: int
    binned: int
    """Prompt and answer as the bins count them (the model's tokenizer, or o200k_base)."""
    messages: int
    system: bool
    """The chat brings its own system message (a template may then drop a default one)."""


class ChatTemplate:
    """MRCR's prompt is its row's conversation, stored once as the sample's context (JSON)."""

    completion_stop: tuple[str, ...] = ()

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return ("", the row's messages): MRCR has no completion-mode prompt."""
        if mode != "chat":
            raise UsageError(_CHAT_ONLY)
        chat = json.loads(sample.context)
        return "", tuple(Message(m["role"], m["content"]) for m in chat)

    def parts(self, sample: Sample, mode: PromptMode) -> PromptParts | None:
        """None: a conversation has no single message to cut around a context."""
        return None


_CHAT_ONLY = (
    "mrcr sends a conversation and runs in chat mode only: use an instruct model with a chat "
    "template (or -M prompt_mode=chat)"
)


def o200k_counter() -> Callable[[str], int]:
    """Return a counter in OpenAI's o200k_base (the card's `n_tokens`), or one line why not."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # tiktoken fetches the encoding once; offline it raises many types
        raise UsageError(
            f"-S bins=o200k needs tiktoken's o200k_base encoding ({type(exc).__name__}): run once "
            "online (or set TIKTOKEN_CACHE_DIR to a folder holding it), or use -S bins=model"
        ) from None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


class MrcrSuite(Suite):
    """OpenAI MRCR (huggingface.co/datasets/openai/mrcr; docs/benchmarks/mrcr.md)."""

    name = "mrcr"
    title = "OpenAI MRCR"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=2048, temperature=0.0)
    template = ChatTemplate()
    PUBLISHED = Path(__file__).with_name("published.json")
    """MRCR numbers from the Context Arena board and Google's Gemini 3 Pro table, with sources."""

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data mrcr` downloads."""
        from longscope.suites.mrcr.data import sources

        return sources()

    DESCRIPTION = "OpenAI MRCR: 2/4/8 identical requests in a long chat, 8K-1M (-S data=FILE|hub)"
    OPTIONS = (
        Param(
            "data",
            "str",
            None,
            "the rows: a .parquet/.jsonl file or folder, or hub (openai/mrcr, pinned) (required)",
        ),
        Param(
            "needles",
            "ints",
            (),
            "needle counts to run, of 2,4,8 (none given: every count in the data)",
        ),
        Param(
            "lengths",
            "lengths",
            (),
            "bins to run, each named by a length it holds (4k or 8k: [4096, 8192]; 128k: "
            "(64k, 128k]; none given: every bin)",
        ),
        Param(
            "bins",
            "choice",
            "model",
            "count the messages' texts + the answer (no chat template) for the bins in the "
            "model's tokenizer, or in OpenAI's o200k_base (the card's and the board's bins)",
            choices=BIN_COUNTERS,
        ),
        Param("revision", "str", REVISION, "openai/mrcr revision the data is (pinned by sha256)"),
        Param(
            "allow_unpinned",
            "bool",
            False,
            "score data that is not the pinned revision (recorded as unpinned)",
        ),
    )

    def __init__(
        self,
        *,
        data: str | None,
        needles: Sequence[int],
        lengths: Sequence[int],
        bins: str,
        revision: str,
        allow_unpinned: bool,
    ) -> None:
        if not data:
            raise ValueError(
                "mrcr needs -S data=FILE (.parquet/.jsonl, or a folder) or -S data=hub"
            )
        if bins not in BIN_COUNTERS:
            raise ValueError(f"-S bins={bins}: use model or o200k")
        if any(n < 1 for n in needles):
            raise ValueError(f"-S needles={','.join(map(str, needles))}: needle counts are 2, 4, 8")
        self.data = data
        self.needles = tuple(sorted(set(needles)))
        self.bins = bins_of_lengths(tuple(lengths)) if lengths else ()
        self.counter = bins
        self.revision = revision
        self.allow_unpinned = allow_unpinned
        self._counts: dict[tuple[str, str], list[Counted]] = {}

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "needles": list(self.needles),
            "lengths": list(self.bins),
            "bins": self.counter,
            "revision": self.revision,
            "allow_unpinned": self.allow_unpinned,
        }

    @functools.cached_property
    def dataset(self) -> Dataset:
        if self.data == "hub":
            return load_hub(self.revision, self.needles, self.allow_unpinned)
        return load_local(self.data, self.revision, self.needles, self.allow_unpinned)

    @property
    def version(self) -> str:
        # mrcr-2: the output cap is 4 x gold + 256 and an answer cut there scores 0 (was 2 x
        # gold + 32, scored on its cut text).
        return f"mrcr-2/{self.dataset.identity}"

    def prepare(self) -> None:
        """Load and validate the rows (and their revision) before any model is contacted."""
        _ = self.dataset

    def _counted(self, ctx: BuildContext) -> list[Counted]:
        """Return every row's token counts in `ctx`'s tokenizer, counted once per tokenizer."""
        if ctx.prompt_mode != "chat":
            raise UsageError(_CHAT_ONLY)
        key = (ctx.tokenizer.name, self.counter)
        if key in self._counts:
            return self._counts[key]

        def model_count(text: str) -> int:
            return len(ctx.tokenizer.encode(text)) if text else 0

        binning = o200k_counter() if self.counter == "o200k" else None
        out = []
        for index, (_, row) in enumerate(self.dataset.rows):
            chat = row.chat()
            contents = sum(model_count(m.content) for m in chat)
            answer = model_count(row.answer)
            binned = contents + answer
            if binning is not None:
                binned = sum(binning(m.content) for m in chat) + binning(row.answer)
            system = any(m.role == "system" for m in chat)
            out.append(Counted(index, contents, answer, binned, len(chat), system))
        self._counts[key] = out
        return out

    def _groups(self, ctx: BuildContext) -> dict[tuple[int, int], list[Counted]]:
        """Return the rows by (needle count, bin), the bins asked for only, in file order."""
        groups: dict[tuple[int, int], list[Counted]] = {}
        rows = self.dataset.rows
        for counted in self._counted(ctx):
            upper = bin_of(counted.binned)
            if not self.bins or upper in self.bins:
                needles = rows[counted.index][1].n_needles
                groups.setdefault((needles, upper), []).append(counted)
        if not groups and self.bins:
            raise UsageError(
                f"no MRCR row of the data falls in the bins {', '.join(map(bin_label, self.bins))} "
                f"(counted in {'o200k_base' if self.counter == 'o200k' else 'the model tokenizer'})"
                ": choose other --lengths"
            )
        return dict(sorted(groups.items()))

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per needle count and bin (`--limit N`: N rows of each), none built."""
        return [
            BuildCell(f"{needles}-needle", upper, len(members))
            for (needles, upper), members in self._groups(ctx).items()
        ]

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` rows of one needle count and bin as samples, made as pulled."""
        needles = int(task.split("-", 1)[0])
        members = self._groups(ctx).get((needles, length), [])
        for counted in members[: len(members) if count is None else count]:
            yield self._sample(ctx, counted, length)

    def _sample(self, ctx: BuildContext, counted: Counted, upper: int) -> Sample:
        sample_id, row = self.dataset.rows[counted.index]
        frame = ctx.fit("")  # the chat template around one message: counted, or a margin
        template, margin = frame.counted, frame.margin
        if counted.system:
            # A template that adds a default system prompt to a lone user message drops it when
            # the chat has its own: reserved, not counted as sent (never more than was sent).
            template, margin = 0, margin + frame.counted
        prompt = counted.contents + template
        margin += MESSAGE_MARGIN * (counted.messages - 1)
        answer = counted.answer
        budget = ctx.output_budget(ANSWER_FACTOR * answer + ANSWER_SLACK)
        room = None if ctx.context_length is None else ctx.context_length - prompt - margin
        if ctx.max_tokens_override is None and room is not None:
            # Room for the gold answer is what must fit (as lm-evaluation-harness's MRCR keeps a
            # row); past it the budget is cut to the room left, never the prompt.
            budget = max(min(budget, room), answer)
        needed = prompt + margin + budget
        return Sample(
            id=sample_id,
            task=f"{row.n_needles}-needle",
            language="en",
            context=row.prompt,
            question=row.chat()[-1].content,
            gold=(row.answer,),
            length=_length(upper, needed, ctx.context_length),
            max_tokens=budget,
            prompt_tokens=prompt,
            meta={
                "prefix": row.random_string_to_prepend,
                "n_needles": row.n_needles,
                "bin": upper,
                "bin_label": bin_label(upper),
                "bin_tokens": counted.binned,
                "bins_counted_in": self.counter,
                "answer_tokens": answer,
                "needed_tokens": needed,
                "messages": counted.messages,
                "desired_msg_index": row.desired_msg_index,
                "date_added": row.date_added,
                "data": self.dataset.identity,
            },
        )

    def timeout_s(self, sample: Sample) -> float:
        return 120.0 + 2.0 * sample.length / 1000.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """The card's grade of the whole answer; an answer cut by its budget scores 0 (see
        ANSWER_SLACK), with the cut text's ratio and the most the whole could score as evidence."""
        gold, prefix = sample["gold"][0], sample["meta"]["prefix"]
        graded = grade(generation.text, gold, prefix)
        evidence: dict[str, Any] = {"prefixed": graded.prefixed, "ratio": round(graded.ratio, 6)}
        if generation.status != "length":
            return Score(graded.ratio, 1.0, evidence=evidence)
        rest, answer = generation.text.removeprefix(prefix), gold.removeprefix(prefix)
        bound = 2 * len(answer) / (len(rest) + len(answer)) if rest or answer else 0.0
        evidence.update(cut=True, whole_at_most=round(bound, 6))
        return Score(0.0, 1.0, evidence=evidence)

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return mrcr_summary(rows)


def _length(upper: int, needed: int, context: int | None) -> int:
    """Return a sample's length: its bin, or what it needs when it cannot fit the model.

    The runner skips a sample whose length exceeds the model's context, saying it needs that many
    tokens: a row too long is given its real need (skipped, never truncated); a row that fits is
    grouped under its bin, or under the context when the bin is longer (a row of the 8k bin that
    fits a 4K model is sent, and shown at 4096).
    """
    if context is None:
        return upper
    if needed > context:
        return needed
    return min(upper, context)


__all__ = ["ChatTemplate", "MrcrSuite"]
