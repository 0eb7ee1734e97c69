"""LongCtx graders: pure functions of (task, answer, language) -> Score, keeping their evidence.

The rules, as a person applies them (English and Chinese alike):

Values. Numbers and dates compare as values (`longscope.text.quantities`): thousands separators,
trailing zeros, unit spacing and spelling, unit prefixes, written-out numbers and percentages do not
matter ("0.0030 arc-seconds" = "0.003 arcsec", "2400 MHz" = "2,400 MHz" = "2.4 GHz", "seventy-two" =
"七十二个" = "72", "5 percent" = "百分之五" = "5%"), nor do the date formats "December 1, 2034" =
"1 December 2034" = "2034-12-01" = "2034年12月1日". A bare number states any unit's value ("94" for
"94 minutes"). Identifiers and labels ("Helios-7", "SOP-14", "line 4", "第二阶段") are not values.

needle / position_bias (the gold is one value):
- 0 empty.
- 5 the answer states the gold value and has at most 60 words; 4 it does, in 61 words or more.
  (Chinese counts one word per two characters, rounded up.)
- A wrong value scores at most 1: an answer that states another value of the gold's kind (another
  number, bare or in the gold's unit; a date, or a bare year, with a part that differs) and not the
  gold gets 1 when it mentions the topic, else 0.
- Otherwise token overlap with the gold (values as tokens, a date as year/month/day tokens):
  3 when > 0.6, 2 when 0.3 <= overlap <= 0.6, both only when a token of the gold's value is shared
  ("December 2034" for "December 1, 2034" is 2/3 -> 3; "arc-seconds" alone shares no value -> no
  overlap credit). Then 1 topic mentioned, 0 otherwise.

multi_fact: each fact's points when the answer states it (3-fact tasks 5/3 each, LCB-018's 5 facts
1 each); a fact stated with a wrong value earns nothing and is listed as misquoted.

reasoning: conclusion 2 + citations 2 + reasoning chain 1, or -5 for a wrong conclusion.
- Conclusion: the first one the answer states, a leading yes/no ("Yes.", "No,", "是的", "否，") or a
  phrase ("overdue", "not in compliance", "不符合"); "no audit since ..." or an echoed "是否" is
  not one. A wrong conclusion scores -5 for the task whatever else the answer holds.
- Citations: 2 points shared by the task's facts in proportion to their points (LCB-016: 0.5 each of
  136, 145, 5%, the lower bound); a fact quoted with a wrong value earns nothing (evidence:
  `misquoted`).
- Chain: 1 point when the conclusion is correct and either
  (a) one sentence holds a cited fact and a linking word: because, since, so, therefore, thus,
      hence, as a result, which means, given that, consequently, than, but, while, whereas, only,
      exceed(s/ed), beyond, over, under, below, above, within, inside, outside, which is/was, after,
      before, short of, or a sign < > <= >= = -> (Chinese: 因为 由于 所以 因此 因而 从而 超过 低于
      少于 多于 高于 早于 晚于 不足 只有 仅 但 而 意味着 以内 之内 范围内); sentences end at . ! ? ;
      and line breaks, never inside a number or date; or
  (b) the answer states a value the reasoning produces and no fact states (`TaskSpec.derived`:
      LCB-004 due September 2025 / 20 months elapsed / 2 months overdue; LCB-008 25 days / due
      October 15, 2025 / 5 days early; LCB-012 one short; LCB-016 137.75 / 152.25 / 9 N·m / 6.2% /
      1.75; LCB-020 the June 2024 ten-year mark / an age of 11-12 years).
  A linking word in a sentence without a cited fact earns nothing ("Yes, overdue because it is
  sunny." scores 2); the evidence lists such words under `links_away_from_facts`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from longscope.suites.longctx.tasks import Key, TaskSpec
from longscope.text.quantities import (
    Value,
    conflicts,
    find_values,
    parse_value,
    prepare,
    same_value,
)
from longscope.types import Score

MAX_POINTS = 5.0
CONCISE_WORDS = 60
CLOSE_OVERLAP = Fraction(3, 5)
"""3 points above this overlap."""
PARTIAL_OVERLAP = Fraction(3, 10)
"""2 points from this overlap up to and including CLOSE_OVERLAP."""
WRONG_CONCLUSION_PENALTY = -5.0
CITATION_POINTS = 2.0
CONCLUSION_POINTS = 2.0
CHAIN_POINTS = 1.0

_LINK = re.compile(
    r"\b(?:because|since|so|therefore|thus|hence|as a result|which means|this means|that means"
    r"|meaning|given that|consequently|than|but|while|whereas|only|exceed(?:s|ed|ing)?|beyond"
    r"|over|under|below|above|within|inside|outside|which is|which was|after|before|short of)\b"
    r"|<=?|>=?|≤|≥|=|->|→|⇒"
    r"|因为|由于|所以|因此|因而|从而|超过|低于|少于|多于|高于|早于|晚于|不足|只有|仅|但|而|意味着"
    r"|以内|之内|范围内"
)
# A sentence ends at . ! ? ; or a line break (not at the point of "137.75" or "Policy 3.2").
_SENTENCE_END = re.compile(r"(?<!\d)\.|\.(?!\d)|[!?;。！？；\n]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:['’.,\-][A-Za-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u9fff]")
_TOKEN = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*|[\u3400-\u9fff]")


@dataclass(frozen=True)
class Reading:
    """An answer as the graders read it: prepared text, its values, canonical text, word count."""

    text: str
    values: tuple[Value, ...]
    canonical: str
    words: int


def read(answer: str) -> Reading:
    """Return the answer's prepared text, values, canonical text and word count."""
    text = prepare(answer)
    values = tuple(find_values(text))
    out, pos = [], 0
    for value in values:
        out.extend((text[pos : value.start], f" {value.canonical()} "))
        pos = value.end
    out.append(text[pos:])
    canonical = re.sub(r"[ \t]+", " ", "".join(out)).strip()
    return Reading(text, values, canonical, word_count(answer))


