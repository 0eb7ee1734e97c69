"""Numbers, units, percentages and dates in English and Chinese text, read as values.

A person reading an answer compares values, not strings: "0.0030 arc-seconds" = "0.003 arc-seconds",
"2400 MHz" = "2,400 MHz" = "2.4 GHz", "twelve" = "12" = "十二个", "5 percent" = "5%" = "百分之五",
"$12 million" = "1200万美元", "December 1, 2034" = "1 December 2034" = "2034-12-01" =
"2034年12月1日". This module finds such values (`find_values`), compares them (`same_value`) and
rewrites text with one spelling per value (`canonical_text`). Pure functions, no I/O.

What is deliberately not read as a value (a person would not either):
- identifiers and labels: "Helios-7", "SOP-14", "PO #4472", "Policy 3.2", "assembly line 4",
  "第二阶段", "4号装配线", "phase-two";
- "one" and Chinese numerals without a unit or measure word ("no one", "一致", "统一");
- numeric dates whose day and month order is ambiguous ("03/04/2025"); "12/25/2025" is read;
- signs: "-6.2%" and "±5%" compare as 6.2 and 5 (tolerances and deviations are quoted unsigned).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

# (canonical spelling, dimension, factor to the dimension's base unit)
_UNIT_TABLE: tuple[tuple[str, str, str, str], ...] = (
    # pattern, canonical, dimension, factor
    (r"degrees?\s+celsius|degrees?\s+c\b|deg\.?\s*c\b|celsius|°\s*c\b|摄氏度", "°c", "temp", "c"),
    (r"degrees?\s+fahrenheit|degrees?\s+f\b|fahrenheit|°\s*f\b|华氏度", "°f", "temp", "f"),
    (r"milli[\s-]?arc[\s-]?seconds?|\bmas\b|毫角秒", "mas", "angle", "0.001"),
    (r"arc[\s-]?seconds?\b|arcsec(?:ond)?s?\b|角秒", "arcsec", "angle", "1"),
    (r"arc[\s-]?minutes?\b|arcmin(?:ute)?s?\b|角分", "arcmin", "angle", "60"),
    (r"milliseconds?\b|msecs?\b|ms\b|毫秒", "ms", "time", "0.001"),
    (r"seconds?\b|secs?\b|s\b|秒钟?", "s", "time", "1"),
    (r"minutes?\b|mins?\b|分钟", "min", "time", "60"),
    (r"hours?\b|hrs?\b|h\b|个?小时|个?钟头", "h", "time", "3600"),
    (r"days?\b|天|日", "day", "time", "86400"),
    (r"weeks?\b|个?星期|周", "week", "time", "604800"),
    (r"months?\b|个月", "month", "calendar", "1"),
    (r"years?\b|yrs?\b|年", "year", "calendar", "12"),
    (r"ghz\b|gigahertz|千兆赫兹?|吉赫兹?", "ghz", "frequency", "1000000000"),
    (r"mhz\b|megahertz|兆赫兹?", "mhz", "frequency", "1000000"),
    (r"khz\b|kilohertz|千赫兹?", "khz", "frequency", "1000"),
    (r"hz\b|hertz|赫兹", "hz", "frequency", "1"),
    (r"(?:metric\s+)?(?:tonnes?|tons?)\b|公吨|吨", "t", "mass", "1"),
    (r"kilograms?\b|kg\b|千克|公斤", "kg", "mass", "0.001"),
    (
        r"n\s*[·.\-⋅*]?\s*m\b|newton[\s-]?met(?:er|re)s?\b|牛\s*[·.]?\s*米|牛顿米",
        "n·m",
        "torque",
        "1",
    ),
    (r"%|percent\b|per\s+cent\b|pct\b", "%", "percent", "1"),
    (r"us\s*dollars?\b|dollars?\b|usd\b|美元", "usd", "usd", "1"),
    (r"yuan\b|rmb\b|cny\b|元|人民币", "cny", "cny", "1"),
)
_UNITS = tuple(
    (re.compile(r"[\s-]*(?:" + p + ")"), canon, dim, factor)
    for p, canon, dim, factor in _UNIT_TABLE
)
# Measure words after a number: they make a Chinese numeral a number but carry no unit.
_MEASURE = re.compile(r"\s*(?:个|名|位|人|层|座|处|次|台|项|条|种|组|家|间|所|倍)")

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_MONTH_NO_MAY = _MONTH.replace("|may|", "|")  # "3 may be": a verb, when no year follows
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\b"
_YEAR = r"(?P<year>\d{4})\b"
_DATES = (
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(?:of\s+)?{_YEAR}"),  # December 1, 2034
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}"),  # 1 December 2034
    re.compile(r"(?<![\d.])(?P<year>\d{4})[-/.](?P<month>\d{1,2})[-/.](?P<day>\d{1,2})(?![\d])"),
    re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]?"),
    re.compile(r"(?<![\d.])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<year>\d{4})(?!\d)"),  # 12/25/2025
    re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}"),  # March 2025
    re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月(?!\s*\d)"),  # 2025年3月
    re.compile(r"(?<![\d.\-])(?P<year>\d{4})-(?P<month>\d{2})(?![\d]|-\d)"),  # 2025-03
    re.compile(rf"\b{_MONTH_NO_MAY}\s+{_DAY}(?!\s*,?\s*\d)"),  # December 1
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_NO_MAY}(?!\s*,?\s*\d)"),  # 1 December
    re.compile(r"(?<!年)(?<!\d)(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]"),  # 12月1日
)

# A number written in digits; thousands separators only in groups of three.
_DIGITS = re.compile(r"(?<![a-z0-9_.#])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_ZH_SCALE = re.compile(r"\s*(万|亿|千万|百万)")
_ZH_SCALES = {"万": 10**4, "亿": 10**8, "千万": 10**7, "百万": 10**6}
_SCALE = re.compile(r"\s+(thousand|million|billion|trillion)\b|\s*(bn)\b")
# After a currency sign, "$12m" and "$2.4b" are millions and billions too.
_MONEY_SCALE = re.compile(r"\s*(k|m|mn|b|bn)\b")
_SHORT_SCALES = {"k": 10**3, "m": 10**6, "mn": 10**6, "b": 10**9, "bn": 10**9}
# Words before a number that make it a label ("line 4"), not a quantity. `\Z`, not `$`: `$` also
# matches before a final newline, which made a number opening a line ("period\n94 minutes") read
# as part of an identifier.
_LABEL = re.compile(
    r"(?:\b(?:policy|section|sop|unit|line|po|phase|group|article|clause|step|version|tier|lcb"
    r"|number|item|rule|table|figure|page|chapter|stage|level|class|type|model)\s*#?\s*"
    r"|第\s*)\Z"
)
_LABEL_AFTER = re.compile(r"\s*(?:号|条|款|章|节|阶段|期)")
_IDENT_BEFORE = re.compile(r"(?:[a-z][\-_]?|#\s*)\Z")

_EN_SMALL = {
    w: i
    for i, w in enumerate(
        (
            *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
            *("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"),
            *("seventeen", "eighteen", "nineteen"),
        )
    )
}
_EN_TENS = {
    w: 10 * i
    for i, w in enumerate(
        ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), start=2
    )
}
_EN_WORD = "|".join([*_EN_SMALL, *_EN_TENS, "hundred", *_SCALES])
_AND = r"(?:(?<=hundred)|(?<=thousand)|(?<=million)|(?<=billion))\s+and\s+"
_EN_RUN = re.compile(rf"\b(?:{_EN_WORD})(?:(?:{_AND}|[\s-]+)(?:{_EN_WORD}))*\b")
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_ZH_DIGITS.update({"七": 7, "八": 8, "九": 9})
_ZH_RUN = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+")
_PERCENT_ZH = re.compile(r"百分之\s*$")

Kind = Literal["number", "date"]


@dataclass(frozen=True)
class Value:
    """A value read from text: a number with its unit, or a (possibly partial) date."""

    kind: Kind
    start: int
    end: int
    text: str
    amount: Decimal = Decimal(0)
    """numbers: the amount in the dimension's base unit (Hz, seconds, tons, ...)."""
    written: Decimal = Decimal(0)
    """numbers: the amount in the unit as written."""
    unit: str = ""
    """numbers: the unit's canonical spelling ("ghz", "°c", "%"); empty for a bare number."""
    dimension: str = ""
    """numbers: what the unit measures ("time", "frequency", "usd", ...); empty when bare."""
    year: int | None = None
    month: int | None = None
    day: int | None = None

    def canonical(self) -> str:
        """Return the one spelling of this value: "2400 mhz", "0.003 arcsec", "2034-12-01"."""
        if self.kind == "date":
            year = f"{self.year:04d}" if self.year is not None else "-"
            parts = [year] + [f"{p:02d}" for p in (self.month, self.day) if p is not None]
            return "-".join(parts)
        number = _plain(self.written)
        return f"{number} {self.unit}" if self.unit else number

    def tokens(self) -> tuple[str, ...]:
        """Return the comparison tokens: one per date part, one for a number (in base units)."""
        if self.kind == "date":
            parts = (("y", self.year), ("m", self.month), ("d", self.day))
            return tuple(f"{name}:{value}" for name, value in parts if value is not None)
        return (f"n:{_plain(self.amount)}",)


