"""Scale-out, simulated: LongBench Pro-shaped work on 1/2/4/8 prefix-caching endpoints.

    .venv/bin/python benchmarks/bench_scaleout.py [--seed 0] [--endpoints 1,2,4,8] [--smoke]

`--smoke`: a tenth of the work (25 samples per tier, 110 contexts). Checked on every run: every
request completes, every distinct context is prefilled at least once, the first endpoint count is
the 1.00x reference, and each printed ratio is the measured makespans divided.

A SIMULATION (no model, no network): it runs longscope's own flow-control policy
(`longscope.models.flow.Dispatcher`, the code `MultiEndpointBackend` runs) against simulated servers,
and compares it with LongBench Pro's client behaviour (every run of every document a separate
request, shuffled, each to any endpoint). Assumptions, all stated in BENCHMARKS.md:

- Work: 1,500 samples over 6 length tiers (8K..256K, 250 each), 1,100 distinct contexts (400
  samples ask a second question about a context already used in their tier), 3 runs per sample
  (4,500 requests); a question adds 100 tokens after the context; answers are 300 tokens.
- Server: work-conserving processor sharing (its requests in flight share its compute), up to 64
  requests at once; prefilling costs 1 unit per uncached prompt token, decoding 20 units per output
  token (so a 300-token answer costs as much as 6,000 prefilled tokens). Service time is
  proportional to uncached prefill plus decode; attention's quadratic cost is not modelled.
- Prefix cache: per server, LRU of 2M tokens. A request's context is looked up when the server
  admits it and inserted when its prefill ends: two requests admitted together both prefill (as in a
  batching engine, where the second is scheduled before the first's blocks exist).
- longscope: the runner hands every request over at once; caps of two 256K contexts in flight per
  endpoint, longest first, prefix affinity, siblings after the first's prefill.
- Baseline: the same requests shuffled, 16 in flight per endpoint, each to a random endpoint.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from longscope.models.flow import Dispatcher, EndpointState

TIERS = (8_192, 16_384, 32_768, 65_536, 131_072, 262_144)
PER_TIER = 250
CONTEXTS = 1_100
RUNS = 3
QUESTION = 100
ANSWER = 300
DECODE_UNITS = 20
SLOTS = 64
CACHE_TOKENS = 2_000_000
BASELINE_PER_ENDPOINT = 16


@dataclass(frozen=True)
class Job:
    """One request: its context (prefix key), context and question tokens, answer tokens."""

    key: str
    context: int
    question: int = QUESTION
    answer: int = ANSWER


def workload(seed: int, per_tier: int = PER_TIER, contexts_n: int = CONTEXTS) -> list[Job]:
    """Return the 4,500 requests in the order a runner hands them over (sample by sample)."""
    rng = random.Random(seed)
    jobs: list[Job] = []
    shared = per_tier * len(TIERS) - contexts_n  # samples that reuse a context of their tier
    per_tier_shared = [shared // len(TIERS) + (i < shared % len(TIERS)) for i in range(len(TIERS))]
    for t, tier in enumerate(TIERS):
        fresh = per_tier - per_tier_shared[t]
        contexts = [
            (f"{tier}-{i}", rng.randint(int(tier * 0.75), int(tier * 0.97))) for i in range(fresh)
        ]
        samples = contexts + [rng.choice(contexts) for _ in range(per_tier_shared[t])]
        for key, tokens in samples:
            jobs.extend(Job(key, tokens) for _ in range(RUNS))
    return jobs


@dataclass
class Running:
    job: Job
    prefill: float
    decode: float
    tag: object


@dataclass
class Server:
    """A prefix-caching server with processor sharing (see the module docstring)."""

    cache: OrderedDict[str, int] = field(default_factory=OrderedDict)
    cached_tokens: int = 0
    running: list[Running] = field(default_factory=list)
    prefilled: int = 0
    busy: float = 0.0

    def admit(self, job: Job, tag: object) -> None:
        if job.key in self.cache:
            self.cache.move_to_end(job.key)
            uncached = job.question
        else:
            uncached = job.context + job.question
        self.prefilled += uncached
        self.running.append(Running(job, float(uncached), float(job.answer * DECODE_UNITS), tag))

    def next_event(self) -> float:
        """Return the time (from now) to this server's next prefill end or completion."""
        if not self.running:
            return float("inf")
        n = len(self.running)
        return min((r.prefill if r.prefill > 0 else r.decode) for r in self.running) * n

    def advance(self, dt: float) -> list[object]:
        """Advance `dt`; return the tags of requests that completed."""
        if not self.running:
            return []
        self.busy += dt
        share = dt / len(self.running)
        done = []
        for r in self.running:
            if r.prefill > 0:
                r.prefill -= share
                if r.prefill <= 1e-9:
                    r.prefill = 0.0
                    self._insert(r.job)
            else:
                r.decode -= share
                if r.decode <= 1e-9:
                    done.append(r)
        for r in done:
            self.running.remove(r)
        return [r.tag for r in done]

    def _insert(self, job: Job) -> None:
        if job.key in self.cache:
            self.cache.move_to_end(job.key)
            return
        self.cache[job.key] = job.context
        self.cached_tokens += job.context
        while self.cached_tokens > CACHE_TOKENS and len(self.cache) > 1:
            _, tokens = self.cache.popitem(last=False)
            self.cached_tokens -= tokens


