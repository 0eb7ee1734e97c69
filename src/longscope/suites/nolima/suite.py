"""NoLiMa as a longscope suite: the authors' grid of needle tests, built lazily, scored their way.

A cell is one question type (`onehop`, `twohop`, ...) at one context length; its samples come in
the authors' order (books, then tests, then depths), each made when the runner pulls it, so
`--limit N` builds N per cell and nothing more. A context length counts book tokens in the
model's own tokenizer, as the authors' `BookHaystack` counts them (`prompts.place_needle`);
the prompt adds the needle, the template and the question on top. A sample whose prompt and
output cannot fit the model is given the tokens it needs as its length, so the runner skips it
(never truncated); such a length leaves the means and the curve, as the authors run only the
lengths a model holds.

The score is the authors' 0/1 metric (`contains` in every published run); a length's score is
the mean over its tests, books and depths; the base score and the effective length follow the
README (`scoring.base_score`, `scoring.effective`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildCell, BuildContext, Suite
from longscope.suites.nolima.data import (
    LICENCE_NAME,
    NEEDLE_SETS,
    REPO,
    NoLiMaData,
    load_hub,
    load_local,
    notice_on_first_use,
)
from longscope.suites.nolima.prompts import (
    LENGTHS,
    PAPER_MAX,
    BookTokens,
    NeedleCase,
    depth_grid,
    draw_characters,
    expand,
    instantiate,
    length_label,
    place_needle,
    render,
    tokenize_book,
)
from longscope.suites.nolima.schema import CHAR
from longscope.suites.nolima.scoring import (
    METRICS,
    PUBLISHED_METRIC,
    in_published_score,
    score_response,
)
from longscope.suites.nolima.summary import nolima_summary
from longscope.summary import Summary
from longscope.text.safe_text import visible
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

RUN_SETS = tuple(name for name in NEEDLE_SETS if name != "distractor")
"""Needle sets the suite runs (the distractor set places a second sentence: not yet)."""
SYSTEMS = ("default", "needle_set")
SYSTEM_MARKERS = 8
"""Tokens a chat template adds around a system message (about 5 in ChatML, Llama 3, Gemma)."""
_DECIMAL = {"k": 1000, "m": 1000 * 1000}


def parse_nolima_lengths(values: Sequence[Any]) -> tuple[int, ...]:
    """Return lengths in book tokens from `250`, `1k`, `32K` (decimal: NoLiMa's 1K is 1000)."""
    out = []
    for value in values:
        text = str(value).strip().lower()
        unit = _DECIMAL.get(text[-1:], 1)
        number = text[:-1] if unit > 1 else text
        try:
            tokens = float(number) * unit
        except ValueError:
            tokens = -1.0
        if tokens < 1 or tokens % 1 or tokens > 16_000_000:
            raise UsageError(
                f"bad NoLiMa length {visible(str(value))!r}: use book-token counts like 250, 1k "
                "or 32k (k = 1000, as NoLiMa counts)"
            )
        out.append(int(tokens))
    if len(set(out)) != len(out):
        shown = visible(", ".join(map(str, values)))
        raise UsageError(f"NoLiMa lengths {shown} repeat a length")
    return tuple(sorted(out))


def depth_label(depth: float) -> str:
    """Return a depth (fraction) as a percentage without trailing zeros: `4`, `12.5`."""
    return f"{round(depth * 100, 4):g}"


class NoLiMaTemplate:
    """The authors' prompt: the experiment's task template, filled, after their system message."""

    completion_stop: tuple[str, ...] = ()

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return (prompt, messages) as `prompts.render` makes them for `sample`."""
        meta = sample.meta
        user = str(meta["task_template"]).format(haystack=sample.context, question=sample.question)
        if mode == "completion":
            return user, ()
        system = meta.get("system")
        head = (Message("system", str(system)),) if system else ()
        return "", (*head, Message("user", user))

    def parts(self, sample: Sample, mode: PromptMode) -> PromptParts:
        """Return the user text (or prompt) cut around the haystack."""
        marker = "\x00haystack\x00"
        text = str(sample.meta["task_template"]).format(haystack=marker, question=sample.question)
        head, _, tail = text.partition(marker)
        return PromptParts(head, sample.context, tail)


class NoLiMaSuite(Suite):
    """NoLiMa (adobe-research, ICML 2025): needles without literal matches (docs/suites/nolima.md)."""

    name = "nolima"
    title = "NoLiMa"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=192, temperature=0.0)
    """Every model config of the repository: max_tokens 192, temperature 0 (greedy)."""
    template = NoLiMaTemplate()
    DESCRIPTION = (
        "NoLiMa: needle in a haystack without literal matches, 250-32K book tokens "
        "(-S data=DIR|hub; non-commercial licence)"
    )
    OPTIONS = (
        Param(
            "data",
            "str",
            None,
            "the dataset: a folder in its layout (needlesets/, haystack/rand_shuffle/) or hub "
            f"({REPO}, downloaded once into the cache) (required)",
        ),
        Param(
            "needle_set",
            "choice",
            "main",
            "main: needle_set.json (the README's table); hard: the 10 hardest pairs; mc, direct, "
            "cot: the repository's other sets",
            choices=RUN_SETS,
        ),
        Param(
            "lengths",
            "strs",
            tuple(length_label(n) for n in LENGTHS),
            "context lengths in book tokens of the model's tokenizer, k = 1000 as NoLiMa counts "
            "(longer than 32K: labelled beyond the paper)",
        ),
        Param(
            "depths",
            "depths",
            depth_grid(),
            "needle depths, fractions or percents (the authors': linspace(0, 100, 26), every 4%)",
        ),
        Param("books", "int", None, "use the first N haystack books (none given: all)", low=1),
        Param(
            "direct",
            "bool",
            False,
            "also run question types named `direct` (the published numbers leave them out)",
        ),
        Param(
            "system",
            "choice",
            "default",
            "chat mode's system message: default (\"You are a helpful assistant\", the authors' "
            "connector for every published API model) or needle_set (the set's own, as for Claude)",
            choices=SYSTEMS,
        ),
        Param(
            "metric",
            "choice",
            PUBLISHED_METRIC,
            "the authors' metric: contains (every published run), EM, lastline_EM, "
            "lastline_contains",
            choices=METRICS,
            scoring=True,
        ),
    )

    def __init__(
        self,
        data: str | None,
        needle_set: str,
        lengths: Sequence[Any],
        depths: Sequence[float],
        books: int | None,
        direct: bool,
        system: str,
        metric: str,
    ) -> None:
        if not data:
            raise UsageError(
                "nolima needs its data: -S data=DIR (a folder in the dataset's layout) or "
                f"-S data=hub ({REPO}; `longscope data nolima` downloads it)"
            )
        if needle_set not in RUN_SETS:
            raise UsageError(f"-S needle_set={needle_set}: use one of {', '.join(RUN_SETS)}")
        if metric not in METRICS:
            raise UsageError(f"-S metric={metric}: use one of {', '.join(METRICS)}")
        if system not in SYSTEMS:
            raise UsageError(f"-S system={system}: use one of {', '.join(SYSTEMS)}")
        if not depths:
            raise UsageError("-S depths: give at least one depth")
        self.data = str(data)
        self.needle_set = needle_set
        self.lengths = parse_nolima_lengths(lengths)
        self.depths = tuple(float(d) for d in depths)
        labels = [depth_label(d) for d in self.depths]
        if len(set(labels)) != len(labels):
            raise UsageError(f"-S depths {', '.join(labels)}: two depths are the same percent")
        self.books = books
        self.direct = bool(direct)
        self.system = system
        self.metric = metric
        self._tokens: dict[tuple[str, int], BookTokens] = {}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> NoLiMaSuite:
        """Return the suite of stored parameters (lengths stored as token counts) or `-S` values."""
        values = {p.name: params.get(p.name, p.default) for p in cls.OPTIONS}
        return cls(**values)

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data nolima` downloads (pinned by sha256 where known)."""
        from longscope.suites.nolima.data import sources

        return sources()

    @classmethod
    def published(cls) -> Any:
        """Return the README's table for `compare --published nolima`."""
        from longscope.suites.nolima.published import as_published

        return as_published()

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "needle_set": self.needle_set,
            "lengths": list(self.lengths),
            "depths": list(self.depths),
            "books": self.books,
            "direct": self.direct,
            "system": self.system,
            "metric": self.metric,
        }

    # -- data --------------------------------------------------------------------------------

    @functools.cached_property
    def dataset(self) -> NoLiMaData:
        """Return the needle set and books, read (and checked against their pins) once."""
        if self.data == "hub":
            data = load_hub(self.needle_set)
        else:
            # A folder of the user's is read as it is and recorded by its own digests; a file
            # that differs from its pin makes the run not comparable (`differences`).
            data = load_local(Path(self.data), self.needle_set, allow_unpinned=True)
        if self.books is not None and self.books > len(data.books):
            raise UsageError(
                f"-S books={self.books}: the data has {len(data.books)} haystack books"
            )
        return data

    @property
    def version(self) -> str:
        return f"nolima-1/{self.dataset.source}"

    def prepare(self) -> None:
        """Read and check the data, and print the licence the first time NoLiMa's data is used."""
        _ = self.dataset
        from longscope.download import cache_root

        notice = notice_on_first_use(cache_root())
        if notice is not None:
            sys.stderr.write(notice.rstrip("\n") + "\n")

    def cases(self) -> tuple[NeedleCase, ...]:
        """Return the tests of the needle set in the authors' order (`direct` ones only if asked)."""
        return tuple(
            case
            for experiment in self.dataset.experiments
            for case in expand(experiment)
            if self.direct or in_published_score(case.test_name)
        )

    def _books(self) -> int:
        return len(self.dataset.books) if self.books is None else self.books

    def question_types(self) -> tuple[str, ...]:
        """Return the question types run, in the needle set's order."""
        return tuple(dict.fromkeys(case.question_type for case in self.cases()))

    # -- the lazy build ----------------------------------------------------------------------

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per question type and length, nothing built (books x tests x depths)."""
        per_type: dict[str, int] = {}
        for case in self.cases():
            per_type[case.question_type] = per_type.get(case.question_type, 0) + 1
        return [
            BuildCell(kind, length, count * self._books() * len(self.depths))
            for length in self.lengths
            for kind, count in per_type.items()
        ]

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` samples of one question type at one length, made as pulled."""
        cases = [case for case in self.cases() if case.question_type == task]
        made = 0
        for book_index in range(self._books()):
            for case in cases:
                for depth_index in range(len(self.depths)):
                    if count is not None and made >= count:
                        return
                    yield self._sample(ctx, case, book_index, depth_index, length)
                    made += 1

    def _book(self, ctx: BuildContext, index: int) -> BookTokens:
        key = (ctx.tokenizer.name, index)
        if key not in self._tokens:
            self._tokens[key] = tokenize_book(self.dataset.books[index].text, ctx.tokenizer)
        return self._tokens[key]

    def _sample(
        self, ctx: BuildContext, case: NeedleCase, book_index: int, depth_index: int, length: int
    ) -> Sample:
        depth = self.depths[depth_index]
        character = None
        if CHAR in case.needle:
            # The authors draw one name per depth, in depth order, seeded per (test, book).
            drawn = draw_characters(case.character_set, case.seed + book_index, len(self.depths))
            character = drawn[depth_index]
        instance = instantiate(case, character)
        book = self.dataset.books[book_index]
        try:
            placement = place_needle(
                self._book(ctx, book_index), instance.needle, depth, length, ctx.tokenizer
            )
        except ValueError as error:
            raise UsageError(
                f"NoLiMa book {book.name}: {error}; choose shorter -S lengths"
            ) from None
        rendered = render(case, instance, placement.text, ctx.prompt_mode, self.system)
        head = rendered.messages[0] if rendered.messages else None
        system = head.content if head is not None and head.role == "system" else ""
        fit = ctx.fit(rendered.prompt or rendered.user)
        prompt = fit.counted + (len(ctx.tokenizer.encode(system)) if system else 0)
        # The system message's role markers: reserved, not counted as sent.
        margin = fit.margin + (SYSTEM_MARKERS if system else 0)
        budget = ctx.output_budget(self.default_config.max_tokens)
        needed = prompt + margin + budget
        fits = ctx.context_length is None or needed <= ctx.context_length
        sample_id = f"{case.test_name}/book{book_index + 1}/{length}/d{depth_label(depth)}"
        return Sample(
            id=sample_id,
            task=case.question_type,
            language="en",
            context=placement.text,
            question=instance.question,
            gold=instance.gold_answers,
            length=length if fits else needed,
            max_tokens=budget,
            prompt_tokens=prompt,
            meta={
                "test_name": case.test_name,
                "experiment": case.experiment_id,
                "test": case.test_id,
                "book": book.name,
                "depth": depth_label(depth),
                "context_length": length,
                "beyond_paper": length > PAPER_MAX,
                "character": character,
                "needle": instance.needle,
                "task_template": case.task_template,
                "system": system,
                "needed_tokens": needed,
                "data": self.dataset.source,
                "needle_set": self.needle_set,
            },
        )

    # -- scoring -----------------------------------------------------------------------------

    def cluster_key(self, sample: dict[str, Any]) -> str:  # type: ignore[override]
        """The needle test (needle and question), asked at every depth, book and length."""
        return str(sample.get("meta", {}).get("test_name") or sample.get("id"))

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """Return the authors' 0/1 metric of the response against the sample's gold answers."""
        gold = list(sample["gold"])
        value = score_response(generation.text, gold, self.metric)  # type: ignore[arg-type]
        return Score(float(value), 1.0, evidence={"metric": self.metric})

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return nolima_summary(rows, self.differences(), LICENCE_NAME)

    def differences(self) -> list[str]:
        """Return how this run's options differ from the README's table (empty: the same).

        What the data was (pinned or not, how many books) is read from the stored rows by the
        summary, so `score` and `report` need no data folder.
        """
        out = []
        if self.needle_set != "main":
            out.append(f"needle set {self.needle_set} (the table: needle_set.json)")
        if self.metric != PUBLISHED_METRIC:
            out.append(f"metric {self.metric} (the table: contains)")
        if self.depths != depth_grid():
            out.append(f"{len(self.depths)} depths (the table: linspace(0, 100, 26))")
        if self.direct:
            out.append("direct questions included (the table leaves them out)")
        return out


__all__ = ["NoLiMaSuite", "NoLiMaTemplate", "length_label", "parse_nolima_lengths"]
