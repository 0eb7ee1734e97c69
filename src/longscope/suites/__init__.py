"""Suite registry: names to suites, with nothing here that knows any suite.

Suites are found in three places, later ones winning on a name clash:
1. tables the suite packages under `longscope/suites/` declare: `SUITES = {"name": "module:attr"}`
   in the package's `__init__.py` (one line registers a suite);
2. the `longscope.suites` entry-point group, so a suite in another package plugs in:
   `[project.entry-points."longscope.suites"] mysuite = "mypackage.suite:MySuite"`;
3. `register_suite(name, factory)` at run time (tests, notebooks).

A factory is a class deriving from `suites.base.Suite` with `from_params(params) -> Suite` (builds
the suite from stored or given parameters), and optionally `OPTIONS` (its `Param`s: typed `-S key=value` values,
listed by `longscope list SUITE`), `from_options(values)` (when command-line values need another
path than stored ones) and `DESCRIPTION`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from typing import Any

from longscope.errors import UsageError
from longscope.plugins import load_target
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite
from longscope.suites.params import Param, parse_options

ENTRY_POINT_GROUP = "longscope.suites"
_registered: dict[str, Any] = {}
_loaded: dict[str, Any] = {}


def register_suite(name: str, factory: Any) -> None:
    """Register a suite factory (a `Suite` class with `from_params`, or `"module:attr"`)."""
    _registered[name] = factory
    _loaded.pop(name, None)


def _tables() -> dict[str, Any]:
    """Return name -> factory or `"module:attr"` from every source, later sources winning."""
    return {**_builtin(), **_entry_points(), **_registered}


@functools.cache
def _builtin() -> dict[str, Any]:
    """The tables of the suite packages under longscope/suites (their `SUITES`)."""
    found: dict[str, Any] = {}
    package = importlib.import_module(__name__)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.ispkg:
            module = importlib.import_module(f"{__name__}.{info.name}")
            found.update(getattr(module, "SUITES", {}) or {})
    return found


@functools.cache
def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def suite_names() -> list[str]:
    """Return every known suite's name, sorted."""
    return sorted(_tables())


def suite_factory(name: str) -> Any:
    """Return the factory of suite `name` (a `Suite` class with `from_params`)."""
    if name in _loaded:
        return _loaded[name]
    tables = _tables()
    target = tables.get(name)
    if target is None:
        raise UsageError(f"unknown suite {name!r}: available are {', '.join(sorted(tables))}")
    loaded = load_target(target)
    if not (isinstance(loaded, type) and issubclass(loaded, Suite)):
        raise UsageError(
            f"suite {name!r} ({target}) is not a class deriving from longscope.suites.base.Suite: "
            "derive it, so that every optional hook has its default"
        )
    if not callable(getattr(loaded, "from_params", None)):
        raise UsageError(f"suite {name!r} ({target}) has no from_params(params)")
    _loaded[name] = loaded
    return loaded


def suite_options(name: str) -> tuple[Param, ...]:
    """Return the parameters suite `name` declares (empty when it declares none)."""
    return tuple(getattr(suite_factory(name), "OPTIONS", ()) or ())


def suite_description(name: str) -> str:
    factory = suite_factory(name)
    text = getattr(factory, "DESCRIPTION", None) or getattr(factory, "description", None)
    if isinstance(text, str) and text:
        return text
    doc = (getattr(factory, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def create_suite(name: str, params: dict[str, Any]) -> Suite:
    """Return suite `name` built from its params (as `Suite.params()` returns them, or typed)."""
    factory = suite_factory(name)
    try:
        return _named(name, factory.from_params(dict(params)))
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _named(name: str, suite: Any) -> Suite:
    """A run stores `suite.name` and is read back through the registry by it: they must agree."""
    if getattr(suite, "name", None) != name:
        raise UsageError(
            f"suite {name!r} builds a suite named {getattr(suite, 'name', None)!r}: register it "
            "under its own name"
        )
    return suite  # type: ignore[no-any-return]


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
        values = parse_options(name, declared, pairs)
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
    build = getattr(factory, "from_options", None) or factory.from_params
    try:
        return _named(name, build(values))
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def scoring_overrides(name: str, pairs: Sequence[str]) -> dict[str, Any]:
    """Return `-S` pairs given to `score` / `report`: only parameters that change scores."""
    if not pairs:
        return {}
    return parse_options(name, suite_options(name), pairs, scoring_only=True)


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
