"""The context-budget router: a backend wrapper that keeps a model inside its effective length.

Per request it counts the prompt and, against the budget a profile gives (the measured effective
length), passes it through, middle-truncates its context (the LongBench Pro baseline), keeps the
passages that best answer the question (retrieve), or splits the context into chunks that fit,
asks the question of each (map) and combines the partial answers with one more call (reduce);
`auto` picks between them by the rule in router/combine.py. The decision is pure
(router/decide.py); the plan travels with the generation and is stored beside it. It knows
prompts only as `Request.parts` (head + context + tail): no suite.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend, Forwarding, ModelInfo, OnResult
from longscope.router.decide import MAP_NOTE, NOT_HERE, STRATEGIES, Strategy, decide
from longscope.router.profile import Basis, RouterProfile, load_profile
from longscope.router.retrieve import DEFAULT_SCORER, SCORERS, ScorerName
from longscope.types import SCORABLE, Generation, Message, Request

__all__ = ["MAP_NOTE", "NOT_HERE", "REDUCE_INTRO", "STRATEGIES", "RoutedBackend", "Strategy"]

REDUCE_INTRO = "Answers found in separate parts of the document:\n"
_ECHO = re.compile(r"\n\s*Part \d+:")


class RoutedBackend(Forwarding):
    """Any backend behind the router. Its model id names the router, so routed runs are their own.

    Each request is routed on its own (a group is its members, one by one); retries, endpoints
    and their figures are the inner backend's.
    """

    shares_prefill = False  # type: ignore[assignment]
    group_results_as_they_come = True  # type: ignore[assignment]
    bounds_own_deadline = False  # type: ignore[assignment]
    """The runner's deadline covers every call a request takes (`calls_for`)."""

    def __init__(
        self,
        inner: Backend,
        profile: RouterProfile | None = None,
        *,
        strategy: Strategy = "map-reduce",
        basis: Basis = "absolute",
        length: int | None = None,
        scorer: ScorerName = DEFAULT_SCORER,
    ) -> None:
        if scorer not in SCORERS:
            raise UsageError(f"unknown router scorer {scorer!r}: use {', '.join(SCORERS)}")
        if strategy not in STRATEGIES:
            raise UsageError(f"unknown router strategy {strategy!r}: use {', '.join(STRATEGIES)}")
        if basis not in ("absolute", "relative"):
            raise UsageError(f"bad router basis {basis!r}: use absolute or relative")
        budget = length if length is not None else (profile.effective(basis) if profile else None)
        if budget is None:
            where = f"profile {profile.path}" if profile else "no profile given"
            raise UsageError(
                f"{where}: no {basis} effective length (every tested length scored below the "
                "threshold): pass --router-length N or --router-basis relative"
            )
        if budget < 256:
            raise UsageError(f"a router budget of {budget} tokens is too small to hold a prompt")
        super().__init__(inner)
        self.profile = profile
        self.strategy: Strategy = strategy
        self.basis = basis
        self.length = budget
        self.scorer: ScorerName = scorer
        self.name = f"{inner.name}+router"
        self._inner_info: ModelInfo | None = None

    async def info(self) -> ModelInfo:
        inner = await self._info()
        plan: dict[str, Any] = {
            "strategy": self.strategy,
            "budget": self.length,
            "basis": self.basis,
        }
        if self.strategy in ("retrieve", "auto"):
            plan["scorer"] = self.scorer
        if self.profile is not None:
            plan["profile"] = {"path": self.profile.path, "date": self.profile.date}
        return replace(
            inner,
            model_id=f"{inner.model_id}+router:{self.strategy}:{self.length}",
            # Any length fits: what does not fit the budget is split or truncated.
            context_length=None,
            context_source="router",
            details={**inner.details, "router": plan, "inner_context_length": inner.context_length},
        )

    async def _info(self) -> ModelInfo:
        if self._inner_info is None:
            self._inner_info = await self.inner.info()
        return self._inner_info

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        return await Backend.generate_group(self, requests, on_result)

    async def budget_for(self, request: Request) -> int:
        """Tokens a prompt may have: the effective length (prompt and answer, as suites count it),
        within what the model can hold, less the answer's budget."""
        limit = self.length
        inner = await self._info()
        if inner.context_length is not None:
            limit = min(limit, inner.context_length)
        return limit - request.config.output_ceiling()  # thinking budget and answer

    def calls_for(self, request: Request) -> int:
        """At most how many model calls a request takes: its parts, the combining calls (at
        most one fewer than the parts when they are combined in rounds of pairs), and one spare."""
        tokens = request.prompt_tokens or len(request.text) // 3
        budget = max(self.length - request.config.output_ceiling(), 1)
        if tokens <= budget or self.strategy in ("truncate", "retrieve"):
            return 1
        parts = -(-tokens // budget)
        return 2 * parts + 1

    async def generate(self, request: Request) -> Generation:
        tokenizer = self.tokenizer()
        tokens = request.prompt_tokens or self.inner.count_tokens(request.text)
        budget = await self.budget_for(request)
        route = decide(
            request.text, request.parts, tokens, budget, tokenizer,
            strategy=self.strategy, scorer_name=self.scorer,
        )  # fmt: skip
        if route.action == "refused":
            # A budget that cannot hold the prompt's frame fails every request alike: the run
            # stops before this one is sent, saying which length would do.
            ceiling = request.config.output_ceiling()
            raise UsageError(
                f"the router's budget of {self.length} tokens is too small for this prompt: its "
                f"frame (template and question) takes {route.plan['error'].split(' takes ')[1]} "
                f"left beside {ceiling} answer tokens; give --router-length "
                f"{route.plan['needs'] + ceiling} or more"
            )
        if route.action == "pass":
            return _with_route(await self.inner.generate(request), route.plan)
        if not route.reduce:
            (text,) = route.texts
            return _with_route(await self.inner.generate(_retext(request, text)), route.plan)
        return await self._map_reduce(request, route.texts, route.plan)

    async def _map_reduce(
        self, request: Request, texts: tuple[str, ...], plan: dict[str, Any]
    ) -> Generation:
        parts = request.parts
        assert parts is not None
        calls: list[Generation] = []
        for text, chunk in zip(texts, plan["chunks"], strict=True):
            generation = await self.inner.generate(_retext(request, text))
            calls.append(generation)
            chunk.update(status=generation.status, answer=generation.text[:300])
        answered = [
            (i, g.text.strip())
            for i, g in enumerate(calls, start=1)
            if g.status in SCORABLE and g.text.strip() and NOT_HERE not in g.text.lower()
        ]
        if not any(g.status in SCORABLE for g in calls):
            plan["reduce"] = "skipped: every part failed"
            return _total(calls[-1], calls, plan)
        if len(answered) == 1:
            # One part holds the answer and the others said so: nothing to combine.
            plan["reduce"] = f"skipped: only part {answered[0][0]} answered"
            chosen = calls[answered[0][0] - 1]
            return _total(chosen, calls, plan)
        listed = answered or [
            (i, g.text.strip()) for i, g in enumerate(calls, start=1) if g.status in SCORABLE
        ]
        return await self._reduce(request, [(str(i), a) for i, a in listed], calls, plan)

    async def _reduce(
        self,
        request: Request,
        listed: list[tuple[str, str]],
        calls: list[Generation],
        plan: dict[str, Any],
    ) -> Generation:
        """Combine partial answers within the budget: one call when their list fits, else a
        combining call per group that fits and the same again over the groups' answers.

        A combination that cannot be sent within the budget (one partial answer alone is too
        long) or that the model refuses is a failed request (`error`), never a skipped one.
        """
        parts = request.parts
        assert parts is not None
        budget = await self.budget_for(request)
        tokenizer = self.tokenizer()

        def prompt(group: Sequence[tuple[str, str]]) -> str:
            body = REDUCE_INTRO + "\n".join(f"Part {i}: {answer}" for i, answer in group)
            return parts.head + body + parts.tail

        def fits(group: Sequence[tuple[str, str]]) -> bool:
            return len(tokenizer.encode(prompt(group))) <= budget

        rounds = 0
        while True:
            groups: list[list[tuple[str, str]]] = []
            for item in listed:
                if groups and fits([*groups[-1], item]):
                    groups[-1].append(item)
                elif fits([item]):
                    groups.append([item])
                else:
                    return self._failed(
                        calls, plan, f"router: partial answer {item[0]} does not fit the "
                        f"{budget}-token budget beside the prompt's frame: nothing combines it",
                    )  # fmt: skip
            if len(groups) == 1:
                break
            if len(groups) >= len(listed):
                return self._failed(
                    calls, plan, f"router: {len(listed)} partial answers cannot be combined in "
                    f"pairs within the {budget}-token budget",
                )  # fmt: skip
            rounds += 1
            combined = []
            for number, group in enumerate(groups, start=1):
                made = await self.inner.generate(_retext(request, prompt(group)))
                calls.append(made)
                if made.status not in SCORABLE or not made.text.strip():
                    return self._failed(
                        calls, plan, f"router: combining step {rounds}.{number} failed "
                        f"({made.status}: {made.error or 'no answer'})",
                    )  # fmt: skip
                combined.append((str(number), _cut_echo(made.text)[0].strip()))
            plan.setdefault("reduce_rounds", []).append(
                {"groups": len(groups), "partial_answers": len(listed)}
            )
            listed = combined
        final = await self.inner.generate(_retext(request, prompt(listed)))
        calls.append(final)
        if final.status not in SCORABLE:
            # The server refused or failed the combining call: the request failed (counts 0),
            # it was sent and is never "skipped".
            return self._failed(
                calls, plan, f"router: the combining call failed ({final.status}: "
                f"{final.error or 'no answer'})",
            )  # fmt: skip
        plan["reduce"] = f"one call over {len(listed)} partial answers"
        if rounds:
            plan["reduce"] = (
                f"{rounds} round(s) of combining within the {budget}-token budget, then "
                + plan["reduce"]
            )
        text, echoed = _cut_echo(final.text)
        if echoed:
            # The model went on listing "Part N: ..." lines: that is the prompt's list, not its answer.
            plan["reduce"] += "; the answer's echo of the partial answers was cut"
            final = replace(final, text=text)
        return _total(final, calls, plan)

    @staticmethod
    def _failed(calls: list[Generation], plan: dict[str, Any], reason: str) -> Generation:
        """The request failed in its combining step: an `error` with the reason, every call's
        tokens and time counted."""
        plan["reduce"] = f"failed: {reason}"
        failed = Generation(text="", status="error", error=reason)
        return _total(failed, calls or [failed], plan)


def with_router(
    backend: Backend,
    profile: str | RouterProfile | None,
    *,
    strategy: Strategy = "map-reduce",
    basis: Basis = "absolute",
    length: int | None = None,
    scorer: ScorerName = DEFAULT_SCORER,
) -> RoutedBackend:
    """Put `backend` behind the router, with the effective length from a profile file or `length`."""
    loaded = load_profile(profile) if isinstance(profile, str) else profile
    return RoutedBackend(
        backend, loaded, strategy=strategy, basis=basis, length=length, scorer=scorer
    )


def describe_routes(routes: dict[Any, dict[str, Any]]) -> str:
    """One line: how many requests the router passed, split or truncated, and the calls made."""
    if not routes:
        return "router: no request went through it"
    decisions = Counter(plan["decision"] for plan in routes.values())
    calls = sum(plan.get("calls", 1) for plan in routes.values())
    budget = next(iter(routes.values()))["budget"]
    said = ", ".join(f"{name} {count}" for name, count in sorted(decisions.items()))
    return f"router (prompt budget {budget} tokens): {said}; {calls} model calls for {len(routes)} requests"


def _cut_echo(text: str) -> tuple[str, bool]:
    """Return `text` cut before a "Part N:" line it echoes from the prompt, and whether it was."""
    echo = _ECHO.search(text)
    return (text[: echo.start()], True) if echo else (text, False)


def _retext(request: Request, text: str) -> Request:
    """The same request with another prompt text, in its own prompt mode."""
    if request.mode == "completion":
        return replace(request, prompt=text, prompt_tokens=0, parts=None)
    return replace(request, messages=(Message("user", text),), prompt_tokens=0, parts=None)


def _with_route(generation: Generation, plan: dict[str, Any]) -> Generation:
    return replace(generation, route=plan)


def _total(final: Generation, calls: list[Generation], plan: dict[str, Any]) -> Generation:
    """The final answer, with the tokens and time of every call it took."""
    plan["calls"] = len(calls)
    return replace(
        final,
        prompt_tokens=sum(g.prompt_tokens for g in calls),
        completion_tokens=sum(g.completion_tokens for g in calls),
        latency_s=round(sum(g.latency_s for g in calls), 3),
        route=plan,
    )


def describe_plan(plan: dict[str, Any] | None) -> str:
    """Lines saying what the router did for one answer: its decision, the combination's choice,
    the passages kept (score, tokens, a preview) and dropped, and each part's answer (model text)."""
    if not plan:
        return ""
    lines = [f"{plan['decision']}: {plan['prompt_tokens']} prompt tokens, budget {plan['budget']}"]
    if combination := plan.get("combination"):
        lines.append(f"chosen {combination['choice']}: {combination['reason']}")
    if retrieval := plan.get("retrieval"):
        dropped = retrieval["dropped"]
        lines.append(
            f"kept {len(retrieval['kept'])} of {retrieval['passages']} passages "
            f"({retrieval['context_tokens_kept']} tokens, scored by {retrieval['scorer']}); "
            f"dropped {dropped['passages']} ({dropped['tokens']} tokens, best score "
            f"{dropped['best_score']})"
        )
        best = sorted(retrieval["kept"], key=lambda k: -k["score"])[:5]
        for kept in best:
            preview = " ".join(kept["text"].split())[:100]
            lines.append(
                f"passage {kept['passage']} (score {kept['score']}, {kept['tokens']} tokens): "
                f"{preview}"
            )
    for chunk in plan.get("chunks", []):
        lines.append(
            f"part {chunk['part']} ({chunk['context_tokens']} tokens, {chunk.get('status', '-')}): "
            f"{chunk.get('answer', '').strip()}"
        )
    if plan.get("reduce"):
        lines.append(f"combined: {plan['reduce']}; {plan.get('calls', 1)} calls")
    return "\n".join(lines)
