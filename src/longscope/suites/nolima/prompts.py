"""NoLiMa's prompts and needle placement, as the authors' code builds them.

Source: adobe-research/NoLiMa@7532e4eebf095c5540dc256900a63968da58a9d0:
`evaluation/run_tests.py` (default template, expansion of an experiment into tests, seeds),
`evaluation/async_evaluate.py` (depth grid, character draw, template filling),
`data/book_haystack.py` (`BookHaystack._generate_w_needle_placement`: where the needle goes and
what the context length counts), `evaluation/async_api_connector.py` (which system message is sent).

How a prompt is made, upstream:
1. Each (question type, test) of an experiment is one test named `{id}_{test id}_{question type}`;
   its needle has `{1}`, `{2}`, ... replaced by the test's `input_args` one after the other, its
   question has only the LAST placeholder it contains replaced (the code replaces on the original
   question each time: `full_question = question.replace(...)`), reproduced here as written.
2. For each book (haystack file) and each depth of `linspace(0, 100, 26)` percent, with numpy's
   legacy generator seeded once per (test, book) at `42 + int(id[:4]) + book index`, a `{CHAR}`
   needle draws one name of `character_set` per depth, in depth order; that name fills `{CHAR}` in
   needle and question and is the only gold answer.
3. The book is tokenized with the model's own tokenizer (no special tokens). Positions of tokens
   whose text holds a newline (plus position 0) are the places a needle may go. The needle goes
   after the first such position at or past `depth * (L + 1)` tokens, and the window is the `L`
   tokens around it that put that position `round(L * depth)` tokens from the window's start.
   The text before the needle is cut at its last newline; the needle joins that line after a
   space and ends with a newline. So `L` counts book tokens only, and one of them (the newline
   token) is dropped: the haystack holds `L - 1` book tokens (`L` at depth 100%, where the cut
   text runs through the line end just past the window), plus the needle, a space and a newline;
   template, question and system message come on top. At depth 0 the first book token is dropped
   (the text before position 0 has no newline to cut at) and the needle opens the haystack.
4. The filled template (`task_template.format(haystack=..., question=...)`) is the user message.
   The system message is the connector's default, "You are a helpful assistant", for OpenAI,
   Azure, vLLM, Gemini and non-Claude Bedrock models; Claude on Bedrock has no default, so the
   experiment's own `system_prompt` is sent when it is not empty (else no system message).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from longscope.suites.nolima.schema import CHAR, Experiment
from longscope.suites.nolima.scoring import in_published_score
from longscope.text.tokenizers import Tokenizer
from longscope.types import Message, PromptMode

DEFAULT_TASK_TEMPLATE = (
    "You will answer a question based on the following book snippet:\n\n{haystack}\n\n"
    "Use the information provided in the book snippet to answer the question. Your answer should "
    "be short and based on either explicitly stated facts or strong, logical inferences.\n\n"
    "Question: {question}\n\n Return only the final answer with no additional explanation or "
    "reasoning."
)
"""`run_tests.py`'s DEFAULT_TASK_TEMPLATE, character for character (note the space before
`Return`)."""

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant"
"""`APIConnector.SYSTEM_PROMPT` for every provider but Claude on Bedrock (no final period)."""

BASE_SEED = 42
"""`run_tests.py --base_seed` default."""

DEPTH_MIN, DEPTH_MAX, DEPTH_INTERVALS = 0.0, 100.0, 26
"""Every published run configuration: depths `linspace(0, 100, 26)` percent (0, 4, ..., 100)."""

LENGTHS: tuple[int, ...] = (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)
"""The run configurations' `context_length`s: decimal thousands (`1K` is 1000 book tokens)."""
PAPER_MAX = max(LENGTHS)
"""The longest length the paper ran (32K): longer ones are labelled beyond the paper."""


def length_label(tokens: int) -> str:
    """Return a length as NoLiMa writes it: `1K` for 1000, `250` below 1000."""
    return f"{tokens // 1000}K" if tokens % 1000 == 0 and tokens >= 1000 else str(tokens)


SystemMode = Literal["default", "needle_set"]
"""`default`: the connector's "You are a helpful assistant"; `needle_set`: the experiment's own
system prompt when not empty (the Claude-on-Bedrock path)."""