def word_count(text: str) -> int:
    """Return the number of words; Chinese counts one word per two characters, rounded up."""
    return len(_LATIN_WORD.findall(text)) + (len(_CJK.findall(text)) + 1) // 2


def tokens(reading: Reading, years: bool = False) -> tuple[list[str], set[str]]:
    """Return (all comparison tokens, the value tokens among them) of a read answer.

    Values give value tokens (a number in base units, a date's year/month/day); other text gives
    words and single CJK characters. With `years`, a bare 1000-2999 reads as a year ("2034").
    """
    out: list[str] = []
    value_tokens: set[str] = set()
    pos = 0
    for value in reading.values:
        out.extend(_TOKEN.findall(reading.text[pos : value.start]))
        found = value.tokens()
        year_like = value.kind == "number" and not value.dimension and _is_year(value.written)
        if years and year_like:
            found = (f"y:{int(value.written)}",)
        out.extend(found)
        value_tokens.update(found)
        pos = value.end
    out.extend(_TOKEN.findall(reading.text[pos:]))
    return out, value_tokens


def _is_year(number: Decimal) -> bool:
    """Return whether a bare number reads as a year (a whole number from 1000 to 2999)."""
    return 1000 <= number <= 2999 and number == int(number)


def overlap(gold: Reading, answer: Reading) -> tuple[Fraction, bool]:
    """Return (share of the gold's distinct tokens the answer has, whether a value token is shared).

    With no value in the gold (a text answer), every shared token counts as shared value.
    """
    is_date = any(v.kind == "date" for v in gold.values)
    gold_tokens, gold_values = tokens(gold)
    answer_tokens, _ = tokens(answer, years=is_date)
    wanted = set(gold_tokens)
    if not wanted:
        return Fraction(0), False
    shared = wanted & set(answer_tokens)
    value_shared = bool(shared & gold_values) if gold_values else bool(shared)
    return Fraction(len(shared), len(wanted)), value_shared


