"""Token-aware flow control over several endpoints: which request goes where, and when.

A pure policy (no I/O, no clock of its own) so that the async backend (`models/endpoints.py`) and the
scale-out simulator (`benchmarks/bench_scaleout.py`) run the same decisions:

- Prompt tokens in flight are capped per endpoint (the sum is the run's cap); a request larger than
  an endpoint's cap goes alone to an idle endpoint.
- Waiting requests are granted longest prefill first (the long ones set the run's length), after
  those whose prefix is already warm in their endpoint's cache (cheap, and gone if they wait).
- Requests that share a prompt prefix (a document's repeats) go to the endpoint that served it first,
  while that endpoint is healthy, and wait until the first of them has finished: its prefill is then
  in the endpoint's prefix cache and the others reuse it instead of prefilling it again.
- Other requests go to the healthy endpoint with the fewest outstanding prompt tokens.
- An endpoint whose requests fail `bench_after` times in a row is benched for a doubling pause; one
  benched more than `down_after` times is down. When every endpoint is down, waiting work fails.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CONTEXT = 32_768
"""Tokens assumed per endpoint when the server reports no context length."""
CAP_CONTEXTS_PER_ENDPOINT = 2
"""Default cap per endpoint: two full contexts (one prefilling, one queued behind it on the server)."""


@dataclass
class EndpointState:
    """One endpoint as the policy sees it: its limits, load, health and what it has served."""

    name: str
    token_cap: int
    max_requests: int
    outstanding_tokens: int = 0
    outstanding_requests: int = 0
    streak: int = 0
    """Consecutive failed requests."""
    benches: int = 0
    benched_until: float = 0.0
    down: bool = False
    last_error: str = ""
    requests: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    busy_s: float = 0.0
    max_tokens_seen: int = 0
    """The most prompt tokens this endpoint ever had in flight at once (checked against its cap)."""

    def usable(self, now: float) -> bool:
        """Return whether new work may go here now."""
        return not self.down and now >= self.benched_until

    def room_for(self, cost: int) -> bool:
        """Return whether a request of `cost` prompt tokens fits beside what is in flight."""
        if self.outstanding_requests >= self.max_requests:
            return False
        return self.outstanding_requests == 0 or self.outstanding_tokens + cost <= self.token_cap

    def stats(self) -> dict[str, Any]:
        """Return what this endpoint served: counts, tokens, latency, health."""
        done = self.requests - self.failures
        return {
            "endpoint": self.name,
            "requests": self.requests,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "mean_latency_s": round(self.busy_s / self.requests, 3) if self.requests else None,
            "ok_requests": done,
            "max_tokens_in_flight": self.max_tokens_seen,
            "token_cap": self.token_cap,
            "benched": self.benches,
            "down": self.down,
            "last_error": self.last_error,
        }


@dataclass(frozen=True)
class Ticket:
    """One waiting request: its prefix key and its cost in prompt tokens."""

    seq: int
    key: str
    cost: int


@dataclass
class Dispatcher:
    """The flow-control policy over a fixed list of endpoints (see the module docstring)."""

    endpoints: list[EndpointState]
    bench_after: int = 3
    bench_base_s: float = 2.0
    bench_cap_s: float = 60.0
    down_after: int = 5
    affinity: dict[str, int] = field(default_factory=dict)
    _waiting: list[tuple[int, int, Ticket]] = field(default_factory=list)
    _leading: dict[str, int] = field(default_factory=dict)
    """Prefix keys whose first request is in flight (their siblings wait for its cache)."""
    _warm: set[str] = field(default_factory=set)
    _parked: dict[str, list[tuple[int, int, Ticket]]] = field(default_factory=dict)
    _ready: list[Ticket] = field(default_factory=list)
    """Requests whose prefix is warm in their endpoint's cache: they go before any cold one, so
    that the cache still holds their prefix when they arrive (and they cost little prefill)."""
    _seq: itertools.count = field(default_factory=itertools.count)

    def submit(self, key: str, cost: int) -> Ticket:
        """Queue a request; return its ticket."""
        ticket = Ticket(next(self._seq), key, max(0, cost))
        if key in self._warm and key in self.affinity:
            self._ready.append(ticket)
        else:
            bisect.insort(self._waiting, (-ticket.cost, ticket.seq, ticket))
        return ticket

    def pin(self, key: str, index: int) -> None:
        """Send the next request of `key` to endpoint `index` while it is usable (a request that
        another endpoint could not hold, moved to one chosen for it)."""
        self.affinity[key] = index
        self._warm.add(key)

    def withdraw(self, ticket: Ticket) -> None:
        """Remove a ticket that is no longer wanted (its caller gave up)."""
        entry = (-ticket.cost, ticket.seq, ticket)
        i = bisect.bisect_left(self._waiting, entry)
        if i < len(self._waiting) and self._waiting[i][2] == ticket:
            del self._waiting[i]
        parked = self._parked.get(ticket.key, [])
        if entry in parked:
            parked.remove(entry)
        if ticket in self._ready:
            self._ready.remove(ticket)

    @property
    def waiting(self) -> int:
        parked = sum(len(v) for v in self._parked.values())
        return len(self._waiting) + parked + len(self._ready)

    def _unpark(self, key: str, warm: bool) -> None:
        for entry in self._parked.pop(key, []):
            if warm:
                self._ready.append(entry[2])
            else:
                bisect.insort(self._waiting, entry)

    def in_flight_tokens(self) -> int:
        return sum(e.outstanding_tokens for e in self.endpoints)

    def grants(self, now: float) -> list[tuple[Ticket, int]]:
        """Return (ticket, endpoint index) pairs to start now, longest prefill first."""
        out: list[tuple[Ticket, int]] = []
        usable = [i for i, e in enumerate(self.endpoints) if e.usable(now)]
        ready, self._ready = self._ready, []
        for ticket in ready:
            home = self.affinity.get(ticket.key)
            if home is None or home not in usable or ticket.key not in self._warm:
                # Its endpoint failed or is benched: an ordinary request again.
                bisect.insort(self._waiting, (-ticket.cost, ticket.seq, ticket))
            elif self.endpoints[home].room_for(ticket.cost):
                self._start(ticket, home)
                out.append((ticket, home))
            else:
                self._ready.append(ticket)
        position = 0
        while usable and position < len(self._waiting):
            ticket = self._waiting[position][2]
            if ticket.key in self._leading and ticket.key not in self._warm:
                # Parked until the first of its prefix has finished (then its cache is warm).
                self._parked.setdefault(ticket.key, []).append(self._waiting.pop(position))
                continue
            target = self._target(ticket, usable)
            if target is None:
                home = self.affinity.get(ticket.key)
                if home is not None and home in usable:
                    position += 1  # bound to its busy endpoint: the others may go on
                    continue
                # The longest request waits for room: nothing shorter overtakes it (else a stream
                # of short requests would starve the long ones, and the run ends on them).
                break
            del self._waiting[position]
            self._start(ticket, target)
            out.append((ticket, target))
        return out

    def _target(self, ticket: Ticket, usable: list[int]) -> int | None:
        """Return where `ticket` may start now, or None when it must wait."""
        home = self.affinity.get(ticket.key)
        if home is not None and home in usable:
            if ticket.key in self._leading and ticket.key not in self._warm:
                return None  # the first of this prefix is still prefilling: reuse its cache
            return home if self.endpoints[home].room_for(ticket.cost) else None
        if ticket.key in self._leading and ticket.key not in self._warm:
            return None
        fitting = [i for i in usable if self.endpoints[i].room_for(ticket.cost)]
        if not fitting:
            return None
        # Ties go to the endpoint with fewer recent failures: a retry avoids the one that just failed.
        return min(
            fitting,
            key=lambda i: (self.endpoints[i].outstanding_tokens, self.endpoints[i].streak, i),
        )

    def _start(self, ticket: Ticket, index: int) -> None:
        endpoint = self.endpoints[index]
        if self.affinity.get(ticket.key) != index:
            self.affinity[ticket.key] = index
            self._warm.discard(ticket.key)
            self._leading[ticket.key] = ticket.seq
        elif ticket.key not in self._warm:
            self._leading.setdefault(ticket.key, ticket.seq)
        endpoint.outstanding_tokens += ticket.cost
        endpoint.outstanding_requests += 1
        endpoint.max_tokens_seen = max(endpoint.max_tokens_seen, endpoint.outstanding_tokens)

    def finish(
        self,
        ticket: Ticket,
        index: int,
        now: float,
        *,
        failed: bool,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        latency_s: float = 0.0,
        error: str = "",
    ) -> None:
        """Record the end of a granted request on endpoint `index`."""
        endpoint = self.endpoints[index]
        endpoint.outstanding_tokens -= ticket.cost
        endpoint.outstanding_requests -= 1
        endpoint.requests += 1
        endpoint.busy_s += latency_s
        if self._leading.get(ticket.key) == ticket.seq:
            del self._leading[ticket.key]
            if not failed:
                self._warm.add(ticket.key)
            self._unpark(ticket.key, warm=not failed)
        if not failed:
            endpoint.streak = 0
            endpoint.prompt_tokens += prompt_tokens
            endpoint.completion_tokens += completion_tokens
            return
        endpoint.failures += 1
        endpoint.streak += 1
        endpoint.last_error = error
        if self.affinity.get(ticket.key) == index:
            # Its cache is no use while it fails: the next sibling may lead elsewhere.
            del self.affinity[ticket.key]
            self._warm.discard(ticket.key)
        if endpoint.streak >= self.bench_after and now >= endpoint.benched_until:
            endpoint.benches += 1
            if endpoint.benches > self.down_after:
                endpoint.down = True
            else:
                pause = min(self.bench_cap_s, self.bench_base_s * 2 ** (endpoint.benches - 1))
                endpoint.benched_until = now + pause
            # One more failure after the pause benches it again (half-open).
            endpoint.streak = self.bench_after - 1

    def all_down(self) -> bool:
        """Return whether no endpoint will ever take work again."""
        return all(e.down for e in self.endpoints)

    def next_return(self, now: float) -> float | None:
        """Return when the first benched endpoint comes back, or None when none is benched."""
        times = [e.benched_until for e in self.endpoints if not e.down and e.benched_until > now]
        return min(times) if times else None

    def drain(self) -> list[Ticket]:
        """Remove and return every waiting ticket (when nothing can serve them)."""
        tickets = [entry[2] for entry in self._waiting]
        tickets += [entry[2] for parked in self._parked.values() for entry in parked]
        tickets += self._ready
        self._waiting, self._parked, self._ready = [], {}, []
        return tickets


def default_token_cap(context_lengths: list[int | None]) -> list[int]:
    """Return each endpoint's prompt-token cap: two of its contexts (32K when it reports none)."""
    return [CAP_CONTEXTS_PER_ENDPOINT * (c or DEFAULT_CONTEXT) for c in context_lengths]


