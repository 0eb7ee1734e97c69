"""run/assemble.py: the run's parts from the spec's typed parts (Scale, Routing), with spreading
over endpoints a capability the backend's class declares. Built only, nothing sent."""

from __future__ import annotations

import pytest

from longscope.errors import UsageError
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.retry import Retrying
from longscope.router.backend import RoutedBackend
from longscope.run.assemble import assemble, judge_backend, routed, transport_of
from longscope.run.spec import Routing, RunSpec, Scale

A, B = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
SCRIPTED = {"tokenizer": "qwen2.5", "context_length": 4096}


def test_the_scale_decides_one_endpoint_or_several() -> None:
    one = transport_of("scripted/x", SCRIPTED, Scale())
    assert isinstance(one, Retrying) and one.inner.name == "scripted/x"
    several = transport_of("openai/m", {}, Scale(base_url=(A, B), concurrency=2))
    assert isinstance(several, MultiEndpointBackend)
    assert [e.base_url for e in several.endpoints] == [A, B]
    capped = transport_of("openai/m", {}, Scale(base_url=A, max_tokens_in_flight=500))
    assert isinstance(capped, MultiEndpointBackend) and capped.token_cap == 500


def test_a_backend_that_cannot_spread_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError) as caught:
        transport_of("scripted/x", SCRIPTED, Scale(max_tokens_in_flight=100))
    assert str(caught.value) == (
        "--max-tokens-in-flight applies only to openai/ models served by OpenAI-compatible "
        "endpoints, not scripted/"
    )
    # stated rates alone do not need spreading: a backend that cannot is built plainly
    rated = transport_of("scripted/x", SCRIPTED, Scale(prefill_rate=10.0, decode_rate=5.0))
    assert isinstance(rated, Retrying)


def test_the_router_goes_in_front_only_when_asked() -> None:
    plain = transport_of("scripted/x", SCRIPTED, Scale())
    assert routed(plain, Routing()) is plain
    front = routed(plain, Routing(length="2k", strategy="truncate"))
    assert isinstance(front, RoutedBackend) and front.inner is plain
    assert (front.length, front.strategy) == (2048, "truncate")


def test_assemble_returns_the_suite_the_routed_backend_and_its_transport() -> None:
    spec = RunSpec.of(
        "longctx",
        "scripted/x",
        model_options=SCRIPTED,
        suite_options=["types=needle"],
        lengths="1k",
        router_length="1k",
        shard="1/2",
    )
    made = assemble(spec)
    assert made.suite.shard is not None and made.suite.describe().startswith("shard 1/2")
    assert isinstance(made.backend, RoutedBackend) and made.backend.inner is made.transport


def test_a_judge_that_talks_to_a_server_needs_an_endpoint_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match=r"^judge openai/j has no endpoint: give --judge-base-url"):
        judge_backend("openai/j")
    assert judge_backend("openai/j", A).name.endswith("j")
    # a backend in this process needs no endpoint
    assert judge_backend("scripted/j", None, SCRIPTED).name == "scripted/j"
