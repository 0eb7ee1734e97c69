"""Per cell: asked/answered, score, degenerate answers, and from the plans where the gold passage ranked."""

import glob
import json
import re
import sqlite3
import sys
from pathlib import Path

roots = {"float32": "b/runs/float32", "bfloat16": "runs/bfloat16"}
out = []
for dt, root in roots.items():
    for db in sorted(glob.glob(f"{root}/*/*/longscope.sqlite")):
        suite, strat = Path(db).parts[-3], Path(db).parts[-2]
        c = sqlite3.connect(db)
        samples = {
            sid: json.loads(d) for sid, d in c.execute("select sample_id, data from samples")
        }
        gens = c.execute(
            "select sample_id, status, text, prompt_tokens from generations"
        ).fetchall()
        scores = dict(
            (
                (s, v / m if m else 0)
                for s, v, m in c.execute("select sample_id, value, max from scores")
            )
        )
        plans = {s: json.loads(p) for s, p in c.execute("select sample_id, plan from routes")}
        answered = [g for g in gens if g[1] in ("ok", "length", "stop")]
        statuses = {}
        for g in gens:
            statuses[g[1]] = statuses.get(g[1], 0) + 1
        degen = sum(
            1
            for g in answered
            if re.match(r"^\s*(1+[\s.]*){6,}", g[2]) or re.match(r"^\s*10{20,}", g[2])
        )
        ranks = []
        for sid, p in plans.items():
            gold = samples[sid].get("gold") or []
            r = p.get("retrieval")
            if not r or not gold or not isinstance(gold[0], str):
                continue
            kept = sorted(r["kept"], key=lambda k: -k["score"])
            hit = [i for i, k in enumerate(kept) if any(g in k["text"] for g in gold)]
            ranks.append(hit[0] + 1 if hit else None)
        mean = 100 * sum(scores.get(g[0], 0) for g in answered) / len(samples) if samples else None
        row = dict(
            dtype=dt,
            suite=suite,
            strategy=strat,
            asked=len(samples),
            answered=len(answered),
            statuses=statuses,
            score_pct_over_asked=mean,
            degenerate_1111=degen,
            gold_rank_in_kept=ranks,
            decisions=sorted({p.get("decision") for p in plans.values()}),
            answers=[g[2][:48] for g in gens][:8],
        )
        out.append(row)
for r in out:
    print(
        r["dtype"],
        r["suite"][:40],
        r["strategy"],
        f"{r['answered']}/{r['asked']}",
        r["statuses"],
        None if r["score_pct_over_asked"] is None else round(r["score_pct_over_asked"], 1),
        "degen",
        r["degenerate_1111"],
        "ranks",
        r["gold_rank_in_kept"],
        r["decisions"],
    )
with open(sys.argv[1], "w") as fh:
    json.dump(out, fh, indent=1)
