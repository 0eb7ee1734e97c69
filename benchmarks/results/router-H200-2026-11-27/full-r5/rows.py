"""One line per stored generation of the full-r5 run, with what its route plan shows:

python rows.py RUNS_ROOT rows.jsonl.gz   # RUNS_ROOT/<model>/<suite label>/<strategy>/longscope.sqlite

Each line: model, suite label, task, length, strategy, sample, status, score, the answer's first
120 characters, gold, decision, the combination's choice and reason, kept tokens, calls, and where
the gold went. A needle is the gold value (RULER niah) or a fact sentence (LongCtx, from its task
table); for `retrieve` each needle gets the rank of its passage among all passages by score
(`rank`, 1 = best, of the passage holding the needle's first character; `est` when that passage
was dropped and its index is interpolated between the kept neighbours), whether it was kept and
`kept_share`, the share of the needle's characters inside kept passages (below 1: a passage
boundary cut the needle and one side was dropped); for `truncate` whether its character position
lies in the kept head or tail (approximate: characters stand in for tokens); for map steps each
part's status, first 60 characters of its answer, whether it contains a gold value or says "not in
this part".
For cwe: how many of the 10 gold words are among the 10 most frequent words of the kept text.
Stores are opened read-only.
"""

import gzip
import json
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

from longscope.router.decide import NOT_HERE
from longscope.suites.longctx.tasks import TASKS_BY_ID

_WORD = re.compile(r"[A-Za-z]+")


def needles(data: dict) -> list[str]:
    """The strings whose place in the context tells whether the answer survived the route."""
    task_id = (data.get("meta") or {}).get("task_id")
    if task_id in TASKS_BY_ID:
        return [f.en for f in TASKS_BY_ID[task_id].facts]
    if data.get("task", "").startswith("niah"):
        return [str(g) for g in data.get("gold") or []]
    return []


def top_overlap(text: str, gold: list[str]) -> int:
    """How many gold words are among the 10 most frequent words of `text`."""
    top = {w for w, _ in Counter(w.lower() for w in _WORD.findall(text)).most_common(10)}
    return len(top & {g.lower() for g in gold})


def retrieval_view(ctx: str, r: dict, found: list[tuple[str, int]]) -> tuple[list[dict], str]:
    """Per needle: its passage's rank by score, kept or not; and the kept text (gaps unmarked)."""
    kept = sorted(r.get("kept") or [], key=lambda k: k["chars"][0])
    scores = r.get("scores") or []
    out = []
    for needle, pos in found:
        if pos < 0:
            out.append({"needle": needle[:40], "in_context": False})
            continue
        span = range(pos, pos + len(needle))
        inside = sum(
            len(span[max(k["chars"][0] - pos, 0) : max(k["chars"][1] - pos, 0)]) for k in kept
        )
        hit = next((k for k in kept if k["chars"][0] <= pos < k["chars"][1]), None)
        est = hit is None
        if hit:
            index = hit["passage"]
        else:
            before = [k for k in kept if k["chars"][1] <= pos]
            after = [k for k in kept if k["chars"][0] > pos]
            lo = before[-1]["passage"] + 1 if before else 0
            hi = after[0]["passage"] - 1 if after else len(scores) - 1
            start = before[-1]["chars"][1] if before else 0
            end = after[0]["chars"][0] if after else len(ctx)
            share = (pos - start) / max(end - start, 1)
            index = min(hi, lo + int(share * (hi - lo + 1)))
        score = scores[index] if 0 <= index < len(scores) else None
        rank = None if score is None else 1 + sum(s > score for s in scores)
        out.append(
            {
                "needle": needle[:40],
                "kept": not est,
                "kept_share": round(inside / len(needle), 2),
                "rank": rank,
                "score": score,
                "est": est,
            }
        )
    text = "\n".join(ctx[k["chars"][0] : k["chars"][1]] for k in kept)
    return out, text


