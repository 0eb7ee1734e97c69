"""The plan a user reads before spending, fast and without a model: requests, tokens, skips, what
a resume leaves out, time and cost, per length and per task, the forecast line and the actual
figures after a run. The samples come from small suites made here; the backend is the in-process
scripted one (the plan never sends, except the probe); the store is real SQLite.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from longscope.analysis.power import detectable_lines
from longscope.errors import UsageError
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.scripted import ScriptedBackend, every
from longscope.run.plan import (
    PROBE_OUTPUT_TOKENS,
    Plan,
    PlanCell,
    PlanTask,
    Rates,
    actual_figures,
    cost_of,
    format_duration,
    make_plan,
    make_plan_of,
    outline_plan,
    probe_rates,
)
from longscope.run.prepared import PreparedRun, RunOptions
from longscope.run.store import RunStore
from longscope.suites.base import BuildCell, PromptTemplate, Suite
from longscope.types import Generation, GenerationConfig, Sample, Score


def _sample(sid: str, task: str, length: int, counted: int, **kw: Any) -> Sample:
    return Sample(
        sid,
        task,
        "en",
        f"document of {sid}",
        "question?",
        ("a",),
        length,
        prompt_tokens=counted,
        **kw,
    )


class _Eager(Suite):
    name = "eager"
    version = "1"
    template = PromptTemplate("{context}\n{question}", "Answer:")
    default_config = GenerationConfig(max_tokens=20)
    default_repeats = 1

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples

    def params(self) -> dict[str, Any]:
        return {}

    def build(self, ctx: Any) -> list[Sample]:
        return list(self.samples)

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return Score(0.0, 1.0)

    def summarize(self, rows: Any) -> Any:
        return None


class _ByCells(_Eager):
    name = "bycells"

    def __init__(self, cells: list[BuildCell]) -> None:
        super().__init__([])
        self._cells = cells
        self.made: list[str] = []

    def cells(self, ctx: Any) -> list[BuildCell]:
        return list(self._cells)

    def iter_cell(self, ctx: Any, task: str, length: int, count: int) -> Any:
        for index in range(count):
            self.made.append(f"{task}-{length}-{index}")
            yield _sample(f"{task}-{length}-{index}", task, length, length - 100)


SAMPLES = [
    _sample("a1", "alpha", 4096, 3000),
    _sample("a2", "alpha", 8192, 7000, thinking_budget=5),
    _sample("b1", "beta", 4096, 0),  # not counted by the suite: counted from what is sent
    _sample("b2", "beta", 65536, 60000),  # cannot fit a 32K model
]


def _backend(**kw: Any) -> ScriptedBackend:
    return ScriptedBackend("plan", context_length=32768, prompt_mode="completion", **kw)


def _store(run_dir: Path, run_id: str, rows: list[tuple[str, int, str]]) -> None:
    with RunStore(run_dir) as store:
        store.put_generations(run_id, [(s, r, Generation("x", st)) for s, r, st in rows])


def test_the_plan_counts_what_is_sent_per_length_and_task(tmp_path: Path) -> None:
    backend = _backend()
    options = RunOptions(output=tmp_path, repeats=2)
    prepared = asyncio.run(PreparedRun.create(_Eager(SAMPLES), backend, options))
    # a1's first repeat is done; a2's second failed (sent again)
    _store(tmp_path, prepared.run_id, [("a1", 0, "ok"), ("a2", 1, "error")])
    b1 = len(backend.tokenizer().encode(prepared.request(SAMPLES[2], 0).text))
    assert b1 > 0
    plan = make_plan_of(prepared, rates=Rates(1000.0, 10.0, "stated"), price_in=2.0, price_out=8.0)
    assert plan.cells == (
        PlanCell(4096, 3, 3000 + 2 * b1, 3 * 20, 0),  # a1 once, b1 twice
        PlanCell(8192, 2, 2 * 7000, 2 * 25, 0),  # 20 answer + 5 thinking tokens each
        PlanCell(65536, 0, 0, 0, 2),  # skipped, both repeats
    )
    assert plan.tasks == (
        PlanTask("alpha", 3, 3000 + 14000, 20 + 50, 0),
        PlanTask("beta", 2, 2 * b1, 40, 2),
    )
    assert (plan.already_done, plan.endpoints, plan.limit, plan.bounded) == (1, 1, "", False)
    assert plan.run_id == prepared.run_id
    prompt, output = 17000 + 2 * b1, 110
    assert (plan.requests, plan.skipped, plan.prompt_tokens, plan.output_tokens) == (
        5,
        2,
        prompt,
        output,
    )
    assert plan.eta_s == prompt / 1000.0 + output / 10.0
    assert plan.cost == (prompt * 2.0 + output * 8.0) / 1e6
    # what a paired comparison could detect, from the samples sent (their first repeat)
    # a2 and b1 read two documents: two clusters
    assert [(p.length, p.samples, p.clusters) for p in plan.power] == [
        (4096, 1, 1),
        (8192, 1, 1),
        (None, 2, 2),
    ]
    lines = plan.table().splitlines()
    assert lines[-len(detectable_lines(plan.power)) :] == detectable_lines(plan.power) != []
    assert plan.forecast() == (
        f"plan: 5 requests (2 skipped, 1 done), {prompt:,} prompt tokens, <= 110 output tokens, "
        f"ETA {format_duration(plan.eta_s)} on 1 endpoint(s) (stated: prefill 1,000 tok/s, "
        f"decode 10.0 tok/s), <= ${plan.cost:,.2f}"
    )
    data = plan.as_dict()
    assert data["requests"] == 5 and data["skipped"] == 2 and data["already_done"] == 1
    assert data["prompt_tokens"] == prompt and data["output_tokens_max"] == 110
    assert data["rates"] == {"prefill_tps": 1000.0, "decode_tps": 10.0, "source": "stated"}
    assert data["by_length"][2] == {
        "length": 65536,
        "requests": 0,
        "prompt_tokens": 0,
        "output_tokens": 0,
        "skipped": 2,
    }
    assert data["by_task"][0]["task"] == "alpha" and data["by_task"][1]["skipped"] == 2
    assert data["shard"] is None and data["limit"] == "" and data["tokens_bounded"] is False
    assert [d["length"] for d in data["detectable"]] == [4096, 8192, None]
    assert (data["run_id"], data["eta_s"], data["cost"]) == (
        prepared.run_id,
        plan.eta_s,
        plan.cost,
    )


def test_a_plan_without_a_store_rates_or_prices(tmp_path: Path) -> None:
    plan = asyncio.run(make_plan(_Eager(SAMPLES[:1]), _backend(), RunOptions(limit=1)))
    assert plan.cells == (PlanCell(4096, 1, 3000, 20, 0),)
    assert (plan.already_done, plan.rates, plan.eta_s, plan.cost) == (0, None, None, None)
    assert plan.limit == "--limit 1: in all"
    assert plan.forecast() == (
        "plan: 1 request (0 skipped, 0 done), 3,000 prompt tokens, <= 20 output tokens, "
        "--limit 1: in all"
    )
    data = plan.as_dict()
    assert data["rates"] is None and data["eta_s"] is None and data["cost"] is None
    # a directory without a store: nothing done
    other = asyncio.run(make_plan(_Eager(SAMPLES[:1]), _backend(), RunOptions(output=tmp_path)))
    assert other.already_done == 0 and not (tmp_path / "longscope.sqlite").exists()


def test_the_table_per_length_and_per_task() -> None:
    plan = Plan(
        run_id="r",
        cells=(PlanCell(4096, 12, 40_000, 240, 1), PlanCell(131072, 2, 250_000, 40, 0)),
        already_done=0,
        endpoints=1,
        rates=None,
        price_in=None,
        price_out=None,
        tasks=(
            PlanTask("a_long_task_name", 14, 290_000, 280, 1),
            PlanTask("gone", 0, 0, 0, 0, "no data"),
        ),
    )
    assert plan.table().splitlines() == [
        "  length  requests  skipped     prompt tok   output tok",
        "    4096        12        1         40,000          240",
        "  131072         2        0        250,000           40",
        "",
        "task              requests  skipped     prompt tok   output tok",  # the longest name
        "a_long_task_name        14        1        290,000          280",
        "gone             skipped: no data",
        "plan: 14 requests (1 skipped, 0 done), 290,000 prompt tokens, <= 280 output tokens",
    ]
    short = Plan(
        "r", (PlanCell(1, 1, 1, 1, 0),), 0, 1, None, None, None, tasks=(PlanTask("t", 1, 1, 1, 0),)
    )
    assert (
        short.table().splitlines()[3]
        == "task      requests  skipped     prompt tok   output tok"  # 8 at least
    )
    assert "task" not in Plan("r", (), 0, 1, None, None, None).table()


def test_time_over_endpoints_cost_at_either_price_and_a_shard(tmp_path: Path) -> None:
    cells = (PlanCell(4096, 10, 1_000_000, 5_000, 0),)
    plan = Plan(
        "r",
        cells,
        0,
        4,
        Rates(10_000.0, 50.0, "probe"),
        None,
        3.0,
        shard="shard 1/4: 10 of 40 samples",
    )
    assert plan.eta_s == (100.0 + 100.0) / 4
    assert plan.cost == 5_000 * 3.0 / 1e6  # an output price alone still prices the run
    assert plan.forecast() == (
        "shard 1/4: 10 of 40 samples; plan: 10 requests (0 skipped, 0 done), 1,000,000 prompt "
        "tokens, <= 5,000 output tokens, ETA 50s on 4 endpoint(s) (probe: prefill 10,000 tok/s, "
        "decode 50.0 tok/s), <= $0.01"
    )
    assert plan.as_dict()["shard"] == "shard 1/4: 10 of 40 samples"
    lone = Plan("r", cells, 0, 0, Rates(10_000.0, 50.0, "probe"), 1.0, None)
    assert lone.eta_s == 200.0  # no endpoint count: one
    assert lone.cost == 1.0 and "<= $1.00" in lone.forecast()
    assert cost_of(1_000_000, 2_000_000, None, None) == 0.0
    assert cost_of(3, 0, 1.0, None) == 3 / 1e6


def test_durations_as_the_forecast_writes_them() -> None:
    cases = [
        (-3, "0s"),
        (0.4, "0s"),
        (0.5, "0s"),  # rounds half to even
        (1.5, "2s"),
        (59.4, "59s"),
        (59.6, "1m 00s"),
        (61, "1m 01s"),
        (3599.4, "59m 59s"),
        (3599.6, "1h 00m"),
        (3661, "1h 01m"),
        (36_000 + 659, "10h 10m"),
    ]
    assert [(s, format_duration(s)) for s in [c[0] for c in cases]] == cases


def test_a_suite_made_as_it_is_sent_is_forecast_from_its_cells(tmp_path: Path) -> None:
    cells = [
        BuildCell("t", 4096, 3, id_format="t-4096-{index}"),
        BuildCell("t", 8192, 2, id_format="t-8192-{index}"),
        BuildCell("gone", 4096, 5, skipped="its data not given"),
        BuildCell("u", 2048, 1, id_format="u-2048-{index}"),
    ]
    suite = _ByCells(cells)
    options = RunOptions(output=tmp_path, repeats=2, limit=2)
    prepared = asyncio.run(PreparedRun.create(suite, _backend(), options))
    _store(
        tmp_path,
        prepared.run_id,
        [("t-4096-0", 0, "ok"), ("t-8192-0", 0, "ok"), ("t-8192-0", 1, "length")]
        + [("t-8192-1", r, "ok") for r in (0, 1)]
        + [("u-2048-0", r, "ok") for r in (0, 1)],
    )
    outline = outline_plan(prepared, price_in=1.0)
    # limit 2 per cell: 4096 sends 2 x 2 - 1 done; 8192 and 2048 are wholly done
    assert outline.cells == (
        PlanCell(2048, 0, 0, 0, 0),
        PlanCell(4096, 3, 3 * 4096, 0, 0),
        PlanCell(8192, 0, 0, 0, 0),
    )
    assert (outline.already_done, outline.bounded) == (7, True)
    assert outline.tasks == (PlanTask("gone", 0, 0, 0, 0, "its data not given"),)
    assert outline.limit == "--limit 2: per task x length"
    assert outline.forecast() == (
        "plan: 3 requests (0 skipped, 7 done), <= 12,288 tokens (prompt and output, from the "
        "lengths; `longscope plan` counts them), --limit 2: per task x length, <= $0.01"
    )
    assert suite.made == []  # the forecast makes no sample
    counted = make_plan_of(prepared)
    # the wholly done cells are counted done without being made (4 + 2, and t-4096-0 once)
    assert counted.already_done == 7 and "t-8192-0" not in suite.made
    assert "u-2048-0" not in suite.made
    assert counted.cells == (PlanCell(4096, 3, 3 * 3996, 3 * 20, 0),)
    assert counted.tasks == (
        PlanTask("t", 3, 3 * 3996, 60, 0),
        PlanTask("gone", 0, 0, 0, 0, "its data not given"),
    )


def test_several_endpoints_share_the_time() -> None:
    backend = MultiEndpointBackend([_backend(), _backend()])
    plan = asyncio.run(
        make_plan(_Eager(SAMPLES[:1]), backend, RunOptions(), rates=Rates(1000.0, 10.0, "stated"))
    )
    assert plan.endpoints == 2 and plan.eta_s == (3000 / 1000.0 + 20 / 10.0) / 2


def test_the_probe_sends_one_long_prompt_and_one_short_one() -> None:
    backend = ScriptedBackend("probe", context_length=1000, prompt_mode="completion", answer="one")
    info = asyncio.run(backend.info())
    rates = asyncio.run(probe_rates(backend, info, 4096))
    first, second = backend.requests
    # the prompt is at most half the context, and just past the budget (whole 64-word lines)
    text = first.text.removesuffix("\nAnswer: ")
    counted = len(backend.tokenizer().encode(text))
    assert first.prompt_tokens == counted >= 500
    last_line = text.rstrip().rsplit(". ", 1)[0] + ". "
    assert len(backend.tokenizer().encode(last_line)) < 500  # one line fewer is under budget
    assert first.text.endswith("\nAnswer: ") and first.config.max_tokens == 1
    assert first.config.temperature == 0.0 and first.mode == "completion"
    assert second.config.max_tokens == PROBE_OUTPUT_TOKENS == 48
    assert second.text == "Count from one to one hundred in words: one, two,"
    assert second.prompt_tokens == 16
    assert rates.source == "probe" and rates.prefill_tps > 0 and rates.decode_tps > 0
    chat = ScriptedBackend("probe", context_length=None, prompt_mode="chat", answer="one")
    asyncio.run(probe_rates(chat, asyncio.run(chat.info())))
    long_chat = chat.requests[0]
    assert long_chat.mode == "chat" and long_chat.prompt_tokens == 0
    assert len(chat.tokenizer().encode(long_chat.messages[0].content)) >= 2048
    failing = ScriptedBackend("probe", prompt_mode="completion", fault=every(2, "timeout"))
    with pytest.raises(UsageError) as caught:
        asyncio.run(probe_rates(failing, asyncio.run(failing.info()), 64))
    assert str(caught.value).startswith("the probe request failed (timeout: ")
    assert str(caught.value).endswith(
        "): state the rates with --prefill-rate and --decode-rate instead"
    )


def test_the_actual_figures_count_what_was_sent(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_generations(
            "r1",
            [
                ("a", 0, Generation("x", "ok", prompt_tokens=1000, completion_tokens=10)),
                ("a", 1, Generation("", "error", prompt_tokens=900, completion_tokens=0)),
                ("b", 0, Generation("y", "length", prompt_tokens=2000, completion_tokens=30)),
                ("c", 0, Generation("", "skipped", prompt_tokens=70000)),
            ],
        )
        store.put_generation("r2", "z", 0, Generation("z", "ok", prompt_tokens=5))
    assert actual_figures(tmp_path, "r1", 125.0) == (
        "actual: 3 requests, 3,900 prompt tokens, 40 output tokens, 2m 05s"
    )
    assert actual_figures(tmp_path, "r1", 5.0, 10.0, None, keys=[("a", 0), ("c", 0)]) == (
        "actual: 1 request, 1,000 prompt tokens, 10 output tokens, 5s, $0.01"
    )
    assert actual_figures(tmp_path, "r1", 5.0, None, 1000.0) == (
        "actual: 3 requests, 3,900 prompt tokens, 40 output tokens, 5s, $0.04"
    )
    # A re-run with nothing to send shows the stored totals as stored, not as sent now.
    assert actual_figures(tmp_path, "r1", 0.2, sent_now=0, stored_before=3) == (
        "nothing to send: every request is stored already (stored: 3 requests, 3,900 prompt "
        "tokens, 40 output tokens)"
    )
    assert actual_figures(tmp_path, "r1", 65.0, sent_now=1, stored_before=2) == (
        "stored: 3 requests, 3,900 prompt tokens, 40 output tokens (1 request sent now, 1m 05s)"
    )


def test_a_plan_with_nothing_left_to_send_says_so() -> None:
    plan = Plan("r", (PlanCell(4096, 0, 0, 0, 0),), 7, 1, None, None, None)
    assert plan.forecast() == "plan: nothing to send (7 requests stored already)"
    shard = Plan("r", (), 1, 1, None, None, None, shard="shard 0/2: 1 of 2 samples")
    assert (
        shard.forecast()
        == "shard 0/2: 1 of 2 samples; plan: nothing to send (1 request stored already)"
    )


def test_slow_rates_are_never_shown_as_zero() -> None:
    from longscope.run.plan import rate

    assert [rate(x) for x in (12345.6, 250.0, 12.34, 1.0, 0.5, 0.004, 0.001)] == [
        "12,346", "250", "12.3", "1.0", "0.5", "0.004", "0.001",
    ]  # fmt: skip
    plan = Plan("r", (PlanCell(1024, 1, 1000, 10, 0),), 0, 1, Rates(0.4, 0.001, "stated"),
                None, None)  # fmt: skip
    assert "(stated: prefill 0.4 tok/s, decode 0.001 tok/s)" in plan.forecast()


def test_a_price_that_would_make_the_cost_infinite_is_refused() -> None:
    from longscope.run.spec import Scale

    with pytest.raises(UsageError, match=r"^bad --price-in 1e\+308: expected a number from 0 "):
        Scale(price_in=1e308)
    assert Scale(price_out=1e6).price_out == 1e6


def test_make_plan_probes_only_when_asked_and_without_stated_rates() -> None:
    backend = _backend(answer="one")
    plan = asyncio.run(make_plan(_Eager(SAMPLES[:1]), backend, probe=True, probe_tokens=64))
    assert plan.rates is not None and plan.rates.source == "probe"
    assert [r.sample_id for r in backend.requests] == ["probe", "probe"]
    assert 64 <= backend.requests[0].prompt_tokens < 64 + 200  # the budget asked for
    stated = Rates(1.0, 1.0, "stated")
    quiet = _backend()
    assert asyncio.run(make_plan(_Eager(SAMPLES[:1]), quiet, probe=True, rates=stated)).rates is (
        stated
    )
    assert asyncio.run(make_plan(_Eager(SAMPLES[:1]), quiet)).rates is None
    assert quiet.requests == []  # a plan sends nothing


class _ByLanguage(_Eager):
    """Samples clustered by their language (all one here): one unit, however many documents."""

    @staticmethod
    def _language(sample: dict[str, Any]) -> str:
        return sample["language"]

    cluster_key = _language


def test_the_detectable_difference_counts_the_suites_clusters() -> None:
    plan = asyncio.run(make_plan(_ByLanguage(SAMPLES[:2]), _backend()))
    assert [(p.length, p.samples, p.clusters) for p in plan.power] == [
        (4096, 1, 1),
        (8192, 1, 1),
        (None, 2, 1),
    ]


def test_the_probe_prompt_is_the_fewest_lines_that_reach_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import longscope.run.plan as plan_module

    monkeypatch.setattr(plan_module.time, "time_ns", lambda: 7)  # the same random text each time

    def probe(budget: int) -> int:
        backend = ScriptedBackend("p", context_length=None, prompt_mode="completion", answer="a")
        asyncio.run(probe_rates(backend, asyncio.run(backend.info()), budget))
        return backend.requests[0].prompt_tokens

    line = probe(1)  # a budget of one token: one line
    assert 60 < line < 80
    assert probe(line) == line  # exactly one line's tokens: still one line
    assert probe(line + 1) > line + 1  # one more: a second line


def test_prices_and_rates_reach_the_plan_and_the_outline(tmp_path: Path) -> None:
    stated = Rates(1000.0, 10.0, "stated")
    plan = asyncio.run(
        make_plan(_Eager(SAMPLES[:1]), _backend(), rates=stated, price_in=2.0, price_out=8.0)
    )
    assert (plan.rates, plan.price_in, plan.price_out) == (stated, 2.0, 8.0)
    assert plan.cost == (3000 * 2.0 + 20 * 8.0) / 1e6
    suite = _ByCells([BuildCell("t", 4096, 1, id_format="t-{index}")])
    prepared = asyncio.run(PreparedRun.create(suite, _backend(), RunOptions()))
    outline = outline_plan(prepared, rates=stated, price_out=8.0)
    assert (outline.rates, outline.price_in, outline.price_out) == (stated, None, 8.0)
    assert outline.cost == 0.0 and outline.eta_s == 4096 / 1000.0  # no output counted yet


def test_the_probe_rates_are_tokens_over_the_seconds_each_request_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import itertools

    import longscope.run.plan as plan_module

    def answer(request: Any) -> str:
        return "one two" if request.config.max_tokens == 1 else "one"  # the long one: `length`

    for mode in ("completion", "chat"):
        backend = ScriptedBackend("p", context_length=None, prompt_mode=mode, answer=answer)
        info = asyncio.run(backend.info())
        # A clock of quarter seconds, read by the probe before and after each request and by
        # the backend inside it: each request takes as long as one more request on this clock.
        clock = itertools.count(100.0, 0.25)
        with monkeypatch.context() as patched:
            patched.setattr(plan_module.time, "perf_counter", clock.__next__)
            rates = asyncio.run(probe_rates(backend, info, 64))
            first, second = backend.requests
            before = next(clock)
            asyncio.run(backend.generate(second))
            took = next(clock) - before
        assert 0 < took < 1.0  # under a second: the 1 ms floor holds, not a 1 s one
        assert [(r.sample_id, r.repeat) for r in (first, second)] == [("probe", 0), ("probe", 0)]
        assert (first.config.max_tokens, second.config.max_tokens) == (1, 48)
        text = first.prompt if mode == "completion" else first.messages[0].content
        seen = len(backend.tokenizer().encode(text.removesuffix("\nAnswer: ")))
        if mode == "chat":
            assert [m.role for m in first.messages] == ["user"] and first.prompt_tokens == 0
        assert rates.prefill_tps == seen / took  # chat: the probe's own count, not the server's
        assert rates.decode_tps == 1 / took  # "one": one token
    failing = ScriptedBackend(
        "probe", prompt_mode="completion", fault=every(2, "timeout", error="e" * 300)
    )
    with pytest.raises(UsageError) as caught:
        asyncio.run(probe_rates(failing, asyncio.run(failing.info()), 64))
    assert str(caught.value) == (
        f"the probe request failed (timeout: {'e' * 120}): "
        "state the rates with --prefill-rate and --decode-rate instead"
    )


def test_a_suite_built_whole_is_bounded_before_its_build() -> None:
    import time

    from tests.cli_helper import longscope

    started = time.perf_counter()
    done = longscope("plan", "hundred", "-m", "scripted/x", "-S", "samples=100000",
                     "--repeats", "1000")  # fmt: skip
    took = time.perf_counter() - started
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "error: 1,500,000 samples x 1,000 repeats = 1,500,000,000 requests: at most 1,000,000 "
        "per run; use fewer lengths, samples or repeats (or --limit)"
    ]
    assert took < 60  # refused before building 1.5M samples (minutes before the bound)
