"""An adaptive run's time: how long its requests took, and the full grid's time estimated.

What the run took is the time during which at least one of its requests was in flight, read from
the store (each answer's latency, ending when it was stored), so a resumed run counts every
invocation and none of the pauses between them. The full grid's time is estimated as `plan`
estimates its ETA (`run.plan.eta_seconds`): its prompt and output tokens at prefill and decode
rates, the ones the user gave (stated or probed) or else this run's own, fitted to its requests'
latencies. Where those latencies cannot tell prefill from decode time (every request at one length,
each writing as many tokens), the estimate is a range: all the time counted as output tokens, and
all of it as prompt tokens; under `plan`'s model the full grid's time lies between the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longscope.run.plan import Rates, eta_seconds, format_duration, rate

_RATES_NAMED = {
    "measured": "this run's measured rates",
    "stated": "the stated rates",
    "probe": "the probed rates",
}


def _number(value: Any) -> float | None:
    """Return a record's number, or None for anything else (an edited or older record)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def duration(seconds: float) -> str:
    """Return a duration as `plan` writes it (`3m 05s`), tenths under ten seconds (`0.4s`): a
    small run's time is not shown as 0."""
    return f"{max(0.0, seconds):.1f}s" if seconds < 9.95 else format_duration(seconds)


def describe_time(record: Mapping[str, Any]) -> str:
    """Return the line saying how long the run's requests took and the full grid's estimated time
    at which rates, or "" for a record that holds no time (written before it was kept)."""
    wall = _number(record.get("wall_s"))
    if wall is None:
        return ""
    head = f"time: requests in flight for {duration(wall)}"
    grid_prompt = _number(record.get("grid_prompt_tokens")) or 0
    grid_output = _number(record.get("grid_output_tokens")) or 0
    tokens = (
        f"an estimate for its {grid_prompt:,.0f} prompt and about {grid_output:,.0f} output tokens"
    )
    eta = _number(record.get("grid_eta_s"))
    rates = record.get("rates")
    if eta is not None and isinstance(rates, Mapping):
        source = str(rates.get("source"))
        named = _RATES_NAMED.get(source, f"rates ({source})")
        prefill, decode = _number(rates.get("prefill_tps")), _number(rates.get("decode_tps"))
        given = f"prefill {rate(prefill or 0)} tok/s, decode {rate(decode or 0)} tok/s"
        endpoints = _number(record.get("endpoints")) or 1
        where = f" on {endpoints:g} endpoints" if source != "measured" and endpoints > 1 else ""
        return f"{head}; the full grid: about {duration(eta)} at {named} ({given}){where}, {tokens}"
    span = record.get("grid_eta_range_s")
    pace = record.get("pace")
    if isinstance(span, Sequence) and len(span) == 2 and isinstance(pace, Mapping):
        low, high = _number(span[0]), _number(span[1])
        prompt_tps, output_tps = _number(pace.get("prompt_tps")), _number(pace.get("output_tps"))
        if low is not None and high is not None and prompt_tps:
            shown = (duration(low), duration(high))
            ends = shown[0] if shown[0] == shown[1] else f"{shown[0]} to {shown[1]}"
            paces = [f"{rate(output_tps)} output tok/s"] if output_tps else []
            paces.append(f"{rate(prompt_tps)} prompt tok/s")
            return (
                f"{head}; the full grid: about {ends} at this run's measured rates, which do not "
                f"tell prefill from decode time (all of it at {', or at '.join(paces)}), {tokens}"
            )
    return (
        f"{head}; the full grid's time is not estimated: no answered request took measurable "
        "time (state --prefill-rate and --decode-rate)"
    )


@dataclass(frozen=True)
class SentRequest:
    """One request the run sent, as the store holds it: what the time figures are made of."""

    length: int
    """The grid length of its sample."""
    prompt_tokens: int
    output_tokens: int
    latency_s: float
    answered: float
    """When its answer was stored (Unix time): it was in flight from `answered - latency_s`."""
    scorable: bool
    """Answered (`ok` or `length`): the rates and the output estimate read these only."""


@dataclass(frozen=True)
class Pace:
    """What the answered requests show of the rates: their tokens over the time they were in
    flight, and the prefill and decode rates when their latencies tell the two apart."""

    prompt_tps: float
    """Prompt tokens per second in flight (as if output tokens took no time)."""
    output_tps: float
    """Output tokens per second in flight (as if prompt tokens took no time)."""
    rates: Rates | None
    """The rates fitted to the latencies, as throughput; None when they do not tell prefill from
    decode time (e.g. requests all at one length, each writing as many tokens)."""


@dataclass(frozen=True)
class Timing:
    """What an adaptive run's requests took, and the full grid's time estimated at rates."""

    wall_s: float
    """Seconds during which at least one of the run's requests was in flight (all invocations)."""
    sent_output_tokens: int
    grid_output_tokens: int
    """The full grid's output tokens, estimated: each length's requests at the mean output of
    the answers there (else of all answers)."""
    rates: Rates | None
    """The rates of the estimate: stated, probed, or this run's own when its requests tell
    prefill from decode time (`measured_pace`)."""
    endpoints: int
    grid_eta_s: float | None
    """The full grid's seconds at `rates` (None without rates)."""
    pace: Pace | None = None
    """What this run's own requests show (None: none answered in measurable time)."""
    grid_eta_range_s: tuple[float, float] | None = None
    """Without rates, the full grid's seconds with all the time counted as output tokens, and as
    prompt tokens, at this run's pace: under `plan`'s model its time lies between the two."""

    def record(self) -> dict[str, Any]:
        """Return the fields `adaptive.json` holds for the time."""
        rates = None
        if self.rates is not None:
            rates = {
                "prefill_tps": round(self.rates.prefill_tps, 3),
                "decode_tps": round(self.rates.decode_tps, 3),
                "source": self.rates.source,
            }
        pace = None
        if self.pace is not None:
            pace = {
                "prompt_tps": round(self.pace.prompt_tps, 3),
                "output_tps": round(self.pace.output_tps, 3),
            }
        span = self.grid_eta_range_s
        return {
            "wall_s": round(self.wall_s, 3),
            "sent_output_tokens": self.sent_output_tokens,
            "grid_output_tokens": self.grid_output_tokens,
            "rates": rates,
            "pace": pace,
            "endpoints": self.endpoints,
            "grid_eta_s": None if self.grid_eta_s is None else round(self.grid_eta_s, 3),
            "grid_eta_range_s": None if span is None else [round(span[0], 3), round(span[1], 3)],
        }


