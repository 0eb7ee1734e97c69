"""Normalisation that lets formatting variants a person accepts compare equal.

"8,400" = "8400"; "2.4GHz" = "2.4 GHz"; "December 1, 2034" = "1 December 2034" = "Dec. 1st, 2034" =
"2034-12-01" = "2034年12月1日"; "85 degrees Celsius" = "85°C" = "85摄氏度". Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata

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
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATE_PATTERNS = (
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),  # December 1, 2034
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),  # 1 December 2034
    re.compile(r"\b(?P<year>\d{4})[-/.](?P<month>\d{1,2})[-/.](?P<day>\d{1,2})\b"),  # 2034-12-1
    re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月\s*(?P<day>\d{1,2})\s*[日号]"),
)
_MONTH_YEAR_PATTERNS = (
    re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b"),  # March 2025
    re.compile(r"(?P<year>\d{4})\s*年\s*(?P<month>\d{1,2})\s*月(?!\s*\d)"),  # 2025年3月
)
_UNITS = (
    (r"degrees?\s+celsius|degrees?\s+c\b|deg\.?\s*c\b|celsius|℃|°\s*c\b|摄氏度", " °c "),
    (r"arc[\s-]?seconds?|arcsec(?:ond)?s?|角秒", " arcsec "),
    (r"\bminutes?\b|\bmins?\b|分钟", " minutes "),
    (r"\bhours?\b|\bhrs?\b|小时", " hours "),
    (r"\bmetric\s+tonnes?\b|\bmetric\s+tons?\b|\btonnes?\b|\btons?\b|公吨|吨", " tons "),
    (r"\bmilliseconds?\b|\bms\b|毫秒", " ms "),
    (r"\bghz\b|千兆赫兹?|吉赫兹?", " ghz "),
)
_UNIT_PATTERNS = tuple((re.compile(p), r) for p, r in _UNITS)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER_LETTER = re.compile(r"(?<=\d)(?=[a-z°])")
_SPACES = re.compile(r"[ \t]+")


def _iso(match: re.Match[str], with_day: bool = True) -> str:
    month_raw = match.group("month").lower().rstrip(".")
    month = _MONTHS.get(month_raw) or int(month_raw)
    year = int(match.group("year"))
    if not 1 <= month <= 12:
        return match.group(0)
    if not with_day:
        return f"{year:04d}-{month:02d}"
    day = int(match.group("day"))
    if not 1 <= day <= 31:
        return match.group(0)
    return f"{year:04d}-{month:02d}-{day:02d}"


def normalize_answer(text: str) -> str:
    """Return `text` lower-cased with dates as ISO, bare numbers, one spelling per unit."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _THOUSANDS.sub("", text)
    for pattern in _DATE_PATTERNS:
        text = pattern.sub(_iso, text)
    for pattern in _MONTH_YEAR_PATTERNS:
        text = pattern.sub(lambda m: _iso(m, with_day=False), text)
    text = _NUMBER_LETTER.sub(" ", text)
    for pattern, replacement in _UNIT_PATTERNS:
        text = pattern.sub(replacement, text)
    return _SPACES.sub(" ", text).strip()


_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*|[°±%]|[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:['’.\-][A-Za-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u9fff]")


def answer_tokens(text: str) -> list[str]:
    """Return the comparison tokens of normalised text: words, numbers, and single CJK characters."""
    return _WORD.findall(normalize_answer(text))


def word_count(text: str) -> int:
    """Return the number of words; Chinese counts one word per two characters (a typical word)."""
    return len(_LATIN_WORD.findall(text)) + (len(_CJK.findall(text)) + 1) // 2
