"""RunSpec's checks at their exact bounds, and every keyword of `RunSpec.of` landing where the run
reads it (the runner's options, the scale, the router, the judge). Pure values: no model, no
server; fast enough for mutmut's selection."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.params import MAX_LENGTH_TOKENS
from longscope.run.prepared import MAX_REQUESTS, RunOptions
from longscope.run.spec import (
    MAX_CONCURRENCY,
    MAX_REPEATS,
    MAX_TOKENS_IN_FLIGHT,
    Judging,
    Overrides,
    Routing,
    RunSpec,
    Scale,
    at_least,
    at_most,
    between,
    model_options,
    model_spec,
    run_directory,
)

NEEDLE = ("longctx", "scripted/x")


def _refused(call, *args, **kwargs) -> str:
    with pytest.raises(UsageError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


# --- the three checks, at their bounds -----------------------------------------------------------


def test_at_least_takes_the_bound_and_refuses_just_below_it() -> None:
    at_least(1, "--x", 1, whole=True)
    at_least(0.001, "--x", 0.001)
    at_least(None, "--x", 1)
    assert _refused(at_least, 0, "--x", 1, whole=True) == (
        "bad --x 0: expected a whole number of at least 1"
    )
    assert _refused(at_least, 0.0009, "--x", 0.001) == (
        "bad --x 0.0009: expected a number of at least 0.001"
    )


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, False])
def test_at_least_refuses_nan_infinities_and_booleans(value: float) -> None:
    assert (
        _refused(at_least, value, "--x", 0) == f"bad --x {value!r}: expected a number of at least 0"
    )


def test_at_least_whole_refuses_a_fraction_and_takes_a_whole_float() -> None:
    assert _refused(at_least, 2.5, "--x", 1, whole=True) == (
        "bad --x 2.5: expected a whole number of at least 1"
    )
    at_least(2.0, "--x", 1, whole=True)
    at_least(2.5, "--x", 1)  # a fraction is fine where a whole number is not asked


def test_at_most_takes_the_bound_and_refuses_one_above() -> None:
    at_most(4096, "--x", 4096)
    at_most(None, "--x", 4096)
    assert _refused(at_most, 4097, "--x", 4096) == "bad --x 4097: at most 4,096"


def test_between_takes_both_ends_and_refuses_past_them() -> None:
    between(0.0, "--t", 0.0, 2.0)
    between(2.0, "--t", 0.0, 2.0)
    between(None, "--t", 0.0, 2.0)
    assert _refused(between, -0.01, "--t", 0.0, 2.0) == (
        "bad --t -0.01: expected a number from 0 to 2"
    )
    assert _refused(between, 2.01, "--t", 0.0, 2.0) == "bad --t 2.01: expected a number from 0 to 2"
    assert _refused(between, math.nan, "--t", 0.0, 2.0).startswith("bad --t nan: ")


# --- model spec, -M options, output --------------------------------------------------------------


@pytest.mark.parametrize("bad", ["openai/a\x00b", "openai/a\u200bb", "openai/a\nb", "\x7fm"])
def test_a_model_spec_with_control_or_invisible_characters_is_refused(bad: str) -> None:
    message = _refused(model_spec, bad, "--judge-model")
    assert message.startswith("bad --judge-model '") and message.endswith(
        "': contains control or invisible characters"
    )
    assert "\n" not in message and "\x00" not in message and "\u200b" not in message
    assert _refused(model_spec, bad).startswith("bad --model '")


def test_a_plain_model_spec_is_returned_as_given() -> None:
    assert model_spec("openai/Qwen 2.5 - ünïcode") == "openai/Qwen 2.5 - ünïcode"


def test_model_options_from_pairs_or_a_mapping() -> None:
    assert model_options(["context_length=8192", "n_gpu_layers=-1"]) == {
        "context_length": 8192,
        "n_gpu_layers": -1,
    }
    assert model_options({"ram_gib": 1.5}) == {"ram_gib": 1.5}
    assert model_options(None) == {}
    assert model_options([]) == {}


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_model_options_refuse_a_number_that_is_not_finite(value: float) -> None:
    assert _refused(model_options, {"ram_gib": value}) == (
        f"bad -M ram_gib={value}: expected a finite number"
    )


def test_run_directory(tmp_path: Path) -> None:
    assert run_directory(None) is None
    assert run_directory(str(tmp_path)) == tmp_path
    assert run_directory(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "file").write_text("kept")
    assert _refused(run_directory, tmp_path / "file") == (
        f"--output {tmp_path / 'file'} exists and is not a directory"
    )
    assert (tmp_path / "file").read_text() == "kept"


# --- the parts, at their bounds ------------------------------------------------------------------


def test_every_count_takes_its_upper_bound() -> None:
    Overrides(
        limit=MAX_REQUESTS,
        repeats=MAX_REPEATS,
        max_tokens=MAX_LENGTH_TOKENS,
        thinking_budget=MAX_LENGTH_TOKENS,
        seed=0,
        temperature=2.0,
    )
    Overrides(limit=1, repeats=1, max_tokens=1, thinking_budget=1, temperature=0.0)
    Scale(
        concurrency=MAX_CONCURRENCY,
        max_tokens_in_flight=MAX_TOKENS_IN_FLIGHT,
        request_timeout=0.001,
        prefill_rate=0.001,
        decode_rate=0.001,
        price_in=0.0,
        price_out=0.0,
    )
    Scale(concurrency=1, max_tokens_in_flight=1)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"max_tokens": MAX_LENGTH_TOKENS + 1},
            f"bad --max-tokens {MAX_LENGTH_TOKENS + 1}: at most",
        ),
        ({"max_tokens": 1.5}, "bad --max-tokens 1.5: expected a whole number of at least 1"),
        ({"thinking_budget": 0}, "bad --thinking-budget 0: expected a whole number of at least 1"),
        (
            {"thinking_budget": MAX_LENGTH_TOKENS + 1},
            f"bad --thinking-budget {MAX_LENGTH_TOKENS + 1}: at most",
        ),
        ({"limit": MAX_REQUESTS + 1}, "bad --limit 1000001: at most 1,000,000"),
        ({"repeats": 0}, "bad --repeats 0: expected a whole number of at least 1"),
        ({"seed": 0.5}, "bad --seed 0.5: expected a whole number of at least 0"),
        ({"temperature": -0.1}, "bad --temperature -0.1: expected a number from 0 to 2"),
        ({"temperature": math.nan}, "bad --temperature nan: expected a number from 0 to 2"),
    ],
)
def test_overrides_refuse_each_value_past_its_bound(given: dict, message: str) -> None:
    assert _refused(Overrides, **given).startswith(message)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"concurrency": 1.5}, "bad --concurrency 1.5: expected a whole number of at least 1"),
        (
            {"max_tokens_in_flight": MAX_TOKENS_IN_FLIGHT + 1},
            f"bad --max-tokens-in-flight {MAX_TOKENS_IN_FLIGHT + 1}: at most",
        ),
        ({"decode_rate": 0.0}, "bad --decode-rate 0.0: expected a number of at least 0.001"),
        ({"prefill_rate": math.inf}, "bad --prefill-rate inf: expected a number of at least"),
        ({"price_out": -0.5}, "bad --price-out -0.5: expected a number from 0 to 1e+06"),
        ({"request_timeout": math.nan}, "bad --request-timeout nan: expected a number"),
    ],
)
def test_scale_refuses_each_value_past_its_bound(given: dict, message: str) -> None:
    assert _refused(Scale, **given).startswith(message)


@pytest.mark.parametrize("rate", [{"prefill_rate": 100.0}, {"decode_rate": 10.0}])
def test_probe_and_a_stated_rate_are_refused_together(rate: dict) -> None:
    assert _refused(Scale, probe=True, **rate) == (
        "--probe measures the rates that --prefill-rate/--decode-rate state: give one or the other"
    )
    assert Scale(probe=False, **rate).probe is False
    assert Scale(probe=True).probe is True


def test_several_base_urls_become_a_tuple_and_one_stays_a_string() -> None:
    assert Scale(base_url=["http://a/v1", "http://b/v1"]).base_url == ("http://a/v1", "http://b/v1")
    assert Scale(base_url="http://a/v1").base_url == "http://a/v1"
    assert Scale().base_url is None


def test_routing_reads_a_length_and_is_active_only_with_a_profile_or_a_length() -> None:
    assert Routing(length="4k").length == 4096
    assert Routing(length=3000).length == 3000
    assert Routing().length is None
    assert not Routing().active
    assert Routing(length="4k").active
    assert Routing(profile="p.json").active
    assert (Routing().strategy, Routing().basis) == ("map-reduce", "absolute")
    assert _refused(Routing, length="lots").startswith("bad length 'lots' in --router-length")


def test_judging_checks_its_model() -> None:
    assert Judging("openai/judge", "http://j/v1") == Judging(
        model="openai/judge", base_url="http://j/v1"
    )
    assert Judging().model is None and Judging().base_url is None
    assert _refused(Judging, "openai/j\x1b").startswith("bad --judge-model ")


# --- RunSpec.of: every keyword where the run reads it --------------------------------------------


def test_every_keyword_of_of_lands_in_its_field(tmp_path: Path) -> None:
    spec = RunSpec.of(
        *NEEDLE,
        suite_options=["types=needle"],
        suite_params={"tiers": [1]},
        model_options=["context_length=8192"],
        lengths="1k,2k",
        limit=3,
        repeats=4,
        seed=5,
        max_tokens=6,
        thinking_budget=7,
        temperature=0.5,
        base_url=["http://a/v1", "http://b/v1"],
        base_urls_file=tmp_path / "urls.txt",
        concurrency=8,
        request_timeout=9.0,
        max_tokens_in_flight=10,
        prefill_rate=11.0,
        decode_rate=12.0,
        shard="1/2",
        probe=False,
        price_in=0.25,
        price_out=0.75,
        router="profile.json",
        router_strategy="truncate",
        router_basis="relative",
        router_length="2k",
        judge_model="openai/judge",
        judge_base_url="http://judge/v1",
        output=str(tmp_path / "run"),
        quiet=False,
        serial=True,
    )
    assert (spec.suite, spec.model) == NEEDLE
    assert spec.suite_options == ("types=needle",)
    assert dict(spec.suite_params or {}) == {"tiers": [1]}
    assert dict(spec.model_options) == {"context_length": 8192}
    assert spec.generation == Overrides("1k,2k", 3, 4, 5, 6, 0.5, 7)
    assert spec.scale == Scale(
        ("http://a/v1", "http://b/v1"), tmp_path / "urls.txt", 8, 9.0, 10, 11.0, 12.0, "1/2",
        False, 0.25, 0.75,
    )  # fmt: skip
    assert (spec.scale.price_in, spec.scale.price_out) == (0.25, 0.75)
    assert (spec.scale.prefill_rate, spec.scale.decode_rate) == (11.0, 12.0)
    assert spec.routing == Routing("profile.json", "truncate", "relative", 2048)
    assert spec.judge == Judging("openai/judge", "http://judge/v1")
    assert spec.output == tmp_path / "run" and isinstance(spec.output, Path)
    assert (spec.quiet, spec.serial) == (False, True)
    assert spec.run_options(default_repeats=9) == RunOptions(
        output=tmp_path / "run",
        limit=3,
        repeats=4,
        seed=5,
        max_tokens=6,
        thinking_budget=7,
        temperature=0.5,
        concurrency=8,
        quiet=False,
        serial=True,
    )


def test_the_defaults_of_of() -> None:
    spec = RunSpec.of(*NEEDLE)
    assert spec.suite_options == () and spec.suite_params is None
    assert dict(spec.model_options) == {}
    assert spec.generation == Overrides() and spec.generation.seed == 0
    assert spec.scale == Scale() and spec.routing == Routing() and spec.judge == Judging()
    assert spec.output is None and spec.quiet is True and spec.serial is False
    assert RunSpec.of(*NEEDLE, suite_options=None).suite_options == ()
    # The suite's default number of repeats applies when the run asks none.
    assert spec.run_options(default_repeats=3) == RunOptions(repeats=3, quiet=True)
    assert RunSpec.of(*NEEDLE, repeats=2).run_options(default_repeats=3).repeats == 2


def test_a_spec_made_directly_is_checked_and_read_only(tmp_path: Path) -> None:
    params = {"tiers": [1]}
    spec = RunSpec("longctx", "scripted/x", ["a=1"], params, ["context_length=4096"])
    assert spec.suite_options == ("a=1",) and isinstance(spec.suite_options, tuple)
    params["tiers"] = [2]  # the caller's dict changing later does not change the spec
    assert dict(spec.suite_params or {}) == {"tiers": [1]}
    with pytest.raises(TypeError):
        spec.suite_params["tiers"] = [3]  # type: ignore[index]
    assert dict(spec.model_options) == {"context_length": 4096}
    assert _refused(RunSpec, "longctx", "openai/m\x07").startswith("bad --model ")
    (tmp_path / "f").write_text("x")
    assert _refused(RunSpec, "longctx", "scripted/x", output=tmp_path / "f").startswith("--output ")
    assert RunSpec("longctx", "scripted/x", output=tmp_path).output == tmp_path
    # A directory given as text is read as a path, as the runner reads it.
    made = RunSpec("longctx", "scripted/x", output=str(tmp_path))  # type: ignore[arg-type]
    assert made.output == tmp_path and isinstance(made.output, Path)