@dataclass(frozen=True)
class NeedleCase:
    """One authors' test: an experiment's question type and test, placeholders `{n}` filled."""

    test_name: str
    """`{id}_{test id}_{question type}`, the authors' name (and result folder)."""
    experiment_id: str
    test_id: str
    question_type: str
    needle: str
    """The needle with `{n}` filled; `{CHAR}` still in it when the experiment has one."""
    question: str
    gold_answers: tuple[str, ...]
    """The test's gold answers (empty for a `{CHAR}` needle: its gold is the drawn name)."""
    character_set: tuple[str, ...]
    system_prompt: str
    task_template: str
    seed: int
    """`BASE_SEED + int(id[:4])`; the book's index is added per book."""
    distractor: str | None


def expand(experiment: Experiment, base_seed: int = BASE_SEED) -> tuple[NeedleCase, ...]:
    """Return an experiment's tests in the authors' order: question types, then tests."""
    cases = []
    for question_type, question in experiment.questions.items():
        for test_id, test in experiment.tests.items():
            needle = experiment.needle
            full_question = question
            distractor = None
            for number, arg in enumerate(test.input_args, start=1):
                placeholder = "{" + str(number) + "}"
                if placeholder in question:
                    # Upstream replaces on the original question every time: only the last
                    # placeholder present survives (kept, so prompts match the published runs).
                    full_question = question.replace(placeholder, arg)
                if placeholder in needle:
                    needle = needle.replace(placeholder, arg)
                template = (experiment.distractors or {}).get(question_type)
                if template is not None and placeholder in template:
                    distractor = template.replace(placeholder, arg)
            cases.append(
                NeedleCase(
                    test_name=f"{experiment.id}_{test_id}_{question_type}",
                    experiment_id=experiment.id,
                    test_id=test_id,
                    question_type=question_type,
                    needle=needle,
                    question=full_question,
                    gold_answers=test.gold_answers or (),
                    character_set=experiment.character_set or (),
                    system_prompt=experiment.system_prompt,
                    task_template=experiment.task_template or DEFAULT_TASK_TEMPLATE,
                    seed=base_seed + experiment.seed_offset,
                    distractor=distractor,
                )
            )
    return tuple(cases)


def depth_grid(
    lo: float = DEPTH_MIN, hi: float = DEPTH_MAX, intervals: int = DEPTH_INTERVALS
) -> tuple[float, ...]:
    """Return the depths (fractions) the authors place the needle at: `linspace(lo, hi, n) / 100`."""
    return tuple(float(i / 100) for i in np.linspace(lo, hi, intervals))


def draw_characters(character_set: tuple[str, ...], seed: int, count: int) -> tuple[str, ...]:
    """Return the names numpy's legacy generator draws, one per depth, after `seed(seed)`."""
    state = np.random.RandomState(seed)
    return tuple(str(state.choice(list(character_set))) for _ in range(count))


@dataclass(frozen=True)
class Instance:
    """A test at one depth: the needle and question as sent, and the answers that count."""

    needle: str
    question: str
    gold_answers: tuple[str, ...]
    character: str | None


def instantiate(case: NeedleCase, character: str | None) -> Instance:
    """Return the case with `{CHAR}` filled by `character` (the gold), as evaluate() does."""
    if CHAR not in case.needle:
        return Instance(case.needle, case.question, case.gold_answers, None)
    if character is None:
        raise ValueError(f"{case.test_name}: the needle has {CHAR}; a character is needed")
    return Instance(
        needle=case.needle.replace(CHAR, character),
        question=case.question.replace(CHAR, character),
        gold_answers=(character,),
        character=character,
    )


@dataclass(frozen=True)
class BookTokens:
    """A book as the authors' BookHaystack caches it: its tokens and where lines end."""

    ids: tuple[int, ...]
    line_ends: tuple[int, ...]
    """Position 0, then every position whose token's text holds a newline."""


def tokenize_book(text: str, tokenizer: Tokenizer) -> BookTokens:
    """Return a book's tokens and its needle positions (tokens decoding to text with a newline)."""
    ids = tuple(tokenizer.encode(text))
    ends = [0] + [i for i, token in enumerate(ids) if "\n" in tokenizer.decode([token])]
    return BookTokens(ids, tuple(ends))


@dataclass(frozen=True)
class Placement:
    """A haystack of `context_length` book tokens with the needle placed at `depth`."""

    text: str
    depth: float
    token_depth: int
    """`round(context_length * depth)`: the needle's line end, counted from the window's start."""
    context_length: int
    start: int
    """The window's first token in the book."""
    line_end: int
    """The book position of the newline token the needle follows."""


