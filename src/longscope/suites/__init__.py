"""Suite registry: names to suites, with nothing here that knows any suite.

`REGISTRY` (a `plugins.Registry`) finds suites in three places, later ones winning on a name clash:
1. tables the suite packages under `longscope/suites/` declare: `SUITES = {"name": "module:attr"}`
   in the package's `__init__.py` (one line registers a suite);
2. the `longscope.suites` entry-point group, so a suite in another package plugs in:
   `[project.entry-points."longscope.suites"] mysuite = "mypackage.suite:MySuite"`;
3. `register_suite(name, factory)` at run time (tests, notebooks).

A suite is a class deriving from `suites.base.Suite`. It declares its `-S` options once, as typed
`Param`s with their defaults (`OPTIONS`); the registry parses `-S key=value` pairs, applies the
defaults and hands the complete typed values to `from_options` (by default the constructor).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.plugins import Registry
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite

ENTRY_POINT_GROUP = "longscope.suites"


def _builtin() -> dict[str, Any]:
    """The tables of the suite packages under longscope/suites (their `SUITES`)."""
    found: dict[str, Any] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg:
            module = importlib.import_module(f"{__name__}.{info.name}")
            # A package may hold a suite's parts before its class is registered (no table yet).
            found.update(vars(module).get("SUITES", {}))
    return found


REGISTRY: Registry[type[Suite]] = Registry(
    "suite",
    ENTRY_POINT_GROUP,
    _builtin,
    base=Suite,
    base_path="longscope.suites.base.Suite",
    flag="-S",
)


def register_suite(name: str, factory: Any) -> None:
    """Register a suite (a `Suite` class, or `"module:attr"`)."""
    REGISTRY.register(name, factory)


def suite_names() -> list[str]:
    """Return every known suite's name, sorted."""
    return REGISTRY.names()


def suite_factory(name: str) -> type[Suite]:
    """Return the class of suite `name`."""
    return REGISTRY.get(name)


def suite_options(name: str) -> tuple[Param, ...]:
    """Return the parameters suite `name` declares (empty when it declares none)."""
    return REGISTRY.options(name)


def suite_description(name: str) -> str:
    """Return suite `name`'s one-line description."""
    return REGISTRY.description(name)


def create_suite(name: str, params: dict[str, Any]) -> Suite:
    """Return suite `name` built from its params (as `Suite.params()` returns them, or typed)."""
    factory = suite_factory(name)
    try:
        return _named(name, factory.from_params(dict(params)))
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _named(name: str, suite: Suite) -> Suite:
    """A run stores `suite.name` and is read back through the registry by it: they must agree."""
    if suite.name != name:
        raise UsageError(
            f"suite {name!r} builds a suite named {suite.name!r}: register it under its own name"
        )
    return suite


def suite_from_options(
    name: str, pairs: Sequence[str] = (), common: dict[str, Any] | None = None
) -> Suite:
    """Return suite `name` from `-S key=value` pairs and the common options it declares.

    `common` holds options every suite may take (`seed`, `lengths` as text): each reaches the
    suite only when it declares a parameter of that name and `-S` did not set it. A suite that
    declares no parameters gets the pairs as text.
    """
    factory = suite_factory(name)
    declared = suite_options(name)
    common = {k: v for k, v in (common or {}).items() if v is not None}
    if not declared:
        values: dict[str, Any] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"malformed suite option {pair!r}: expected -S key=value")
            values[key.strip().replace("-", "_")] = raw.strip()
        values = {**{k: str(v) for k, v in common.items()}, **values}
    else:
        values = REGISTRY.parse(name, pairs)
        by_name = {p.name: p for p in declared}
        for key, value in common.items():
            if key in by_name and key not in values:
                values[key] = by_name[key].parse(value, f"--{key}")
            elif key == "lengths" and key in values:
                # `--seed` always has a value (0), so only `--lengths` can be told apart here.
                given = by_name[key].parse(value, f"--{key}")
                if given != values[key]:
                    raise UsageError(
                        f"--lengths {value} and -S lengths=... disagree: give the lengths once"
                    )
            elif key not in by_name and key in ("lengths",):
                raise UsageError(f"--{key} does not apply to {name}: see `longscope list {name}`")
    if declared:
        values = REGISTRY.complete(name, values)
    try:
        return _named(name, factory.from_options(values))
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def scoring_overrides(name: str, pairs: Sequence[str]) -> dict[str, Any]:
    """Return `-S` pairs given to `score` / `report`: only parameters that change scores."""
    if not pairs:
        return {}
    return REGISTRY.parse(name, pairs, scoring_only=True)


def refuse_scoring_options(suite: Suite, keys: Iterable[str]) -> None:
    """Refuse, in one line, `-S` options a run would drop: scoring options it does not store.

    The end of a run scores it from the parameters it stored (`suite.params()`); a scoring option
    left out of them would be silently ignored there. It belongs to `score` (which stores the new
    scores) or `report` (which shows them without writing).
    """
    scoring = {p.name for p in suite_options(suite.name) if p.scoring}
    stored = set(suite.params())
    for key in keys:
        key = key.partition("=")[0].strip().replace("-", "_")
        if key in scoring and key not in stored:
            raise UsageError(
                f"-S {key} changes scores only, and `run` scores without it: after the run, "
                f"`longscope score RUN_DIR -S {key}=...` stores scores with it "
                f"(`longscope report RUN_DIR -S {key}=...` shows them)"
            )


__all__ = [
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "BuildContext",
    "Param",
    "PromptTemplate",
    "ScoredRow",
    "Suite",
    "create_suite",
    "refuse_scoring_options",
    "register_suite",
    "scoring_overrides",
    "suite_description",
    "suite_factory",
    "suite_from_options",
    "suite_names",
    "suite_options",
]
