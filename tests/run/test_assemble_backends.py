"""assemble.transport_backend / build_backend: each option lands in the backend that sends the requests
(one endpoint, several, flow control), and the options that need openai/ endpoints are refused
elsewhere with one line. Built only, nothing sent: no model, no server; fast for mutmut."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.openai_api import OpenAIBackend
from longscope.models.retry import Retrying
from longscope.run import assemble

A, B = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"


def test_one_endpoint_is_one_openai_backend_with_the_transport_options() -> None:
    backend = assemble.transport_backend(
        "openai/m", ["context_length=4096"], base_url=A, concurrency=3, request_timeout=7.5
    )
    assert type(backend) is OpenAIBackend  # retries inside its transport: no second retry layer
    assert (backend.base_url, backend.model) == (A, "m")
    assert (backend.max_concurrency, backend.request_timeout_s) == (3, 7.5)
    assert backend.stated_context_length == 4096
    plain = assemble.transport_backend("openai/m", base_url=[A])
    assert type(plain) is OpenAIBackend and plain.base_url == A
    assert (plain.max_concurrency, plain.request_timeout_s) == (8, 600.0)  # the backend's own


def test_several_endpoints_are_one_multi_endpoint_backend_with_every_option() -> None:
    backend = assemble.transport_backend(
        "openai/m",
        {"context_length": 8192},
        base_url=[A, B],
        concurrency=4,
        request_timeout=9.0,
        max_tokens_in_flight=5000,
        prefill_rate=1000.0,
        decode_rate=50.0,
    )
    assert isinstance(backend, MultiEndpointBackend)
    assert [e.base_url for e in backend.endpoints] == [A, B]
    assert {(e.max_concurrency, e.request_timeout_s) for e in backend.endpoints} == {(4, 9.0)}
    assert {e.stated_context_length for e in backend.endpoints} == {8192}
    assert backend.token_cap == 5000
    assert (backend.deadlines.prefill_tps, backend.deadlines.decode_tps) == (1000.0, 50.0)


@pytest.mark.parametrize(
    "flow",
    [{"max_tokens_in_flight": 100}, {"prefill_rate": 10.0}, {"decode_rate": 2.0}],
)
def test_one_endpoint_with_any_flow_option_goes_through_flow_control(flow: dict) -> None:
    backend = assemble.transport_backend("openai/m", base_url=A, **flow)
    assert isinstance(backend, MultiEndpointBackend)
    assert [e.base_url for e in backend.endpoints] == [A]
    assert backend.token_cap == flow.get("max_tokens_in_flight")
    assert backend.deadlines.prefill_tps == flow.get("prefill_rate")
    assert backend.deadlines.decode_tps == flow.get("decode_rate")


def test_a_local_backend_gets_the_retry_policy_around_it() -> None:
    backend = assemble.transport_backend("scripted/x", {"tokenizer": "qwen2.5"})
    assert isinstance(backend, Retrying) and backend.inner.name.endswith("x")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"base_url": [A, B]},
            "several --base-url apply only to openai/ models served by OpenAI-compatible "
            "endpoints, not scripted/",
        ),
        (
            {"max_tokens_in_flight": 10},
            "--max-tokens-in-flight applies only to openai/ models served by OpenAI-compatible "
            "endpoints, not scripted/",
        ),
        (
            {"base_url": [A], "max_tokens_in_flight": 10},
            "--max-tokens-in-flight applies only to openai/ models served by OpenAI-compatible "
            "endpoints, not scripted/",
        ),
        (
            {"base_url": [A, B], "max_tokens_in_flight": 10},
            "several --base-url apply only to openai/ models served by OpenAI-compatible "
            "endpoints, not scripted/",
        ),
    ],
)
def test_openai_only_options_are_refused_for_other_providers(given: dict, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        assemble.transport_backend("scripted/x", {"tokenizer": "qwen2.5"}, **given)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"concurrency": 0}, "bad --concurrency 0: expected a whole number of at least 1"),
        ({"request_timeout": 0.0}, "bad --request-timeout 0.0: expected a number of at least"),
        ({"max_tokens_in_flight": 0}, "bad --max-tokens-in-flight 0: expected a whole number"),
        ({"prefill_rate": 0.0}, "bad --prefill-rate 0.0: expected a number of at least 0.001"),
        ({"decode_rate": -1.0}, "bad --decode-rate -1.0: expected a number of at least 0.001"),
    ],
)
def test_transport_options_are_checked_as_the_command_line_checks_them(
    given: dict, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        assemble.transport_backend("openai/m", base_url=A, **given)
    assert str(caught.value).startswith(message)


def test_a_bad_model_spec_is_refused_before_anything_is_built() -> None:
    with pytest.raises(UsageError) as caught:
        assemble.transport_backend("openai/m\x1b", base_url=A)
    assert str(caught.value).startswith("bad --model 'openai/m")
    assert str(caught.value).endswith("': contains control or invisible characters")
    assert "\x1b" not in str(caught.value)


def test_build_backend_passes_every_transport_option_through() -> None:
    backend = assemble.build_backend(
        "openai/m",
        base_url=[A, B],
        concurrency=2,
        request_timeout=3.0,
        max_tokens_in_flight=700,
        prefill_rate=11.0,
        decode_rate=12.0,
    )
    multi = backend
    while not isinstance(multi, MultiEndpointBackend):  # past the output-budget check, if any
        multi = multi.inner  # type: ignore[attr-defined]
    assert [e.base_url for e in multi.endpoints] == [A, B]
    assert {(e.max_concurrency, e.request_timeout_s) for e in multi.endpoints} == {(2, 3.0)}
    assert (multi.token_cap, multi.deadlines.prefill_tps, multi.deadlines.decode_tps) == (
        700,
        11.0,
        12.0,
    )


SCRIPTED = {"tokenizer": "qwen2.5", "context_length": 4096}


async def test_max_tokens_that_fill_the_context_are_refused_when_the_model_answers() -> None:
    # The prepared run checks the budget once the model has answered (issue 41: no wrapper).
    from longscope.run.prepared import check_output_budget

    info = await assemble.build_backend("scripted/x", SCRIPTED).info()
    with pytest.raises(UsageError) as caught:
        check_output_budget(4096, info, "scripted/x")
    assert str(caught.value) == (
        "--max-tokens 4096 does not fit scripted/x: it holds 4096 tokens (user) for prompt and "
        "answer together; use a smaller --max-tokens"
    )
    # One token less leaves one for the prompt: accepted; no budget or no known context: accepted.
    check_output_budget(4095, info, "scripted/x")
    check_output_budget(None, info, "scripted/x")
    default = await assemble.build_backend("scripted/x", {"tokenizer": "qwen2.5"}).info()
    assert default.context_length == 32768
    check_output_budget(32767, default, "scripted/x")
    assert assemble.build_backend("scripted/x", SCRIPTED).name == "scripted/x"


def test_a_router_length_puts_the_router_in_front_with_its_options() -> None:
    from longscope.router.backend import RoutedBackend

    routed = assemble.build_backend(
        "scripted/x",
        SCRIPTED,
        router_length="2k",
        router_strategy="truncate",
        router_basis="relative",
    )
    assert isinstance(routed, RoutedBackend)
    assert (routed.length, routed.strategy, routed.basis) == (2048, "truncate", "relative")
    assert routed.name == "scripted/x+router"
    assert assemble.build_backend("scripted/x", SCRIPTED, router_length=3000).length == 3000
    both = assemble.build_backend("scripted/x", SCRIPTED, router_length="1k")
    assert isinstance(both, RoutedBackend) and both.length == 1024
    assert not isinstance(assemble.build_backend("scripted/x", SCRIPTED), RoutedBackend)
    with pytest.raises(UsageError) as caught:
        assemble.build_backend("scripted/x", SCRIPTED, router_length="lots")
    assert str(caught.value).startswith("bad length 'lots' in --router-length: use whole token")


def test_the_endpoints_are_the_base_urls_then_the_files(tmp_path: Path) -> None:
    from longscope.run.spec import Scale

    listed = tmp_path / "urls.txt"
    listed.write_text(f"# more\n{B}\n")
    assert assemble.endpoint_urls_of(Scale(base_url=A, base_urls_file=listed)) == [A, B]
    assert assemble.endpoint_urls_of(Scale(base_urls_file=listed)) == [B]
    assert assemble.endpoint_urls_of(Scale(base_url=[A])) == [A]


def test_a_router_profile_gives_the_budget_by_its_basis(tmp_path: Path) -> None:
    import json

    from longscope.router.backend import RoutedBackend

    profile = tmp_path / "profile.json"
    profile.write_text(
        json.dumps(
            {
                "model": "scripted/x",
                "effective_context": 3072,
                "measured": [{"suite": "ruler", "relative_effective_length": 2048}],
            }
        )
    )
    absolute = assemble.build_backend("scripted/x", SCRIPTED, router=profile)
    assert isinstance(absolute, RoutedBackend) and absolute.profile is not None
    assert (absolute.profile.path, absolute.length) == (str(profile), 3072)
    relative = assemble.build_backend(
        "scripted/x", SCRIPTED, router=str(profile), router_basis="relative"
    )
    assert (relative.length, relative.basis) == (2048, "relative")  # type: ignore[attr-defined]
