"""RULER's inputs: word lists from wonderwords, the essay haystack and the QA sets from local files.

Formats are RULER's own: the essays as `{"text": ...}` (its `json/PaulGrahamEssays.json`), SQuAD v2
dev JSON (`data[].paragraphs[].{context, qas[].{question, answers[].text, is_impossible}}`) and
HotpotQA dev JSON (`[{question, answer, context: [[title, [sentences]]]}]`), read as RULER reads them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.errors import UsageError

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
# Sentence ends: RULER cuts with nltk's punkt; a period/?/! before a space and a capital or quote
# is the same cut for the essays (punkt also keeps abbreviations like "Mr." whole).
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = ("Mr.", "Mrs.", "Ms.", "Dr.", "St.", "vs.", "e.g.", "i.e.", "etc.", "U.S.")


@functools.cache
def wonderwords_lists() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Return wonderwords' (nouns, adjectives, verbs), as RULER reads them."""
    import importlib.resources

    try:
        assets = importlib.resources.files("wonderwords") / "assets"
    except ModuleNotFoundError as exc:
        raise UsageError(
            "the ruler suite needs the wonderwords package: pip install wonderwords"
        ) from exc

    def read(name: str) -> tuple[str, ...]:
        with (assets / name).open("r", encoding="utf-8") as f:  # as wonderwords reads them
            return tuple(line.rstrip() for line in f.readlines())

    return read("nounlist.txt"), read("adjectivelist.txt"), read("verblist.txt")


class PairWords(Sequence[str]):
    """RULER's needle keys: `sorted(set(f"{adj}-{noun}"))` over wonderwords' lists, by index.

    RULER builds this 6.2-million-string list to draw from it; here an index maps to its string
    without the list: each adjective's strings are one sorted run (its nouns in order), and runs
    whose ranges overlap (one adjective a prefix of another) are merged and sorted once.
    """

    def __init__(self, adjs: Sequence[str], nouns: Sequence[str]) -> None:
        self.nouns = sorted(set(nouns))
        self.noun_index = {n: i for i, n in enumerate(self.nouns)}
        last = self.nouns[-1]
        spans = sorted((f"{a}-{self.nouns[0]}", f"{a}-{last}", a) for a in set(adjs))
        self.blocks: list[tuple[str, ...]] = []
        """Each block: one adjective, or several whose runs interleave."""
        for lo, hi, adj in spans:
            if self.blocks and lo <= self._top:
                self.blocks[-1] += (adj,)
                self._top = max(self._top, hi)
            else:
                self.blocks.append((adj,))
                self._top = hi
        self.starts = [0]
        for block in self.blocks:
            self.starts.append(self.starts[-1] + len(block) * len(self.nouns))
        self._merged: dict[int, list[tuple[str, str]]] = {}

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        adj, noun = self.parts(index)
        return f"{adj}-{noun}"

    def parts(self, index: int) -> tuple[str, str]:
        """Return the (adjective, noun) of the string at `index`."""
        if not 0 <= index < len(self):
            raise IndexError(index)
        b = bisect_right(self.starts, index) - 1
        block, offset = self.blocks[b], index - self.starts[b]
        if len(block) == 1:
            return block[0], self.nouns[offset]
        if b not in self._merged:
            self._merged[b] = [
                (a, n) for _, a, n in sorted((f"{a}-{n}", a, n) for a in block for n in self.nouns)
            ]
        return self._merged[b][offset]


@functools.cache
def pair_words() -> PairWords:
    """Return RULER's needle keys (`adjective-noun`) as a sequence (see `PairWords`)."""
    nouns, adjs, _ = wonderwords_lists()
    return PairWords(adjs, nouns)


