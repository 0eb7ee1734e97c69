"""A plug-in's options: declared once, as typed `Param`s with their defaults, parsed and checked here.

A suite, a backend (any plug-in of `longscope.plugins.Registry`) declares its options as a tuple of
`Param` (class attribute `OPTIONS`); `longscope list NAME` prints them with their defaults and help,
and `-S key=value` / `-M key=value` values are parsed by their kind before the plug-in sees them.
A bad value is a `UsageError` naming the key: one line, exit 2. This module sits below both
`suites` and `models`, which share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from longscope.errors import UsageError

Kind = Literal[
    "int", "float", "bool", "str", "choice", "ints", "strs", "lengths", "depths", "pairs", "tokens"
]

MAX_LENGTH_TOKENS = 1 << 24
"""Longer than any context a model holds (16M tokens): a larger length is a typo."""
MAX_COUNT = 100_000
"""Ceiling of a count parameter (a whole number of at least 1 without its own bound, such as
samples per task and length): RULER draws 500; a larger count is a typo that would build for hours."""
MAX_ITEMS = 1_000
"""Items one list parameter may hold (lengths, depths, tasks): each multiplies the samples built."""
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_SHOW = {
    "int": "N",
    "float": "X",
    "bool": "true|false",
    "str": "TEXT",
    "ints": "N,N",
    "strs": "A,B",
    "lengths": "4k,16k",
    "depths": "0.1,0.5",
    "pairs": "KEY=VALUE",
    "tokens": "N|4k|1M",
}


def _visible(text: object) -> str:
    from longscope.text.safe_text import visible

    return visible(text)


def items(text: str, flag: str, example: str) -> list[str]:
    """Return the stripped items of a comma-separated list; an empty item is a usage error."""
    if text.count(",") >= MAX_ITEMS:
        raise UsageError(f"bad {flag}: {text.count(',') + 1:,} items, at most {MAX_ITEMS:,}")
    parts = [part.strip() for part in text.split(",")]
    if not any(parts) or not all(parts):
        raise UsageError(
            f"bad {flag} {_visible(text)!r}: an empty item; use a comma-separated list like {example}"
        )
    return parts


_UNITS = {"k": 1024, "m": 1024 * 1024}
"""Length suffixes, binary as the tiers are counted: 4k = 4,096 and 1M = 1,048,576 tokens."""


def parse_length(part: str, flag: str, low: float = 1) -> int:
    """Parse one length: `4k`, `1M`/`1m` (k = 1024, M = 1024 x 1024) or a token count."""
    lower = str(part).strip().lower()
    unit = _UNITS.get(lower[-1:], 1)
    try:
        value = float(lower[:-1] if unit > 1 else lower) * unit
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low or value > MAX_LENGTH_TOKENS or value % 1:
        raise UsageError(
            f"bad length {_visible(part)!r} in {flag}: use whole token counts like 4k, 1M or "
            f"32768 (at least {low:g}, at most {MAX_LENGTH_TOKENS // 1024 // 1024}M)"
        )
    return int(value)


def parse_lengths(text: str, flag: str = "--lengths") -> tuple[int, ...]:
    """Parse `4k,16k,32768` into token counts (k = 1024)."""
    return tuple(parse_length(part, flag) for part in items(text, flag, "4k,16k"))


def parse_depths(text: str, flag: str) -> tuple[float, ...]:
    """Parse depths: fractions (0-1) or percents (above 1, up to 100)."""
    values = []
    for part in items(text, flag, "0.1,0.5,0.9"):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not 0 <= value <= 100:
            raise UsageError(
                f"bad {flag} item {_visible(part)!r}: use fractions like 0.1,0.5 "
                "or percents like 10,50"
            )
        values.append(value / 100 if value > 1 else value)
    return tuple(values)


@dataclass(frozen=True)
class Param:
    """One suite parameter: its name, kind, default and help, and what values it takes."""

    name: str
    kind: Kind
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    scoring: bool = False
    """Changes scores, never generations: `score` and `report` accept it again (`-S`)."""
    given_as: str = field(default="", compare=False, repr=False)
    """The option it came through when not `-S name` (a common option such as `--lengths`)."""

    @property
    def flag(self) -> str:
        return self.given_as or f"-S {self.name}"

    def shown_default(self) -> str:
        value = self.default
        if value is None or value == () or value == {}:
            return "-"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list | tuple):
            if self.kind == "lengths":
                return ",".join(f"{v // 1024}k" if v % 1024 == 0 else str(v) for v in value)
            return ",".join(str(v) for v in value)
        return str(value)

    def usage(self) -> str:
        """Return `name=VALUE` as `longscope list SUITE` shows it."""
        if self.kind == "choice":
            return f"{self.name}={'|'.join(self.choices)}"
        return f"{self.name}={_SHOW[self.kind]}"

    def parse(self, raw: Any, flag: str | None = None) -> Any:
        """Return `raw` (command-line text, or a value already typed) as this parameter's type.

        `flag` names the option in messages when it is not `-S name` (a common option).
        """
        if raw is None:
            return None
        if flag is not None and flag != self.flag:
            return replace(self, given_as=flag).parse(raw)
        if not isinstance(raw, str):
            return self._typed(raw)
        text = raw.strip()
        kind = self.kind
        if kind == "bool":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise UsageError(f"bad {self.flag}={_visible(raw)}: expected true or false")
        if kind in ("int", "float"):
            return self._number(text, raw)
        if kind == "choice":
            if text not in self.choices:
                raise UsageError(
                    f"bad {self.flag}={_visible(raw)}: use one of {', '.join(self.choices)}"
                )
            return text
        if kind == "str":
            if not text:
                raise UsageError(f"bad {self.flag}=: expected a value")
            return text
        if kind == "lengths":
            return list(parse_lengths(text, self.flag))
        if kind == "tokens":
            # A token length, not a count: bounded by the longest context, not by MAX_COUNT.
            low = 1 if self.low is None else self.low
            try:
                return parse_length(text, self.flag, low)
            except UsageError:
                raise UsageError(
                    f"bad {self.flag}={_visible(raw)}: expected a token length like 4k, 1M or "
                    f"32768, from {low:g} to {MAX_LENGTH_TOKENS // 1024 // 1024}M"
                ) from None
        if kind == "depths":
            return list(parse_depths(text, self.flag))
        if kind == "ints":
            parts = items(text, self.flag, "1,2")
            try:
                values = [int(x) for x in parts]
            except ValueError as exc:
                raise UsageError(
                    f"bad {self.flag} {_visible(raw)!r}: use a comma-separated list like 1,2"
                ) from exc
            return values
        if kind == "strs":
            values = items(text, self.flag, "a,b")
            self._check_choices(values, raw)
            return values
        if kind == "pairs":
            key, sep, value = text.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UsageError(f"bad {self.flag}={_visible(raw)}: expected {self.name}=KEY=VALUE")
            return {key.strip(): value.strip()}
        raise AssertionError(kind)

    def _typed(self, value: Any) -> Any:
        """Check a value given as its type (stored params, the library API)."""
        kind = self.kind
        if kind in ("ints", "strs", "lengths", "depths") and isinstance(value, list | tuple):
            return list(value)
        if kind == "pairs" and isinstance(value, dict):
            return dict(value)
        if kind == "tokens":
            return self.parse(str(value))
        if (
            kind in ("int", "float")
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            return self._number(str(value), value)
        return value

    def _number(self, text: str, raw: Any) -> int | float:
        whole = self.kind == "int"
        try:
            value: float = int(text) if whole else float(text)
        except ValueError:
            value = math.nan
        low, high = self.low, self.high
        count = whole and high is None and low is not None and low >= 1
        if count:
            high = MAX_COUNT  # a count: bounded before any work
        bad = not math.isfinite(value) or (low is not None and value < low)
        bad = bad or (high is not None and value > high)
        if bad:
            kind = "a whole number" if whole else "a number"
            if count and math.isfinite(value) and value > MAX_COUNT:
                bound = f" of at most {MAX_COUNT:,}"
            elif low is not None and self.high is not None:
                bound = f" from {low:g} to {self.high:g}"
            elif low is not None:
                bound = f" of at least {low:g}"
            else:
                bound = ""
            raise UsageError(f"bad {self.flag}={_visible(raw)}: expected {kind}{bound}")
        return value

    def _check_choices(self, values: Sequence[str], raw: Any) -> None:
        if not self.choices:
            return
        bad = [v for v in values if v not in self.choices]
        if bad:
            raise UsageError(
                f"bad {self.flag}={_visible(raw)}: unknown {_visible(bad[0])!r}; "
                f"use {', '.join(self.choices)}"
            )


def parse_options(
    suite: str, declared: Sequence[Param], pairs: Iterable[str], *, scoring_only: bool = False
) -> dict[str, Any]:
    """Return `-S key=value` pairs as the suite's typed values (only the keys given).

    Keys may use `-` or `_`. A `pairs` parameter may be given several times (its values merge);
    any other key given twice keeps the last value. With `scoring_only`, a parameter that changes
    generations is refused (re-scoring cannot change what the model was asked).
    """
    by_name = {p.name: p for p in declared}
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise UsageError(f"malformed suite option {_visible(pair)!r}: expected -S key=value")
        param = by_name.get(key)
        if param is None:
            known = ", ".join(p.name for p in declared) or "none"
            raise UsageError(
                f"unknown {suite} option {_visible(key)!r}: {suite} takes {known} "
                f"(see `longscope list {suite}`)"
            )
        if scoring_only and not param.scoring:
            scoring = ", ".join(p.name for p in declared if p.scoring) or "none"
            raise UsageError(
                f"-S {key} changes what the model is asked: run again with it; re-scoring takes "
                f"only {scoring}"
            )
        value = param.parse(raw)
        if param.kind == "pairs":
            values[key] = {**values.get(key, {}), **value}
        else:
            values[key] = value
    return values


def defaults(declared: Sequence[Param]) -> dict[str, Any]:
    """Return every declared parameter's default."""
    return {p.name: p.default for p in declared}


def complete(declared: Sequence[Param], values: dict[str, Any]) -> dict[str, Any]:
    """Return every declared parameter's value: `values` typed, each default where none is given.

    A list default is handed over as a list (as a parsed value is), so a plug-in sees one type.
    """
    out = {}
    for p in declared:
        value = values.get(p.name, p.default)
        out[p.name] = p.parse(value) if value is not None else None
    return {**values, **out}


def describe(declared: Sequence[Param]) -> list[tuple[str, str, str]]:
    """Return (usage, default, help) per parameter, as `longscope list SUITE` prints them."""
    rows = []
    for p in declared:
        text = p.help
        if p.choices and p.kind == "strs":
            text += f" (any of {', '.join(p.choices)})"
        rows.append((p.usage(), p.shown_default(), text + (" [scoring]" if p.scoring else "")))
    return rows


__all__ = [
    "MAX_COUNT",
    "MAX_ITEMS",
    "MAX_LENGTH_TOKENS",
    "Kind",
    "Param",
    "complete",
    "defaults",
    "describe",
    "items",
    "parse_depths",
    "parse_lengths",
    "parse_options",
]
