"""Export every generation of stored router runs, with its route plan, as gzipped JSON lines:

python export_rows.py RUNS_DIR MODEL ROUND OUT.jsonl.gz   # RUNS_DIR/<suite>/<strategy>/longscope.sqlite
"""

import gzip
import json
import sqlite3
import sys
from pathlib import Path

root, model, round_, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
n = 0
with gzip.open(out, "wt") as f:
    for db in sorted(root.glob("*/*/longscope.sqlite")):
        suite, strategy = db.parent.parent.name, db.parent.name
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        scores = {
            (s, r): (v, m)
            for s, r, v, m in c.execute("select sample_id, repeat, value, max from scores")
        }
        plans = {
            (s, r): json.loads(p)
            for s, r, p in c.execute("select sample_id, repeat, plan from routes")
        }
        for sid, rep, st, text, pt, ct, lat, err in c.execute(
            "select sample_id, repeat, status, text, prompt_tokens, completion_tokens, latency_s, error from generations"
        ):
            data = json.loads(
                c.execute("select data from samples where sample_id=?", (sid,)).fetchone()[0]
            )
            plan = plans.get((sid, rep))
            if plan:
                r = plan.get("retrieval") or {}
                plan = {
                    k: plan.get(k)
                    for k in (
                        "decision",
                        "budget",
                        "prompt_tokens",
                        "calls",
                        "reason",
                        "context_tokens_kept",
                    )
                } | {
                    "combination": plan.get("combination"),
                    "chunks": len(plan.get("chunks") or []),
                    "retrieval": {
                        k: r.get(k)
                        for k in (
                            "scorer",
                            "passages",
                            "passage_tokens",
                            "context_tokens_kept",
                            "dropped",
                        )
                    }
                    | {
                        "kept": [
                            {
                                "passage": p.get("passage"),
                                "tokens": p.get("tokens"),
                                "score": p.get("score"),
                                "text": (p.get("text") or "")[:120],
                            }
                            for p in sorted(
                                r.get("kept") or [], key=lambda p: -(p.get("score") or 0)
                            )
                        ][:8]
                    }
                    if r
                    else None,
                    "parts": [
                        {k: p.get(k) for k in ("tokens", "text")} if isinstance(p, dict) else p
                        for p in (plan.get("parts") or [])
                    ][:12],
                }
            f.write(
                json.dumps(
                    {
                        "model": model,
                        "round": round_,
                        "suite": suite,
                        "strategy": strategy,
                        "sample": sid,
                        "task": data.get("task"),
                        "length": (data.get("meta") or {}).get("target_length")
                        or data.get("length"),
                        "gold": data.get("gold"),
                        "status": st,
                        "error": (err or "")[:160],
                        "prompt_tokens": pt,
                        "completion_tokens": ct,
                        "latency_s": round(lat, 3),
                        "score": scores.get((sid, rep)),
                        "answer": text[:200],
                        "plan": plan,
                    },
                    default=str,
                )
                + "\n"
            )
            n += 1
print(out, n)
