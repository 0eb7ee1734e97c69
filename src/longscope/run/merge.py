"""Merge the stores of one run's shards (or of any runs with one identity) into one store.

Only stores of the same run identity merge (same suite, parameters, model and settings): anything
else is refused with one line. Merging is idempotent: merging the same inputs again changes
nothing, and a final generation is never replaced. The merged run is scored like an unsharded one.
Overlaps (a sample and repeat in more than one input) and gaps (shards, samples or answers missing)
are reported, never guessed over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import resolved
from longscope.run.scoring import ScoreResult, score_run
from longscope.run.shards import ShardedSuite
from longscope.run.store import SHARD_KEY, RunLock, RunStore, StoreError
from longscope.types import RETRYABLE, Generation, Sample

ENDPOINTS_KEY = "endpoints:"


def put_meta(store: RunStore, key: str, value: Any) -> None:
    """Store a JSON value under `key` in the store's meta table (replacing an older one)."""
    store.put_meta(key, value)


def get_meta(store: RunStore, key: str) -> Any:
    """Return the JSON value stored under `key`, or None."""
    return store.get_meta(key)


def record_shard(run_dir: str | Path, run_id: str, suite: ShardedSuite) -> None:
    """Record in a shard's store which shard it is and every sample id of the whole run."""
    with RunStore(run_dir, create=False) as store:
        put_meta(store, SHARD_KEY + run_id, suite.record())


def record_endpoints(run_dir: str | Path, run_id: str, stats: list[dict[str, Any]]) -> None:
    """Append one invocation's per-endpoint counts, tokens and latency to the run's store."""
    if not stats:
        return
    with RunStore(run_dir, create=False) as store:
        history = get_meta(store, ENDPOINTS_KEY + run_id) or []
        put_meta(store, ENDPOINTS_KEY + run_id, [*history, stats])


def endpoint_history(run_dir: str | Path, run_id: str) -> list[list[dict[str, Any]]]:
    """Return the per-endpoint figures of each invocation of a run, oldest first."""
    with RunStore.open_readonly(run_dir) as store:
        return list(get_meta(store, ENDPOINTS_KEY + run_id) or [])


