"""Declared capabilities (issue 24): backends and suites derive from base classes that declare
every optional member with its default; the harness never probes for one by name, and wrappers
forward the declared members only (no `__getattr__`)."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest

from longscope.models.base import Backend, Forwarding, RetryPolicy
from longscope.models.retry import with_retries
from longscope.models.scripted import ScriptedBackend, every
from longscope.run.shards import ShardedSuite
from longscope.suites.base import Suite
from longscope.types import GenerationConfig, Message, Request

SRC = Path(__file__).resolve().parents[1] / "src" / "longscope"
PROBE = re.compile(r"\b(getattr|hasattr)\(")


def _probes(path: Path) -> list[str]:
    return [
        f"{path.relative_to(SRC.parent)}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if PROBE.search(line)
    ]


def test_no_capability_is_probed_by_name_in_run_or_api() -> None:
    found = [p for path in sorted((SRC / "run").rglob("*.py")) for p in _probes(path)]
    found += _probes(SRC / "api.py")
    # what reads the registries (issue 41): only `plugins.py` loads a target by its name
    for module in (
        "download.py",
        "export/__init__.py",
        "models/registry.py",
        "suites/__init__.py",
        "suites/base.py",
        "models/base.py",
        "analysis/uncertainty.py",
        "results.py",
    ):
        found += _probes(SRC / module)  # fmt: skip
    assert not found, "probing by name (declare the member on the base class):\n" + "\n".join(found)


def test_no_capability_is_probed_by_name_in_the_cli() -> None:
    found = _probes(SRC / "cli.py")
    assert not found, "probing by name (declare the member on the base class):\n" + "\n".join(found)


def test_no_class_forwards_through_getattr() -> None:
    """A module-level `__getattr__` (lazy re-exports in `__init__.py`) is fine; a class's is not."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in (
                        "__getattr__",
                        "__getattribute__",
                    ):
                        found.append(f"{path.relative_to(SRC.parent)}: {node.name}.{item.name}")
    assert not found, found


def _declared(base: type) -> set[str]:
    return {
        name
        for klass in base.__mro__
        if klass is not object
        for name in [*vars(klass), *getattr(klass, "__annotations__", {})]
        if not name.startswith("_")
    }


def test_the_backend_wrapper_forwards_every_declared_member() -> None:
    """A member added to `Backend` must be forwarded by `Forwarding` too (or a wrapper would hide
    it behind the default)."""
    # what the registry reads on the class (its options, what it can be built as)
    of_the_class = {
        "OPTIONS",
        "DESCRIPTION",
        "ENDPOINT",
        "SPREADS",
        "from_options",
        "over_endpoints",
    }
    copied = {"name", "max_concurrency"}
    missing = sorted(_declared(Backend) - set(vars(Forwarding)) - copied - of_the_class)
    assert not missing, f"Forwarding does not forward {missing}"
    # `name` and `max_concurrency` are copied when the wrapper is made
    wrapped = Forwarding(ScriptedBackend("x", max_concurrency=3))
    assert (wrapped.name, wrapped.max_concurrency) == ("scripted/x", 3)


def test_the_shard_forwards_every_declared_suite_member() -> None:
    own = {"shard", "all_ids", "record", "describe", "build"}
    # hooks of the suite's class, read from the registry's factory, never from a built suite
    of_the_class = {"PUBLISHED", "published", "import_predictions", "calibrate", "OPTIONS",
                    "DESCRIPTION", "from_options", "from_params", "completed", "sources"}  # fmt: skip
    missing = sorted(_declared(Suite) - set(vars(ShardedSuite)) - own - of_the_class)
    assert not missing, f"ShardedSuite does not forward {missing}"


def test_every_builtin_backend_and_suite_derives_from_its_base() -> None:
    from longscope.models.registry import provider_factory, provider_names
    from longscope.suites import suite_factory, suite_names

    for provider in provider_names():
        assert issubclass(provider_factory(provider), Backend), provider
    for name in suite_names():
        assert issubclass(suite_factory(name), Suite), name


def test_a_factory_not_derived_from_the_base_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from longscope import suites
    from longscope.errors import UsageError
    from longscope.models import registry

    class Loose:
        @classmethod
        def from_params(cls, params: dict) -> Loose:  # type: ignore[type-arg]
            return cls()

        from_options = from_params

    for plugins in (suites.REGISTRY, registry.BACKENDS):
        monkeypatch.setattr(plugins, "_registered", dict(plugins._registered))
        monkeypatch.setattr(plugins, "_loaded", dict(plugins._loaded))
    suites.register_suite("loose", Loose)
    registry.register_backend("loose", Loose)
    with pytest.raises(UsageError, match=r"^suite 'loose' .* longscope\.suites\.base\.Suite"):
        suites.suite_factory("loose")
    with pytest.raises(UsageError, match=r"^provider 'loose' .* longscope\.models\.base\.Backend"):
        registry.provider_factory("loose")


def _request(sample: str = "s", repeat: int = 0) -> Request:
    return Request(
        sample,
        repeat,
        "chat",
        messages=(Message("user", "word " * 5000),),
        config=GenerationConfig(max_tokens=8),
        prompt_tokens=5000,
        timeout_s=60.0,
    )


def test_declared_members_reach_through_every_wrapper() -> None:
    """The CLI's chain: retries around the model, the router, and any forwarding wrapper
    around them. What the runner reads on the outermost is what each layer declares."""
    from longscope.router import with_router

    scripted = ScriptedBackend(
        "x", answer="ok", fault=every(2), grouped=True, retry_policy=RetryPolicy(2, 0.0)
    )
    retried = with_retries(scripted)
    routed = with_router(retried, None, strategy="map-reduce", length=1024)
    outer = Forwarding(routed)
    # the router asks its parts one by one (no shared prefill) and names how many calls it takes
    assert retried.shares_prefill and not routed.shares_prefill and not outer.shares_prefill
    assert outer.calls_for(_request()) == routed.calls_for(_request()) > 1
    # retries happen around the model, and the count is seen from the outside
    assert outer.retries_itself and outer.retry_policy == RetryPolicy(2, 0.0)
    generations = asyncio.run(outer.generate_group([_request("a"), _request("b")]))
    assert {g.status for g in generations} == {"ok"}
    assert outer.retries_done == retried.retries_done > 0
    # one endpoint: no per-endpoint figures
    assert (outer.endpoints, outer.stats()) == ((), [])