def parts_view(plan: dict, gold: list[str]) -> list[dict]:
    """Each map part: tokens, status, answer's start, gold in it, said 'not in this part'."""
    rows = []
    for c in plan.get("chunks") or []:
        answer = c.get("answer") or ""
        rows.append(
            {
                "part": c.get("part"),
                "tokens": c.get("context_tokens"),
                "status": c.get("status"),
                "answer": answer[:60],
                "gold": any(isinstance(g, str) and g and g in answer for g in gold),
                "not_here": NOT_HERE in answer.lower(),
            }
        )
    return rows


def rows(db: Path, model: str):
    """Every generation of one store, with its plan read back."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    suite, strategy = db.parent.parent.name, db.parent.name
    samples = {
        s: (json.loads(d), h)
        for s, d, h in c.execute("select sample_id, data, context_hash from samples")
    }
    scores = {
        (s, r): (v, m)
        for s, r, v, m in c.execute("select sample_id, repeat, value, max from scores")
    }
    plans = {
        (s, r): json.loads(p) for s, r, p in c.execute("select sample_id, repeat, plan from routes")
    }
    gens = c.execute(
        "select sample_id, repeat, status, text, prompt_tokens, completion_tokens, error "
        "from generations order by sample_id, repeat"
    ).fetchall()
    for sid, rep, status, text, ptok, ctok, error in gens:
        data, chash = samples[sid]
        ctx = c.execute("select text from contexts where hash = ?", (chash,)).fetchone()[0]
        gold = data.get("gold") or []
        plan = plans.get((sid, rep)) or {}
        combo = plan.get("combination")
        score = scores.get((sid, rep))
        row = {
            "model": model,
            "suite": suite,
            "task": data.get("task"),
            "length": data.get("length"),
            "strategy": strategy,
            "sample": sid,
            "repeat": rep,
            "status": status,
            "error": error[:120] or None,
            "score": None if score is None else round(100 * score[0] / score[1], 1),
            "answer": text[:120],
            "gold": gold,
            "prompt_tokens": ptok,
            "completion_tokens": ctok,
            "decision": plan.get("decision"),
            "calls": plan.get("calls"),
            "combination": None
            if combo is None
            else {
                "choice": combo.get("choice"),
                "reason": combo.get("reason"),
                "named": combo.get("named"),
                "holding": combo.get("passages_holding_named"),
                "passages": combo.get("passages"),
            },
        }
        found = [(n, ctx.find(n)) for n in needles(data)]
        r = plan.get("retrieval")
        kept_text = None
        if r:
            row["kept_tokens"] = r.get("context_tokens_kept")
            row["passages"] = r.get("passages")
            row["needles"], kept_text = retrieval_view(ctx, r, found)
        elif plan.get("decision") == "truncate":
            row["kept_tokens"] = plan.get("context_tokens_kept")
            half = (plan.get("context_tokens_kept") or 0) / 2 / max(plan["prompt_tokens"], 1)
            head, tail = int(half * len(ctx)), int((1 - half) * len(ctx))
            row["needles"] = [
                {"needle": n[:40], "kept_approx": 0 <= p < head or p >= tail, "depth": p / len(ctx)}
                for n, p in found
            ]
            kept_text = ctx[:head] + "\n" + ctx[tail:]
        elif plan.get("chunks"):
            row["kept_tokens"] = sum(ch.get("context_tokens") or 0 for ch in plan["chunks"])
            row["parts"] = parts_view(plan, [str(g) for g in gold])
            row["reduce"] = plan.get("reduce")
        if found and not r and plan.get("decision") != "truncate":
            row["needle_depths"] = [round(p / len(ctx), 3) if p >= 0 else None for _, p in found]
        if data.get("task") == "cwe":
            row["cwe_top10_in_context"] = top_overlap(ctx, gold)
            if kept_text is not None:
                row["cwe_top10_in_kept"] = top_overlap(kept_text, gold)
        yield row


def main() -> None:
    root, out = Path(sys.argv[1]), sys.argv[2]
    n = 0
    with gzip.open(out, "wt") as fh:
        for db in sorted(root.glob("*/*/*/longscope.sqlite")):
            for row in rows(db, db.parent.parent.parent.name):
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    print(f"{n} generations -> {out}")


if __name__ == "__main__":
    main()
