"""RULER's inputs: word lists from wonderwords, the essay haystack and the QA sets from local files.

Formats are RULER's own: the essays as `{"text": ...}` (its `json/PaulGrahamEssays.json`), SQuAD v2
dev JSON (`data[].paragraphs[].{context, qas[].{question, answers[].text, is_impossible}}`) and
HotpotQA dev JSON (`[{question, answer, context: [[title, [sentences]]]}]`), read as RULER reads them.
"""

from __future__ import annotations

import functools
import json
import re
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
        return tuple(line.rstrip() for line in (assets / name).read_text("utf-8").splitlines())

    return read("nounlist.txt"), read("adjectivelist.txt"), read("verblist.txt")


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


@dataclass(frozen=True)
class Essays:
    """The essay haystack: RULER's words (whitespace-normalised) cut into sentences."""

    sentences: tuple[str, ...]
    source: str


def load_essays(path: str | Path) -> Essays:
    """Return the essays of a `{"text": ...}` file, whitespace-normalised and cut into sentences."""
    try:
        text = _Essays.model_validate(_read_json(path, "essays")).text
    except ValidationError as exc:
        raise UsageError(
            f"essays file {str(path)!r} is not RULER's format (a JSON object with a 'text' string): "
            "give PaulGrahamEssays.json as RULER's download script writes it"
        ) from exc
    words = re.sub(r"\s+", " ", text).strip()
    if not words:
        raise UsageError(f"essays file {str(path)!r} holds no text: give a non-empty essays file")
    return Essays(tuple(split_sentences(words)), str(path))


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