def simulate(jobs: list[Job], endpoints: int, policy: str, seed: int) -> dict[str, float]:
    """Return makespan (work units) and prefilled tokens of `jobs` on `endpoints` servers."""
    servers = [Server() for _ in range(endpoints)]
    rng = random.Random(seed)
    now = 0.0
    if policy == "longscope":
        cap = 2 * TIERS[-1]
        dispatcher = Dispatcher([EndpointState(f"e{i}", cap, SLOTS) for i in range(endpoints)])
        tickets = {}
        for job in jobs:
            ticket = dispatcher.submit(job.key, job.context + job.question)
            tickets[ticket.seq] = job

        def start() -> None:
            for ticket, index in dispatcher.grants(now):
                servers[index].admit(tickets[ticket.seq], (ticket, index))

        def finished(tag: object) -> None:
            ticket, index = tag  # type: ignore[misc]
            dispatcher.finish(ticket, index, now, failed=False)

    else:
        queue = list(jobs)
        rng.shuffle(queue)
        queue.reverse()
        limit = BASELINE_PER_ENDPOINT * endpoints
        in_flight = [0]

        def start() -> None:
            while queue and in_flight[0] < limit:
                in_flight[0] += 1
                servers[rng.randrange(endpoints)].admit(queue.pop(), None)

        def finished(tag: object) -> None:
            in_flight[0] -= 1

    start()
    completed = 0
    while completed < len(jobs):  # ends only when every request has completed
        dt = min(s.next_event() for s in servers)
        if dt == float("inf"):
            raise RuntimeError("simulation stalled")
        now += dt
        for server in servers:
            for tag in server.advance(dt):
                completed += 1
                finished(tag)
        start()
    return {
        "makespan": now,
        "prefilled": sum(s.prefilled for s in servers),
        "busy": sum(s.busy for s in servers) / (endpoints * now),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--endpoints", default="1,2,4,8")
    parser.add_argument("--smoke", action="store_true", help="a tenth of the work")
    args = parser.parse_args()
    counts = [int(n) for n in args.endpoints.split(",")]
    jobs = (
        workload(args.seed, PER_TIER // 10, CONTEXTS // 10) if args.smoke else workload(args.seed)
    )
    unique = {j.key: j.context for j in jobs}
    unique_tokens = sum(unique.values())
    print(
        f"# SIMULATION on {platform.node()} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}: "
        f"{len(jobs)} requests, {len(unique)} distinct contexts, {unique_tokens:,} unique "
        "context tokens"
    )
    print(
        "| policy | endpoints | makespan (units) | throughput vs 1 endpoint | scaling vs linear "
        "| prefilled / unique context tokens | server busy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for policy in ("longscope", "random"):
        base = None
        for n in counts:
            started = time.perf_counter()
            r = simulate(jobs, n, policy, args.seed)
            base = base or r["makespan"] * counts[0]
            speedup = base / r["makespan"]
            assert r["prefilled"] >= unique_tokens, (policy, n, r["prefilled"], unique_tokens)
            assert n != counts[0] or abs(speedup - counts[0]) < 1e-9, speedup
            print(
                f"| {policy} | {n} | {r['makespan']:,.0f} | {speedup:.2f}x | {speedup / n:.3f} "
                f"| {r['prefilled'] / unique_tokens:.3f} | {r['busy']:.3f} |"
                f"  <!-- {time.perf_counter() - started:.1f}s -->"
            )


if __name__ == "__main__":
    main()