def in_flight_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Return the seconds covered by at least one (start, end) span: overlapping requests (several
    in flight, several endpoints) count once, the pauses between invocations not at all."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def measured_pace(requests: Sequence[SentRequest]) -> Pace | None:
    """Return what the answered requests show of the rates, or None when none took measurable
    time.

    Seconds per prompt token and per output token are fitted to each request's latency
    (`latency = prompt / prefill + output / decode`, least squares: `plan`'s cost model), then
    scaled together so that the requests' tokens at the rates take the time they were in flight:
    concurrency and several endpoints are in the rates, as the run had them. The fit counts only
    when both costs are positive and each at least twice its standard error.
    """
    answered = [r for r in requests if r.scorable and r.latency_s > 0]
    wall = in_flight_seconds((r.answered - r.latency_s, r.answered) for r in answered)
    if not answered or wall <= 0:
        return None
    p = [float(r.prompt_tokens) for r in answered]
    o = [float(r.output_tokens) for r in answered]
    per_prompt, per_output = _fit(p, o, [r.latency_s for r in answered])
    rates = None
    if per_prompt > 0 and per_output > 0:
        scale = wall / sum(per_prompt * x + per_output * y for x, y in zip(p, o, strict=True))
        rates = Rates(1.0 / (per_prompt * scale), 1.0 / (per_output * scale), "measured")
    return Pace(sum(p) / wall, sum(o) / wall, rates)


def _fit(p: Sequence[float], o: Sequence[float], t: Sequence[float]) -> tuple[float, float]:
    """Return (a, b) of the least-squares fit `t ~ a p + b o`, or (0, 0) when the data do not
    pin both down (fewer than three points, collinear, or either under twice its standard error)."""
    n = len(t)
    spp = sum(x * x for x in p)
    soo = sum(y * y for y in o)
    spo = sum(x * y for x, y in zip(p, o, strict=True))
    spt = sum(x * z for x, z in zip(p, t, strict=True))
    sot = sum(y * z for y, z in zip(o, t, strict=True))
    det = spp * soo - spo * spo
    if n < 3 or det <= 1e-9 * spp * soo:
        return 0.0, 0.0
    a, b = (spt * soo - sot * spo) / det, (sot * spp - spt * spo) / det
    residual = sum((z - a * x - b * y) ** 2 for x, y, z in zip(p, o, t, strict=True))
    variance = residual / (n - 2)
    if a <= 2 * math.sqrt(variance * soo / det) or b <= 2 * math.sqrt(variance * spp / det):
        return 0.0, 0.0
    return a, b


def timing_of(
    requests: Sequence[SentRequest],
    grid_requests: Mapping[int, int],
    grid_prompt_tokens: int,
    rates: Rates | None = None,
    endpoints: int = 1,
) -> Timing:
    """Return what the sent `requests` took and the full grid's time (`grid_requests` per length,
    `grid_prompt_tokens` in all) at `rates`, else at the rates the requests show, else between
    the two ends their pace allows."""
    wall = in_flight_seconds((r.answered - r.latency_s, r.answered) for r in requests)
    answered = [r for r in requests if r.scorable]
    overall = sum(r.output_tokens for r in answered) / len(answered) if answered else 0.0
    grid_output = 0.0
    for length, count in grid_requests.items():
        there = [r.output_tokens for r in answered if r.length == length]
        grid_output += count * (sum(there) / len(there) if there else overall)
    grid_output = round(grid_output)
    pace = measured_pace(requests)
    span = None
    if rates is not None:
        eta: float | None = eta_seconds(grid_prompt_tokens, grid_output, rates, endpoints)
    elif pace is not None and pace.rates is not None:
        rates = pace.rates
        # Measured as throughput: the run's endpoints and concurrency are in the rates.
        eta = eta_seconds(grid_prompt_tokens, grid_output, rates)
    else:
        eta = None
        if pace is not None:
            # No output tokens sent (so none estimated): the prompt's end alone.
            ends = [grid_prompt_tokens / pace.prompt_tps] if pace.prompt_tps > 0 else []
            ends += [grid_output / pace.output_tps] if pace.output_tps > 0 else []
            span = (min(ends), max(ends)) if ends else None
    return Timing(
        wall_s=wall,
        sent_output_tokens=sum(r.output_tokens for r in requests),
        grid_output_tokens=grid_output,
        rates=rates,
        endpoints=endpoints,
        grid_eta_s=eta,
        pace=pace,
        grid_eta_range_s=span,
    )


__all__ = [
    "Pace",
    "SentRequest",
    "Timing",
    "describe_time",
    "duration",
    "in_flight_seconds",
    "measured_pace",
    "timing_of",
]