@dataclass(frozen=True)
class MergeReport:
    """What a merge did and what it found missing."""

    run_id: str
    out: Path
    inputs: int
    samples: int
    generations: int
    added: int
    """Generations written by this merge (0 when merging again)."""
    overlaps: int
    """(sample, repeat) pairs held by more than one input with the same final answer."""
    conflicts: list[str] = field(default_factory=list)
    """(sample, repeat) pairs with different final answers in two inputs: the first input's kept."""
    missing_shards: list[int] = field(default_factory=list)
    missing_samples: list[str] = field(default_factory=list)
    unfinished: int = 0
    """Stored (sample, repeat) pairs without a final generation (failed, timed out, skipped)."""
    scores: ScoreResult | None = None
    unanswered: int = 0
    """(sample, repeat) pairs with no generation at all (a shard killed mid-run)."""

    @property
    def complete(self) -> bool:
        """Return whether the merged run holds every request's final answer (nothing to send)."""
        if self.missing_shards or self.missing_samples or self.unfinished or self.unanswered:
            return False
        return self.scores is None or self.scores.completeness.get("complete", True)

    def describe(self) -> str:
        """Return the report as a few plain lines."""
        lines = [
            f"merged {self.inputs} store(s) of run {self.run_id[:12]} into {self.out}: "
            f"{self.samples} samples, {self.generations} generations ({self.added} new), "
            f"{self.overlaps} overlaps, {len(self.conflicts)} conflicts"
        ]
        if self.conflicts:
            lines.append(
                "conflicting answers (first input kept): " + ", ".join(self.conflicts[:10])
            )
        if self.missing_shards:
            lines.append(
                "gaps: shard(s) " + ", ".join(map(str, self.missing_shards)) + " not merged"
            )
        if self.missing_samples:
            shown = ", ".join(self.missing_samples[:10])
            more = len(self.missing_samples) - 10
            lines.append(
                f"gaps: {len(self.missing_samples)} sample(s) not in any input: {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        if self.unfinished:
            lines.append(
                f"{self.unfinished} generation(s) not final: run the same command on the merged "
                "store to send them again"
            )
        if self.unanswered:
            lines.append(
                f"gaps: {self.unanswered} request(s) never answered (a shard stopped before its "
                "end): run the same command on the merged store (-o) to send them"
            )
        return "\n".join(lines)


def _only_run(store: RunStore, path: Path, run_id: str | None) -> dict[str, Any]:
    runs = store.runs()
    if run_id is not None:
        matching = [r for r in runs if r["run_id"].startswith(run_id)]
        if matching:
            return matching[0]
        if len(runs) == 1:
            return runs[0]  # a different run: the caller names both in its refusal
        raise UsageError(f"{path} holds no run {run_id[:12]}: check the directory or --run-id")
    if len(runs) != 1:
        raise UsageError(
            f"{path} holds {len(runs)} runs: name the one to merge with --run-id"
            if runs
            else f"{path} holds no run yet: nothing to merge"
        )
    return runs[0]


def merge_runs(
    out: str | Path, inputs: Sequence[str | Path], run_id: str | None = None, *, score: bool = True
) -> MergeReport:
    """Merge the run stores in `inputs` into `out`; return what was merged and what is missing."""
    out = Path(out)
    if not inputs:
        raise UsageError("nothing to merge: name at least one run directory")
    target = resolved(out, "merge output")
    if any(resolved(p, "run directory") == target for p in inputs):
        raise UsageError(f"{out} is both the output and an input: merge into a new directory")
    header: dict[str, Any] | None = None
    suite = ""
    chosen: str | None = run_id
    samples: dict[str, Sample] = {}
    order: list[str] = []
    shard_count = 0
    shards_seen: set[int] = set()
    shard_ids: dict[int, list[str]] = {}
    answers: dict[tuple[str, int], Generation] = {}
    routes: dict[tuple[str, int], dict[str, Any]] = {}
    judgements: list[tuple[Any, ...]] = []
    endpoint_runs: list[Any] = []
    overlaps, conflicts = 0, []
    for path in map(Path, inputs):
        try:
            store = RunStore.open_readonly(path)
        except StoreError as exc:
            raise UsageError(str(exc)) from exc
        with store:
            run = _only_run(store, path, chosen)
            if chosen is not None and not run["run_id"].startswith(chosen):
                raise _mismatch(path, run, chosen)
            if header is None:
                chosen, header, suite = run["run_id"], run["header"], run["suite"]
            assert chosen is not None
            for sid, data in store.samples(chosen).items():
                if sid not in samples:
                    samples[sid] = _sample(data, store.context(chosen, sid))
            record = get_meta(store, SHARD_KEY + chosen)
            if record:
                shard_count = max(shard_count, int(record["count"]))
                shards_seen.add(int(record["index"]))
                if not order:
                    order = list(record["ids"])
                    for sid, index in zip(order, record.get("assignment") or (), strict=False):
                        shard_ids.setdefault(int(index), []).append(sid)
            for sid, repeat, generation in store.generations(chosen):
                key = (sid, repeat)
                held = answers.get(key)
                if held is None or (
                    held.status in RETRYABLE and generation.status not in RETRYABLE
                ):
                    answers[key] = generation
                elif generation.status not in RETRYABLE and held.status not in RETRYABLE:
                    if (held.text, held.status) == (generation.text, generation.status):
                        overlaps += 1
                    else:
                        conflicts.append(f"{sid}#{repeat}")
            endpoint_runs.extend(get_meta(store, ENDPOINTS_KEY + chosen) or [])
            for key, plan in store.routes(chosen).items():
                routes.setdefault(key, plan)
            judgements.extend(store.judgement_records(chosen))
    assert chosen is not None and header is not None
    rank = {sid: i for i, sid in enumerate(order)}
    with RunLock(out), RunStore(out) as merged:
        existing = [r["run_id"] for r in merged.runs()]
        if existing and existing != [chosen]:
            raise UsageError(
                f"{out} already holds run {existing[0][:12]}, not {chosen[:12]}: "
                "merge into an empty directory or into a merge of the same run"
            )
        before = {(s, r, g.status, g.text) for s, r, g in merged.generations(chosen)}
        merged.put_run(chosen, suite, header)
        everything = dict(samples)
        for sid, data in merged.samples(chosen).items():
            everything.setdefault(sid, _sample(data, merged.context(chosen, sid)))
        full = sorted(everything, key=lambda s: (rank.get(s, len(rank)), s not in samples, s))
        # One call writes every position: the merged store keeps the whole run's build order.
        merged.put_samples(chosen, [everything[s] for s in full])
        rows = [
            (sid, rep, _with_route(gen, routes.get((sid, rep))))
            for (sid, rep), gen in sorted(answers.items())
        ]
        merged.put_generations(chosen, rows)
        for sid, rep, judge, value, text, attempts, error in judgements:
            merged.put_judgement(chosen, sid, rep, judge, value, text, attempts, error)
        if endpoint_runs:
            history = get_meta(merged, ENDPOINTS_KEY + chosen) or []
            new = [stats for stats in endpoint_runs if stats not in history]
            put_meta(merged, ENDPOINTS_KEY + chosen, [*history, *new])
        if get_meta(merged, SHARD_KEY + chosen) is not None:
            # A merge into a copy of one shard: the output holds the merge now, not that shard
            # (its record would keep every number provisional). Gaps are found from the inputs.
            merged.delete_meta(SHARD_KEY + chosen)
        if shard_count:
            put_meta(
                merged,
                "merged:" + chosen,
                {"shards": shard_count, "seen": sorted(shards_seen), "ids": order},
            )
        stored = {(s, r, g.status, g.text) for s, r, g in merged.generations(chosen)}
        all_ids = set(merged.samples(chosen))
        # A skipped request (no tier fits the model) is deliberate: the summary counts it skipped
        # and `run` exits 0 for it. Only failed ones (error, timeout) are left to send again.
        unfinished = sum(1 for _, _, st, _ in stored if st in RETRYABLE and st != "skipped")
        # Repeats are uniform in a run: every sample is asked as often as the most asked one.
        repeats = 1 + max((r for _, r, _, _ in stored), default=0)
        unanswered = len(all_ids) * repeats - len({(s, r) for s, r, _, _ in stored})
        result = score_run(out, chosen) if score else None
    # A shard not merged is a gap only if its samples are missing: an unsharded run (or another
    # merge) among the inputs may hold them all.
    missing_shards = [
        index
        for index in sorted(set(range(shard_count)) - shards_seen)
        if any(sid not in all_ids for sid in shard_ids.get(index, ()))
    ]
    missing_samples = [s for s in order if s not in all_ids]
    return MergeReport(
        run_id=chosen,
        out=out,
        inputs=len(inputs),
        samples=len(all_ids),
        generations=len(stored),
        added=len(stored - before),
        overlaps=overlaps,
        conflicts=conflicts,
        missing_shards=missing_shards,
        missing_samples=missing_samples,
        unfinished=unfinished,
        scores=result,
        unanswered=unanswered,
    )


def _mismatch(path: Path, run: dict[str, Any], chosen: str | None) -> UsageError:
    return UsageError(
        f"{path} holds run {run['run_id'][:12]}, not {str(chosen)[:12]}: only stores of one run "
        "(same suite, parameters, model and settings) merge"
    )


def _sample(data: dict[str, Any], context: str) -> Sample:
    """Return the stored sample as built: every field `Sample.public` wrote, and its context."""
    known = {f.name for f in fields(Sample)} - {"context"}
    values = {key: value for key, value in data.items() if key in known}
    values["gold"] = tuple(values.get("gold", ()))
    values["meta"] = dict(values.get("meta") or {})
    return Sample(context=context, **values)


def _with_route(generation: Generation, route: dict[str, Any] | None) -> Generation:
    if not route:
        return generation
    from dataclasses import replace

    return replace(generation, route=route)