def _plain(number: Decimal) -> str:
    """Return a decimal without exponent or trailing zeros: 8.4E+3 -> "8400", 0.0030 -> "0.003"."""
    text = format(number.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def prepare(text: str) -> str:
    """Return text as values are read from it: NFKC (full-width digits, ℃ -> °c), lower case."""
    text = unicodedata.normalize("NFKC", text).lower()
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", " - ")


def _date(match: re.Match[str]) -> tuple[int | None, int | None, int | None] | None:
    """Return (year, month, day) of a date match, or None when it is not a valid or clear date."""
    groups = match.groupdict()
    year = int(groups["year"]) if groups.get("year") else None
    if groups.get("a"):  # a/b/yyyy: read only when one order is impossible or both agree
        a, b = int(groups["a"]), int(groups["b"])
        if a == b or (a > 12 >= b):
            month, day = b, a
        elif b > 12 >= a:
            month, day = a, b
        else:
            return None
    else:
        raw = groups["month"].rstrip(".")
        month = _MONTHS[raw] if raw in _MONTHS else int(raw)
        day = int(groups["day"]) if groups.get("day") else None
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    if year is not None and not 1000 <= year <= 2999:
        return None
    return year, month, day


def _en_number(words: str) -> int | None:
    """Return the integer an English number phrase names ("one hundred forty-four"), or None.

    None for a run that is a list, not one number ("two three", "seventy eighty").
    """
    total, current, last = 0, 0, ""
    for word in re.split(r"[\s-]+", words):
        if word == "and":
            continue
        if word in _EN_SMALL:
            if last in ("small", "teen") or (last == "ten" and _EN_SMALL[word] >= 10):
                return None
            current += _EN_SMALL[word]
            last = "teen" if _EN_SMALL[word] >= 10 else "small"
        elif word in _EN_TENS:
            if last in ("small", "teen", "ten"):
                return None
            current += _EN_TENS[word]
            last = "ten"
        elif word == "hundred":
            if last not in ("small", "teen"):
                return None
            current *= 100
            last = "hundred"
        else:
            if not last or last == "scale":
                return None
            total += current * _SCALES[word]
            current, last = 0, "scale"
    return total + current if last else None


def _zh_number(chars: str) -> int | None:
    """Return the integer a Chinese numeral names ("七十二", "一千二百", "两"), or None."""
    if not chars:
        return None
    if all(c in _ZH_DIGITS for c in chars) and len(chars) > 1:  # digit by digit: "二〇三四"
        return int("".join(str(_ZH_DIGITS[c]) for c in chars))
    total, section, digit = 0, 0, None
    for char in chars:
        if char in _ZH_DIGITS:
            digit = _ZH_DIGITS[char]
        elif char in "十百千":
            scale = {"十": 10, "百": 100, "千": 1000}[char]
            section += (1 if digit is None else digit) * scale
            digit = None
        elif char in "万亿":
            scale = 10**4 if char == "万" else 10**8
            total = (total + section + (digit or 0)) * scale
            section, digit = 0, None
    return total + section + (digit or 0)


def _unit_after(text: str, pos: int) -> tuple[int, str, str, str] | None:
    """Return (end, canonical unit, dimension, factor) of a unit right after `pos`, or None."""
    for pattern, canon, dim, factor in _UNITS:
        match = pattern.match(text, pos)
        if match and match.end() > pos:
            return match.end(), canon, dim, factor
    return None


def _to_base(written: Decimal, dim: str, factor: str) -> Decimal:
    """Return `written` in the dimension's base unit (°F -> °C for temperatures)."""
    if dim == "temp":
        return (written - 32) * Decimal(5) / Decimal(9) if factor == "f" else written
    return written * Decimal(factor)


def find_values(text: str) -> list[Value]:
    """Return the values in `text` (already `prepare`d), left to right, dates before numbers."""
    taken = [False] * len(text)
    values: list[Value] = []

    def free(start: int, end: int) -> bool:
        return not any(taken[start:end])

    def take(value: Value) -> None:
        for i in range(value.start, value.end):
            taken[i] = True
        values.append(value)

    for pattern in _DATES:
        for match in pattern.finditer(text):
            if not free(match.start(), match.end()):
                continue
            parts = _date(match)
            if parts is None:
                continue
            year, month, day = parts
            take(Value("date", match.start(), match.end(), match.group(0), year=year, month=month,
                       day=day))  # fmt: skip

    candidates: list[tuple[int, int, Decimal, bool]] = []  # start, end, number, needs a unit
    for match in _DIGITS.finditer(text):
        try:
            number = Decimal(match.group(0).replace(",", ""))
        except InvalidOperation:
            continue
        end = match.end()
        scale = _SCALE.match(text, end) or _ZH_SCALE.match(text, end)
        if not scale and re.search(r"\$\s*$", text[: match.start()]):
            scale = _MONEY_SCALE.match(text, end)
        if scale:
            word = scale.group(1) or scale.group(2)
            number *= _SCALES.get(word) or _ZH_SCALES.get(word) or _SHORT_SCALES[word]
            end = scale.end()
        candidates.append((match.start(), end, number, False))
    for match in _EN_RUN.finditer(text):
        number = _en_number(match.group(0))
        if number is None:
            continue
        # "one" alone is a pronoun as often as a number: read it only before a unit.
        alone = match.group(0) in ("one", "zero")
        candidates.append((match.start(), match.end(), Decimal(number), alone))
    for match in _ZH_RUN.finditer(text):
        number = _zh_number(match.group(0))
        if number is None:
            continue
        before = text[: match.start()]
        if _PERCENT_ZH.search(before):
            take(Value("number", match.start() - len(_PERCENT_ZH.search(before).group(0)),
                       match.end(), text[match.start():match.end()], Decimal(number),
                       Decimal(number), "%", "percent"))  # fmt: skip
            continue
        candidates.append((match.start(), match.end(), Decimal(number), True))

    for start, end, number, needs_unit in sorted(candidates):
        if not free(start, end):
            continue
        before = text[max(0, start - 24) : start]
        if _IDENT_BEFORE.search(before) or _LABEL.search(before) or _LABEL_AFTER.match(text, end):
            continue
        prefix_usd = re.search(r"(?:us)?\$\s*$|usd\s*$", before)
        unit = _unit_after(text, end)
        measure = _MEASURE.match(text, end)
        if prefix_usd:
            unit = (end, "usd", "usd", "1")
            start -= len(prefix_usd.group(0))
        if unit is None:
            if needs_unit and not measure:
                continue
            unit_end = measure.end() if measure else end
            take(Value("number", start, unit_end, text[start:unit_end], number, number))
            continue
        unit_end, canon, dim, factor = unit
        if canon == "year" and 1000 <= number <= 2999:  # "2014年": a year, not a duration
            take(Value("number", start, unit_end, text[start:unit_end], number, number))
            continue
        take(Value("number", start, unit_end, text[start:unit_end], _to_base(number, dim, factor),
                   number, canon, dim))  # fmt: skip
    return _merge_compound(text, sorted(values, key=lambda v: v.start))


_JOIN = re.compile(r"\s*(?:,|and|,\s*and)?\s*")


def _merge_compound(text: str, values: list[Value]) -> list[Value]:
    """Return values with compound durations merged: "1 hour 34 minutes" = 94 minutes."""
    out: list[Value] = []
    for value in values:
        last = out[-1] if out else None
        if (
            last is not None
            and value.kind == last.kind == "number"
            and value.dimension == last.dimension
            and value.dimension in ("time", "calendar")
            and value.amount < last.amount / last.written  # a smaller unit follows a larger one
            and _JOIN.fullmatch(text, last.end, value.start)
        ):
            amount = last.amount + value.amount
            written = amount / (value.amount / value.written)
            out[-1] = Value("number", last.start, value.end, text[last.start : value.end], amount,
                            written, value.unit, value.dimension)  # fmt: skip
            continue
        out.append(value)
    return out


def read_values(text: str) -> list[Value]:
    """Return the values in raw `text` (prepared here)."""
    return find_values(prepare(text))


def parse_value(text: str) -> Value:
    """Return the value a gold string names ("2,400 MHz", "July 14, 2019"); ValueError if none."""
    values = read_values(text)
    if not values:
        raise ValueError(f"no number or date in {text!r}")
    return values[0]


def _close(a: Decimal, b: Decimal) -> bool:
    # Exact for decimals; the tolerance only absorbs °F -> °C division (1/9 is not a decimal).
    return abs(a - b) <= Decimal("1e-9") * max(Decimal(1), abs(a), abs(b))


def same_value(gold: Value, answer: Value) -> bool:
    """Return whether `answer` states `gold`: the same number in a compatible unit, or date.

    A bare number matches any unit ("94" for "94 minutes"); a bare gold matches a currency but not a
    physical unit ("2 minutes" is not "2 facilities"). A date matches when it states every part the
    gold states, with the same values ("March 12, 2025" states "March 2025").
    """
    if gold.kind != answer.kind:
        return False
    if gold.kind == "date":
        return all(
            g is None or a == g
            for g, a in (
                (gold.year, answer.year),
                (gold.month, answer.month),
                (gold.day, answer.day),
            )
        )
    if not _compatible(gold, answer):
        return False
    if gold.dimension and answer.dimension:
        return _close(gold.amount, answer.amount)
    return _close(gold.written, answer.written) or _close(gold.amount, answer.amount)


def _compatible(gold: Value, answer: Value) -> bool:
    """Return whether two numbers measure the same kind of thing (or one of them is bare)."""
    if not answer.dimension:
        return True  # "94" answers "94 minutes"
    if not gold.dimension:
        return answer.dimension in ("usd", "cny")  # "2.4 billion" = "$2.4 billion", not "2.4 GHz"
    return gold.dimension == answer.dimension


def conflicts(gold: Value, answer: Value) -> bool:
    """Return whether `answer` states a different value of the gold's kind (a wrong answer).

    Numbers: a different number, bare or in the gold's dimension. Dates: a date, or a bare year,
    with a stated part that differs (a bare "2033" contradicts "December 1, 2034").
    """
    if gold.kind == "date":
        if answer.kind == "number":
            if answer.dimension or not (1000 <= answer.written <= 2999):
                return False
            return gold.year is not None and int(answer.written) != gold.year
        return any(
            g is not None and a is not None and a != g
            for g, a in (
                (gold.year, answer.year),
                (gold.month, answer.month),
                (gold.day, answer.day),
            )
        )
    if answer.kind != "number" or same_value(gold, answer):
        return False
    return _compatible(gold, answer)


def canonical_text(text: str) -> str:
    """Return prepared `text` with every value in its one spelling ("2,400 MHz" -> "2400 mhz")."""
    text = prepare(text)
    out, pos = [], 0
    for value in find_values(text):
        out.append(text[pos : value.start])
        out.append(f" {value.canonical()} ")
        pos = value.end
    out.append(text[pos:])
    return re.sub(r"[ \t]+", " ", "".join(out)).strip()