def split_cap(total: int, count: int) -> list[int]:
    """Return a user's total cap split evenly over `count` endpoints (the remainder to the first)."""
    if total < 1:
        raise ValueError(f"the token cap must be positive, got {total}")
    share, rest = divmod(total, count)
    return [share + (1 if i < rest else 0) for i in range(count)]


@dataclass
class DeadlinePolicy:
    """Deadlines that grow with prompt length: a 128K prompt is not timed out like a 1K one.

    deadline = max(suite limit, base_s + slack * (prompt / prefill rate + output / decode rate)).
    The rates are the user's (stated) or, until stated, the slowest seen so far on this run
    (prompt tokens over a request's whole latency: a lower bound on the prefill rate).
    """

    prefill_tps: float | None = None
    decode_tps: float | None = None
    base_s: float = 30.0
    slack: float = 3.0
    measured_prefill_tps: float | None = None

    def observe(self, prompt_tokens: int, latency_s: float) -> None:
        """Fold one finished request into the measured prefill rate (the slowest one seen)."""
        if prompt_tokens >= 256 and latency_s > 0:
            rate = prompt_tokens / latency_s
            if self.measured_prefill_tps is None or rate < self.measured_prefill_tps:
                self.measured_prefill_tps = rate

    def deadline_s(self, prompt_tokens: int, max_tokens: int, suite_limit: float | None) -> float:
        """Return the time one request of this size may take once sent."""
        prefill = self.prefill_tps or self.measured_prefill_tps
        need = 0.0
        if prefill:
            need += prompt_tokens / prefill
        if self.decode_tps:
            need += max_tokens / self.decode_tps
        scaled = self.base_s + self.slack * need if need else 0.0
        return max(suite_limit or 0.0, scaled) or self.base_s * 20