@functools.cache
def key_words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return (adjectives, nouns), each sorted and deduplicated: keys are `adjective-noun` pairs."""
    nouns, adjs, _ = wonderwords_lists()
    return tuple(sorted(set(adjs))), tuple(sorted(set(nouns)))


@functools.cache
def cwe_words() -> tuple[str, ...]:
    """Return nouns + adjectives + verbs, sorted and deduplicated (shuffled per sample by RULER's seed)."""
    nouns, adjs, verbs = wonderwords_lists()
    return tuple(sorted(set(nouns + adjs + verbs)))


def _read_json(path: str | Path, what: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{what} file {str(path)!r} not found: give an existing file")
    try:
        return json.loads(file.read_text("utf-8"))
    except RecursionError:  # nested deeper than the parser's stack: no RULER file is
        raise UsageError(
            f"{what} file {str(path)!r} is nested too deeply to be {what} JSON: give {what} JSON"
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(
            f"{what} file {str(path)!r} is not UTF-8 JSON ({exc}): give {what} JSON"
        ) from exc


class _Essays(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str


def split_sentences(text: str) -> list[str]:
    """Return the sentences of whitespace-normalised `text` (abbreviations kept whole)."""
    pieces = _SENTENCE_END.split(text)
    out: list[str] = []
    for piece in pieces:
        if out and out[-1].endswith(_ABBREVIATIONS):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [p for p in out if p]


Splitter = Callable[[str], list[tuple[int, int]]]
"""Sentence spans (start, end) of a text."""


def _regex_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for sentence in split_sentences(text):
        start = text.index(sentence, start)
        spans.append((start, start + len(sentence)))
        start += len(sentence)
    return spans


PUNKT_DIRS: list[Path] = []
"""Further folders holding `tokenizers/punkt_tab/english/` (the data cache adds its own)."""


@functools.cache
def punkt_splitter() -> Splitter | None:
    """Return nltk's English punkt (what RULER's `sent_tokenize` runs), or None without it.

    RULER cuts the essay with nltk's `sent_tokenize`, which reads the `punkt_tab` model from an
    nltk data folder; the same spans come from the same model here.
    """
    try:
        punkt_class, data = _import_punkt()
    except ImportError:
        return None
    for folder in PUNKT_DIRS:
        if str(folder) not in data.path:
            data.path.append(str(folder))
    try:
        punkt = punkt_class("english")
    except LookupError:
        return None
    return lambda text: list(punkt.span_tokenize(text))


def _import_punkt() -> tuple[Any, Any]:
    """Return (nltk's PunktTokenizer, nltk.data); importing nltk takes seconds (it loads most
    of itself, scipy.stats among it), paid once and only by runs with essay tasks."""
    import nltk.data
    from nltk.tokenize.punkt import PunktTokenizer

    return PunktTokenizer, nltk.data


SPANS_DIRS: list[Path] = []
"""Where essays' sentence spans are kept between runs (the suite adds the data cache's)."""


def _punkt_dir() -> Path | None:
    """Return the punkt_tab English folder nltk would load (its data path, then PUNKT_DIRS)."""
    roots = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    roots += [str(Path.home() / "nltk_data")]
    roots += [
        os.path.join(sys.prefix, d) for d in ("nltk_data", "share/nltk_data", "lib/nltk_data")
    ]
    roots += ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data"]
    roots += ["/usr/local/lib/nltk_data", *map(str, PUNKT_DIRS)]
    for root in roots:
        folder = Path(root) / "tokenizers" / "punkt_tab" / "english"
        if folder.is_dir():
            return folder
    return None


def _model_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"):
        file = folder / name
        digest.update(file.read_bytes() if file.is_file() else b"-")
    return digest.hexdigest()[:16]


class EssayHaystack:
    """RULER's essay haystack: its words (`re.sub(r"\\s+", " ", text).split(" ")`, repeated as it
    repeats them) and the sentences `sent_tokenize` cuts from the first n of them.

    The sentences of a prefix are the long text's sentences up to the prefix's end (a boundary is
    decided by the words on its two sides): the long text is cut once, not once per size tried,
    and its spans are kept (keyed by the essay and the punkt model) so that a later run needs
    neither nltk's import (seconds) nor the cut.
    """

    def __init__(self, words: Sequence[str], key: str, splitter: Splitter | None = None) -> None:
        self.words = list(words)
        self.key = key
        """The essay text's digest (with the punkt model's, names the kept spans)."""
        self.splitter = splitter
        self.exact = True
        """Whether the cut is nltk's punkt (RULER's), not the regular-expression stand-in."""
        self._upto = 0
        self._text = ""
        self._lead = 0
        self._spans: list[tuple[int, int]] = []
        self._starts: list[int] = []

    def prefix(self, n: int) -> list[str]:
        """Return RULER's first `n` haystack words (the essay repeated past its end)."""
        if n <= len(self.words):
            return self.words[:n]
        repeats = (n + len(self.words) - 1) // len(self.words)
        return (self.words * repeats)[:n]

    def _kept(self) -> Path | None:
        folder = _punkt_dir()
        if self.splitter is not None or folder is None or not SPANS_DIRS:
            return None
        return SPANS_DIRS[0] / f"spans-{self.key}-{_model_digest(folder)}.json"

    def _cut(self, upto: int) -> tuple[int, list[tuple[int, int]]]:
        """Return (words covered, spans) for at least `upto` words: kept ones, or cut now."""
        kept = self._kept()
        if kept is not None and kept.is_file():
            try:
                stored = json.loads(kept.read_text("utf-8"))
                if int(stored["upto"]) >= upto:
                    return int(stored["upto"]), [(int(a), int(b)) for a, b in stored["spans"]]
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged file is cut again and rewritten
        text = " ".join(self.prefix(upto)).strip()
        if self.splitter is not None:
            return upto, self.splitter(text)
        punkt = punkt_splitter()
        if punkt is None:
            self.exact = False
            return upto, _regex_spans(text)
        spans = punkt(text)
        if kept is not None:
            from longscope.files import write_atomic

            write_atomic(kept, json.dumps({"upto": upto, "spans": spans}))
        return upto, spans

    def sentences(self, n: int) -> list[str]:
        """Return `sent_tokenize(" ".join(first n words).strip())`."""
        if n > self._upto:
            # RULER's search tries its largest size first: cut a little past it, once.
            upto, self._spans = self._cut(max(n + n // 8, 4096))
            joined = " ".join(self.prefix(upto))
            self._lead = len(joined) - len(joined.lstrip())
            self._text = joined.strip()
            self._starts = [s for s, _ in self._spans]
            self._upto = upto
        end = len(" ".join(self.prefix(n)).rstrip()) - self._lead
        if end <= 0:
            return []
        text = self._text
        last = bisect_left(self._starts, end)
        out = [text[s:e] for s, e in self._spans[:last]]
        if out:
            s, e = self._spans[last - 1]
            out[-1] = text[s : min(e, end)]
        return out


@dataclass(frozen=True)
class Essays:
    """The essay haystack: RULER's words (whitespace-normalised) cut into sentences."""

    text: str
    source: str

    @functools.cached_property
    def sentences(self) -> tuple[str, ...]:
        """The sentences of the whitespace-normalised text, cut by a regular expression."""
        return tuple(split_sentences(re.sub(r"\s+", " ", self.text).strip()))

    @functools.cached_property
    def haystack(self) -> EssayHaystack:
        """RULER's essay haystack, cut by punkt where nltk and its data are installed."""
        words = re.sub(r"\s+", " ", self.text).split(" ")
        key = hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]
        return EssayHaystack(words, key)


def load_essays(path: str | Path) -> Essays:
    """Return the essays of a `{"text": ...}` file (RULER's PaulGrahamEssays.json)."""
    try:
        text = _Essays.model_validate(_read_json(path, "essays")).text
    except ValidationError as exc:
        raise UsageError(
            f"essays file {str(path)!r} is not RULER's format (a JSON object with a 'text' string): "
            "give PaulGrahamEssays.json as RULER's download script writes it"
        ) from exc
    if not text.strip():
        raise UsageError(f"essays file {str(path)!r} holds no text: give a non-empty essays file")
    return Essays(text, str(path))


class _Answer(BaseModel):
    text: str


class _Qas(BaseModel):
    question: str
    answers: list[_Answer] = []
    is_impossible: bool = False


class _Paragraph(BaseModel):
    context: str
    qas: list[_Qas]


class _Article(BaseModel):
    paragraphs: list[_Paragraph]


class _Squad(BaseModel):
    data: list[_Article]


class _Hotpot(BaseModel):
    question: str
    answer: str
    context: list[tuple[str, list[str]]]


@dataclass(frozen=True)
class Question:
    query: str
    outputs: tuple[str, ...]
    context: tuple[int, ...]
    """Indices of the gold documents."""
    more_context: tuple[int, ...] = ()
    """SQuAD: the other paragraphs of the same article (distractors drawn first)."""


@dataclass(frozen=True)
class QASet:
    questions: tuple[Question, ...]
    documents: tuple[str, ...]
    source: str


def load_squad(path: str | Path) -> QASet:
    """Return SQuAD's answerable questions and its unique paragraphs (sorted), as RULER reads them."""
    try:
        data = _Squad.model_validate(_read_json(path, "squad"))
    except ValidationError as exc:
        raise UsageError(
            f"squad file {str(path)!r} is not SQuAD JSON ({exc.errors()[0]['loc']}): give "
            "dev-v2.0.json"
        ) from exc
    docs = sorted({p.context for d in data.data for p in d.paragraphs})
    index = {c: i for i, c in enumerate(docs)}
    questions = []
    for article in data.data:
        more = [index[p.context] for p in article.paragraphs]
        for p in article.paragraphs:
            own = index[p.context]
            for qa in p.qas:
                if not qa.is_impossible:
                    questions.append(
                        Question(
                            qa.question,
                            tuple(a.text for a in qa.answers),
                            (own,),
                            tuple(i for i in more if i != own),
                        )
                    )
    if not questions:
        raise UsageError(f"squad file {str(path)!r} has no answerable question: give SQuAD dev")
    return QASet(tuple(questions), tuple(docs), str(path))


def load_hotpotqa(path: str | Path) -> QASet:
    """Return HotpotQA's questions and its unique `title\\nparagraph` documents, as RULER reads them."""
    raw = _read_json(path, "hotpotqa")
    try:
        rows = [_Hotpot.model_validate(r) for r in (raw if isinstance(raw, list) else [raw])]
    except ValidationError as exc:
        raise UsageError(
            f"hotpotqa file {str(path)!r} is not HotpotQA JSON ({exc.errors()[0]['loc']}): give "
            "hotpot_dev_distractor_v1.json"
        ) from exc
    docs = sorted({f"{t}\n{''.join(p)}" for r in rows for t, p in r.context})
    index = {c: i for i, c in enumerate(docs)}
    questions = tuple(
        Question(r.question, (r.answer,), tuple(index[f"{t}\n{''.join(p)}"] for t, p in r.context))
        for r in rows
    )
    if not questions:
        raise UsageError(f"hotpotqa file {str(path)!r} has no question: give HotpotQA dev")
    return QASet(questions, tuple(docs), str(path))