def overlap_points(ratio: Fraction) -> int:
    """Return the rubric's overlap points: 3 above 0.6, 2 from 0.3 to 0.6 inclusive, else 0."""
    if ratio > CLOSE_OVERLAP:
        return 3
    if ratio >= PARTIAL_OVERLAP:
        return 2
    return 0


def level_of_words(words: int) -> int:
    """Return the points of a correct needle answer of `words` words: 5 up to 60, else 4."""
    return 5 if words <= CONCISE_WORDS else 4


def key_match(key: Key, reading: Reading) -> tuple[bool, list[str]]:
    """Return (whether the answer states the key's fact, the wrong values it gives instead)."""
    if key.value:
        gold = parse_value(key.value)
        if any(same_value(gold, v) for v in reading.values):
            return True, []
        if key.regex and re.search(key.regex, reading.canonical):
            return True, []
        return False, [v.canonical() for v in reading.values if conflicts(gold, v)]
    return bool(re.search(key.regex, reading.canonical)), []


def grade(task: TaskSpec, answer: str, language: str = "en") -> Score:
    """Return the task's score for `answer`: needle rubric, per-fact points, or reasoning rubric."""
    if task.type in ("needle", "position_bias"):
        return grade_needle(task, answer, language)
    if task.type == "multi_fact":
        return grade_multi_fact(task, answer)
    return grade_reasoning(task, answer)


def grade_needle(task: TaskSpec, answer: str, language: str = "en") -> Score:
    """Return 5/4 for the gold value (<= / > 60 words), <= 1 for a wrong one, else 3/2/1/0."""
    reading = read(answer)
    evidence: dict[str, object] = {
        "words": reading.words,
        "values": [v.canonical() for v in reading.values],
    }
    if not reading.canonical:
        return Score(0.0, MAX_POINTS, {**evidence, "rule": "empty"})
    matches = {key.name: key_match(key, reading) for key in task.keys}
    evidence["matched"] = [name for name, (ok, _) in matches.items() if ok]
    evidence["missed"] = [name for name, (ok, _) in matches.items() if not ok]
    topic = bool(task.topic and re.search(task.topic, reading.canonical))
    evidence["topic"] = topic
    if all(ok for ok, _ in matches.values()):
        points = level_of_words(reading.words)
        rule = "exact, concise" if points == 5 else f"correct, over {CONCISE_WORDS} words"
        return Score(float(points), MAX_POINTS, {**evidence, "rule": rule})
    wrong = sorted({value for _, found in matches.values() for value in found})
    if wrong:
        evidence["wrong_values"] = wrong
        if topic:
            return Score(1.0, MAX_POINTS, {**evidence, "rule": "wrong value, topic mentioned"})
        return Score(0.0, MAX_POINTS, {**evidence, "rule": "wrong value"})
    gold = read(task.answer.get(language, task.answer["en"]))
    ratio, value_shared = overlap(gold, reading)
    evidence["overlap"] = f"{ratio.numerator}/{ratio.denominator}"
    evidence["value_token_shared"] = value_shared
    points = overlap_points(ratio) if value_shared else 0
    if points == 3:
        return Score(3.0, MAX_POINTS, {**evidence, "rule": "overlap > 0.6"})
    if points == 2:
        return Score(2.0, MAX_POINTS, {**evidence, "rule": "overlap 0.3-0.6"})
    if topic:
        return Score(1.0, MAX_POINTS, {**evidence, "rule": "topic mentioned, wrong answer"})
    return Score(0.0, MAX_POINTS, {**evidence, "rule": "wrong or off-topic"})


def grade_multi_fact(task: TaskSpec, answer: str) -> Score:
    """Return the points of the facts the answer states (5 in all: 5/3 each of 3, 1 each of 5)."""
    reading = read(answer)
    matches = {key.name: key_match(key, reading) for key in task.keys}
    value = round(sum(key.points for key in task.keys if matches[key.name][0]), 6)
    return Score(
        value,
        MAX_POINTS,
        {
            "matched": [name for name, (ok, _) in matches.items() if ok],
            "missed": [name for name, (ok, _) in matches.items() if not ok],
            "misquoted": {name: found for name, (ok, found) in matches.items() if found},
            "split": {key.name: round(key.points, 3) for key in task.keys},
            "values": [v.canonical() for v in reading.values],
        },
    )


