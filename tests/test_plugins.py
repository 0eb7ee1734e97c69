"""One `Registry` (issue 41): suites, backends, data sources and export formats are found, checked
and given their options the same way."""

from __future__ import annotations

from typing import Any

import pytest

from longscope.download import DATA, sources_of
from longscope.errors import UsageError
from longscope.export import FORMATS
from longscope.models.base import Backend
from longscope.models.registry import BACKENDS, create_backend, option
from longscope.params import Param
from longscope.plugins import Registry
from longscope.sources import Sources
from longscope.suites import REGISTRY as SUITES
from longscope.suites import suite_from_options
from longscope.suites.base import Suite


class Base:
    OPTIONS: tuple[Param, ...] = ()
    DESCRIPTION = ""


class Counted(Base):
    """Counted: a plug-in of the test registry."""

    OPTIONS = (Param("n", "int", 3, "how many", low=1), Param("word", "str", "x", "what"))


def test_one_registry_serves_every_kind() -> None:
    assert {type(r) for r in (SUITES, BACKENDS, DATA, FORMATS)} == {Registry}
    assert {"longctx", "ruler", "mrcr"} <= set(SUITES.names())
    assert {"llamacpp", "openai", "hf", "scripted"} <= set(BACKENDS.names())
    # data sources are the suites that declare downloads, asked of the suite itself
    assert {"ruler", "mrcr", "longbench-pro"} <= set(DATA.names())
    assert "longctx" not in DATA
    assert list(FORMATS.table()) == ["inspect", "eee", "hf", "mlflow"]


def test_options_are_parsed_and_completed_with_their_defaults() -> None:
    registry: Registry[type[Base]] = Registry("widget", "no.such.group", dict, base=Base)
    registry.register("counted", Counted)
    assert registry.get("counted") is Counted
    assert registry.description("counted") == "Counted: a plug-in of the test registry."
    given = registry.parse("counted", ["n=5"])
    assert given == {"n": 5}
    assert registry.complete("counted", given) == {"n": 5, "word": "x"}
    assert registry.complete("counted", {}) == {"n": 3, "word": "x"}
    with pytest.raises(UsageError, match=r"^bad -S n=0: expected a whole number of at least 1$"):
        registry.parse("counted", ["n=0"])
    with pytest.raises(UsageError, match=r"^unknown widget 'nope': available are counted$"):
        registry.get("nope")


def test_a_plugin_not_derived_from_the_base_is_refused() -> None:
    registry: Registry[type[Base]] = Registry(
        "widget", "no.such.group", dict, base=Base, base_path="tests.Base"
    )
    registry.register("loose", object)
    with pytest.raises(UsageError, match=r"^widget 'loose' .* not a class deriving from tests"):
        registry.get("loose")


def test_a_registered_name_wins_over_the_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FORMATS, "_registered", {})
    monkeypatch.setattr(FORMATS, "_loaded", {})

    def write(run: Any, out: Any) -> str:
        return "mine"

    FORMATS.register("inspect", write)
    assert FORMATS.get("inspect") is write


class Tally(Suite):
    name, version, default_repeats = "tally", "1", 1
    OPTIONS = (
        Param("count", "int", 4, "how many", low=1),
        Param("lengths", "lengths", (1024,), "lengths"),
    )

    def __init__(self, count: int, lengths: list[int]) -> None:
        self.count, self.lengths = count, lengths

    def params(self) -> dict[str, Any]:
        return {"count": self.count, "lengths": self.lengths}

    @classmethod
    def sources(cls) -> Sources:
        return Sources("tally", by_hand=("count them yourself",))


def test_a_suite_gets_complete_typed_options_and_data_with_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SUITES, "_registered", {})
    monkeypatch.setattr(SUITES, "_loaded", {})
    SUITES.register("tally", Tally)
    made = suite_from_options("tally", ["count=7"])
    assert isinstance(made, Tally) and (made.count, made.lengths) == (7, [1024])
    # `--lengths` (common) reaches a suite that declares lengths, typed
    assert suite_from_options("tally", [], {"lengths": "2k"}).lengths == [2048]  # type: ignore[attr-defined]
    assert sources_of("tally").by_hand == ("count them yourself",)
    with pytest.raises(UsageError, match="suite 'longctx' has no data to download"):
        sources_of("longctx")


class Echoing(Backend):
    DESCRIPTION = "echoes"
    OPTIONS = (option("loud", "bool", False, "shout"), option("times", "int", 1, "n", low=1))
    max_concurrency = 1

    def __init__(self, name: str, *, loud: bool, times: int) -> None:
        self.name, self.loud, self.times = name, loud, times


def test_a_backend_gets_complete_typed_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BACKENDS, "_registered", {})
    monkeypatch.setattr(BACKENDS, "_loaded", {})
    BACKENDS.register("echoing", Echoing)
    made = create_backend("echoing/a", {"times": "2"})
    assert isinstance(made, Echoing) and (made.name, made.loud, made.times) == ("a", False, 2)
    with pytest.raises(UsageError, match=r"^bad -M times=0: expected a whole number"):
        create_backend("echoing/a", {"times": 0})


def test_spreading_over_endpoints_is_a_declared_capability() -> None:
    from longscope.models.base import EndpointFlow
    from longscope.models.registry import spread_backend

    able = [name for name in BACKENDS.names() if BACKENDS.get(name).SPREADS]
    assert able == ["openai"]
    with pytest.raises(UsageError) as caught:
        spread_backend("scripted/x", {}, ["http://a/v1", "http://b/v1"], EndpointFlow())
    assert str(caught.value) == (
        "several --base-url apply only to openai/ models served by OpenAI-compatible endpoints, "
        "not scripted/"
    )
