"""One way to plug in: a `Registry` of named plug-ins, one per kind (suites, backends, data
sources, export formats), after lm-evaluation-harness's `lm_eval/api/registry.py`.

A registry finds its plug-ins in three places, later ones winning on a name clash:
1. its built-in table (`"name": "module:attr"`, loaded only when the name is asked for);
2. its entry-point group, so a plug-in in another package registers itself:
   `[project.entry-points."longscope.suites"] mysuite = "mypackage.suite:MySuite"`;
3. `register(name, target)` at run time (tests, notebooks).

A plug-in that takes options declares them once, on its class, as typed `Param`s with their
defaults (`OPTIONS`); the registry parses `-S`/`-M` pairs against them, applies the defaults and
hands complete typed values to the plug-in (`options`, `parse`, `complete`). Its one-line
`DESCRIPTION` is what `longscope list` shows. Nothing outside a registry asks a plug-in whether
it has a member: its base class declares each one with a default.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from longscope.errors import UsageError
from longscope.params import Param, complete, parse_options

T = TypeVar("T")


def load_target(target: Any) -> Any:
    """Return the object `target` names: a `module:attr.path` string, an entry point (loaded), or
    the object itself (registered directly)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        loaded: Any = importlib.import_module(module)
        for part in filter(None, attr.split(".")):
            loaded = getattr(loaded, part)
        return loaded
    if hasattr(target, "load") and hasattr(target, "group"):  # an entry point
        return target.load()
    return target


class Registry(Generic[T]):
    """Named plug-ins of one kind: found in a built-in table, an entry-point group and at run time.

    `kind` names them in messages (`suite`, `backend`); `base` is the class every plug-in derives
    from (so that each optional member has its default), or None for plain callables (export
    writers); `flag` is how their options are given (`-S`, `-M`).
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtin: Callable[[], Mapping[str, Any]],
        *,
        base: type | None = None,
        base_path: str = "",
        flag: str = "",
        unknown: str = "",
        cached: bool = True,
    ) -> None:
        self.kind, self.group, self.base, self.flag = kind, group, base, flag
        # A table made from another registry (data sources from suites) is read each time, so
        # that what is registered there at run time shows here too.
        self._builtin = functools.cache(builtin) if cached else builtin
        self._base_path = base_path
        self._unknown = unknown
        """How an unknown name is refused, after `unknown KIND 'NAME'` ("" = `: available are`)."""
        self._registered: dict[str, Any] = {}
        self._loaded: dict[str, Any] = {}

    # -- finding ---------------------------------------------------------------------------------

    def register(self, name: str, target: Any) -> None:
        """Register `target` (the plug-in, or `"module:attr"`) as `name`, over any other."""
        self._registered[name] = target
        self._loaded.pop(name, None)

    def table(self) -> dict[str, Any]:
        """Return name -> plug-in or `"module:attr"` from every source, later sources winning."""
        return {**self._builtin(), **_entry_points(self.group), **self._registered}

    def names(self) -> list[str]:
        """Return every known name, sorted."""
        return sorted(self.table())

    def __contains__(self, name: object) -> bool:
        return name in self.table()

    def get(self, name: str) -> T:
        """Return plug-in `name`, loaded and checked (an unknown name: one line naming the known)."""
        if name in self._loaded:
            return self._loaded[name]  # type: ignore[no-any-return]
        tables = self.table()
        target = tables.get(name)
        if target is None:
            why = self._unknown or f"available are {', '.join(sorted(tables))}"
            raise UsageError(f"unknown {self.kind} {name!r}: {why}")
        loaded = load_target(target)
        if self.base is not None and not (
            isinstance(loaded, type) and issubclass(loaded, self.base)
        ):
            raise UsageError(
                f"{self.kind} {name!r} ({target}) is not a class deriving from {self._base_path}: "
                "derive it, so that every optional member has its default"
            )
        if self.base is None and not callable(loaded):
            raise UsageError(f"{self.kind} {name!r} ({target}) is not callable")
        self._loaded[name] = loaded
        return loaded  # type: ignore[no-any-return]

    # -- options ---------------------------------------------------------------------------------

    def options(self, name: str) -> tuple[Param, ...]:
        """Return the options plug-in `name` declares (its `OPTIONS`)."""
        return tuple(self.get(name).OPTIONS)  # type: ignore[attr-defined]

    def description(self, name: str) -> str:
        """Return plug-in `name`'s one-line description (`DESCRIPTION`, else its docstring's)."""
        plugin: Any = self.get(name)
        text = plugin.DESCRIPTION if self.base is not None else ""
        if text:
            return str(text)
        doc = (plugin.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    def parse(
        self, name: str, pairs: Iterable[str], *, scoring_only: bool = False
    ) -> dict[str, Any]:
        """Return `FLAG key=value` pairs as plug-in `name`'s typed values (only the keys given)."""
        return parse_options(name, self.options(name), pairs, scoring_only=scoring_only)

    def complete(self, name: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return every option of plug-in `name`: `values` typed, defaults where none is given."""
        return complete(self.options(name), dict(values))

    def listed(self, names: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """Return (name, description) of `names` (default: every plug-in), as `list` shows them."""
        return [(n, self.description(n)) for n in (self.names() if names is None else names)]


@functools.cache
def _entry_points(group: str) -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=group)}


__all__ = ["Registry", "load_target"]