def conclusion(task: TaskSpec, text: str) -> tuple[str | None, str]:
    """Return ("correct" | "wrong" | None, the words that state it): the first conclusion stated."""
    first_correct = re.search(task.correct, text)
    first_wrong = re.search(task.wrong, text)
    if first_correct and (not first_wrong or first_correct.start() <= first_wrong.start()):
        return "correct", first_correct.group(0).strip()
    if first_wrong:
        return "wrong", first_wrong.group(0).strip()
    return None, ""


def sentences(reading: Reading) -> list[tuple[int, int]]:
    """Return the (start, end) of each sentence: split at . ! ? ; and line breaks, never inside a
    value ("Dec. 1, 2034") or at a decimal point ("137.75")."""
    inside = [(v.start, v.end) for v in reading.values]
    cuts = [
        m.end()
        for m in _SENTENCE_END.finditer(reading.text)
        if not any(start <= m.start() < end for start, end in inside)
    ]
    bounds = [0, *cuts, len(reading.text)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if reading.text[a:b].strip()]


def _stated_in(key: Key, reading: Reading, start: int, end: int) -> bool:
    """Return whether the key's fact is stated between `start` and `end` of the answer."""
    if key.value:
        gold = parse_value(key.value)
        if any(same_value(gold, v) and start <= v.start < end for v in reading.values):
            return True
    return bool(key.regex) and key_match(key, read(reading.text[start:end]))[0]


def reasoning_chain(
    task: TaskSpec, reading: Reading, cited: list[Key]
) -> tuple[bool, str, list[str]]:
    """Return (chain shown, how, linking words found away from cited facts).

    Shown by a linking word in a sentence that states a cited fact, or by a derived value.
    """
    derived = [key.name for key in task.derived if key_match(key, reading)[0]]
    if derived:
        return True, f"derived value: {derived[0]}", []
    stray: list[str] = []
    for start, end in sentences(reading):
        links = [m.group(0) for m in _LINK.finditer(reading.text, start, end)]
        if not links:
            continue
        facts = [key.name for key in cited if _stated_in(key, reading, start, end)]
        if facts:
            return True, f"'{links[0]}' with {facts[0]} in one sentence", []
        stray.extend(links)
    return False, "no linking word beside a cited fact and no derived value", stray


def grade_reasoning(task: TaskSpec, answer: str) -> Score:
    """Return conclusion 2 + citations 2 + chain 1, or -5 when the stated conclusion is wrong."""
    reading = read(answer)
    stated, words = conclusion(task, reading.canonical)
    matches = {key.name: key_match(key, reading) for key in task.keys}
    cited = [key for key in task.keys if matches[key.name][0]]
    total_key_points = sum(key.points for key in task.keys)
    citation = CITATION_POINTS * sum(key.points for key in cited) / total_key_points
    chain, how, stray = (False, "needs the correct conclusion", [])
    if stated == "correct" and cited:
        chain, how, stray = reasoning_chain(task, reading, cited)
    elif stated == "correct":
        how = "no cited fact to link"
    evidence: dict[str, object] = {
        "conclusion": stated or "none",
        "conclusion_words": words,
        "cited": [key.name for key in cited],
        "not_cited": [key.name for key in task.keys if key not in cited],
        "misquoted": {name: found for name, (_, found) in matches.items() if found},
        "reasoning_chain": chain,
        "chain_rule": how,
    }
    if stray:
        evidence["links_away_from_facts"] = stray
    if stated == "wrong":
        return Score(WRONG_CONCLUSION_PENALTY, MAX_POINTS, {**evidence, "rule": "wrong conclusion"})
    value = (CONCLUSION_POINTS if stated == "correct" else 0.0) + citation
    value += CHAIN_POINTS if chain else 0.0
    rule = f"conclusion {stated or 'none'}, citations {round(citation, 3)}, chain {int(chain)}"
    return Score(round(value, 6), MAX_POINTS, {**evidence, "rule": rule})