def place_needle(
    book: BookTokens,
    needle: str,
    depth: float,
    context_length: int,
    tokenizer: Tokenizer,
    shift: int = 0,
) -> Placement:
    """Return the authors' haystack: `context_length` book tokens, the needle at `depth`."""
    ends = np.array(book.line_ends)
    # The same float operations as book_haystack.py, so ties and rounding fall the same way.
    delta = (ends - shift) / (context_length + 1) - depth
    delta[delta < 0] = np.inf
    closest = int(np.argmin(delta))
    line_end = int(ends[closest])
    token_depth = int(np.round(context_length * depth))
    start = line_end - token_depth
    end = start + context_length
    if start < 0 or end > len(book.ids):
        raise ValueError(
            f"the book ({len(book.ids)} tokens) is too short for {context_length} tokens with the "
            f"needle at depth {depth}"
        )
    pre = tokenizer.decode(list(book.ids[start : line_end + 1]))
    pre = pre[: max(pre.rfind("\n"), 0)]
    post = tokenizer.decode(list(book.ids[line_end + 1 : end]))
    return Placement(
        text=pre + " " + needle + "\n" + post,
        depth=depth,
        token_depth=token_depth,
        context_length=context_length,
        start=start,
        line_end=line_end,
    )


@dataclass(frozen=True)
class RenderedPrompt:
    """What is sent: chat messages (chat mode) or one plain prompt (completion mode)."""

    mode: PromptMode
    messages: tuple[Message, ...]
    prompt: str
    user: str
    """The filled template: the user message, or the whole completion prompt."""


def render(
    case: NeedleCase,
    instance: Instance,
    haystack: str,
    mode: PromptMode,
    system: SystemMode = "default",
) -> RenderedPrompt:
    """Return the prompt the authors send for `instance` in `haystack` (see the module doc)."""
    user = case.task_template.format(haystack=haystack, question=instance.question)
    if mode == "completion":
        # The authors only query chat endpoints; a base model gets the filled template alone.
        return RenderedPrompt(mode, (), user, user)
    if system == "default":
        messages: tuple[Message, ...] = (Message("system", DEFAULT_SYSTEM_PROMPT),)
    elif case.system_prompt != "":
        messages = (Message("system", case.system_prompt),)
    else:
        messages = ()
    return RenderedPrompt(mode, (*messages, Message("user", user)), "", user)


def build_prompt(
    case: NeedleCase,
    book: BookTokens,
    book_index: int,
    depth_index: int,
    context_length: int,
    tokenizer: Tokenizer,
    mode: PromptMode,
    system: SystemMode = "default",
) -> tuple[RenderedPrompt, Instance, Placement]:
    """Return the prompt of one (test, book, depth, length) cell, character draw included."""
    depths = depth_grid()
    character = None
    if CHAR in case.needle:
        character = draw_characters(case.character_set, case.seed + book_index, len(depths))[
            depth_index
        ]
    instance = instantiate(case, character)
    placement = place_needle(book, instance.needle, depths[depth_index], context_length, tokenizer)
    return render(case, instance, placement.text, mode, system), instance, placement


@dataclass(frozen=True)
class Cell:
    """One request of the grid: a test in one book at one depth and length."""

    length: int
    case: NeedleCase
    book_index: int
    depth_index: int

    @property
    def sample_id(self) -> str:
        """Return a stable id: test name, book, length and depth (as a percentage)."""
        depth = round(depth_grid()[self.depth_index] * 100)
        return f"{self.case.test_name}/book{self.book_index + 1}/{self.length}/d{depth:03d}"


def iter_cells(
    cases: Iterable[NeedleCase],
    books: int,
    lengths: Iterable[int] = LENGTHS,
    depths: int = DEPTH_INTERVALS,
    include_direct: bool = False,
) -> Iterator[Cell]:
    """Yield the grid lazily in the authors' order: lengths, books, tests, depths.

    Tests the published numbers leave out (`direct` in the name) are skipped unless asked for.
    """
    kept = [c for c in cases if include_direct or in_published_score(c.test_name)]
    for length in lengths:
        for book_index in range(books):
            for case in kept:
                for depth_index in range(depths):
                    yield Cell(length, case, book_index, depth_index)
