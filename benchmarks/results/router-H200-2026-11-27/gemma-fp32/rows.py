"""One line per stored generation: dtype, suite, strategy, sample, gold, answer (120 chars), score,
decision, calls, kept tokens and the gold passage's rank by BM25 score among the kept ones."""

import glob
import json
import sqlite3
import sys
from pathlib import Path

roots = {"float32": "b/runs/float32", "bfloat16": "runs/bfloat16"}
with open(sys.argv[1], "w") as out:
    for dt, root in roots.items():
        for db in sorted(glob.glob(f"{root}/*/*/longscope.sqlite")):
            suite, strat = Path(db).parts[-3], Path(db).parts[-2]
            c = sqlite3.connect(db)
            samples = {
                s: json.loads(d) for s, d in c.execute("select sample_id, data from samples")
            }
            scores = {
                s: (v, m) for s, v, m in c.execute("select sample_id, value, max from scores")
            }
            plans = {s: json.loads(p) for s, p in c.execute("select sample_id, plan from routes")}
            for sid, status, text, ptok in c.execute(
                "select sample_id, status, text, prompt_tokens from generations"
            ):
                p, gold = plans.get(sid, {}), samples[sid].get("gold")
                r = p.get("retrieval") or {}
                kept = sorted(r.get("kept", []), key=lambda k: -k["score"])
                hit = [
                    i + 1
                    for i, k in enumerate(kept)
                    if gold and isinstance(gold[0], str) and any(g in k["text"] for g in gold)
                ]
                out.write(
                    json.dumps(
                        dict(
                            dtype=dt,
                            suite=suite,
                            strategy=strat,
                            sample=sid,
                            gold=gold,
                            status=status,
                            answer=text[:120],
                            score=scores.get(sid),
                            prompt_tokens=ptok,
                            decision=p.get("decision"),
                            calls=p.get("calls"),
                            kept_tokens=r.get("context_tokens_kept"),
                            gold_rank=hit[0] if hit else None,
                            top_scores=[k["score"] for k in kept[:3]],
                        )
                    )
                    + "\n"
                )
