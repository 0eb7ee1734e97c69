"""Real weights (issue 46.3): the hf engine's greedy answers against transformers' `generate`,
token for token, on a RULER + LongCtx grid run through the CLI.

    PYTHONPATH=src python benchmarks/bench_hf_agreement.py --model DIR --out DIR \
        [--lengths 4k,8k] [--prompt-mode chat] [--context-length N] [--reference eager] [--smoke]

`longscope run ruler` (13 tasks x `--lengths`, one sample each, the test fixtures' essays, SQuAD
and HotpotQA) and `longscope run longctx` (`-S lengths=... -S depths=0.1,0.5,0.9`) run in this
process on `hf/DIR`; every group the engine answers is then generated again by transformers'
own `generate` (greedy, the same dtype, transformers' SDPA, a second copy of the model loaded
from DIR) from the exact prompt ids the engine decoded. Per prompt (DIR/agreement.jsonl): the
engine's and transformers' token ids, whether they are equal, the first position where they
differ and transformers' top-2 logit margin there (a tie within bf16 rounding is a margin near
0.1 at the logits' scale), and the smallest margin over the answer. The last line printed is the
agreement rate.

Two readings of "the same function in bf16" beside token-for-token equality: `--baseline eager`
also generates every prompt with transformers' eager attention (a third copy) and records whether
transformers agrees with itself token for token (two correct implementations, one rounding
apart); and every prompt gets a teacher-forced check: transformers' logits over the prompt plus
the engine's answer in one forward, the gap between its best logit and the engine's token's at
each answer position, in units of one bf16 step at the best logit's magnitude
(`largest_gap_steps`; 0 where the engine took transformers' choice, <= 2 where it took a token
transformers rates equal within bf16 rounding). `--exact-path`: the engine run as transformers
runs (one prefill call of transformers' SDPA, no fused prefill ops, eager decode: `-M
cuda_graph=false -M attn_implementation=sdpa -M prefill_chunk=262144`), which isolates what the
engine's own kernels change. `--smoke`: a random-weight tiny model saved to DIR, 4K only, 2 tasks,
with the eager baseline.

`--reference eager`: the reference `generate` runs transformers' eager attention instead of its
SDPA. On CUDA, torch's memory-efficient SDPA kernel is wrong for a model with one KV head when the
prompt is 1 past a multiple of 32 tokens (pytorch/pytorch#191937; on an H200 it made transformers'
SDPA `generate` for Gemma 3 270M leave its eager one on exactly those prompts, BENCHMARKS.md issue
46's fourteenth and fifteenth passes). Each row says whether its prompt is such a one
(`sdpa_suspect`) and the summary counts the differing ones.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
sys.path.insert(0, str(ROOT))

from longscope.models.hf import HFBackend  # noqa: E402


class Compare:
    """Holds the reference model and the per-prompt rows; patches the backend to fill them."""

    def __init__(
        self,
        model_dir: Path,
        dtype: Any,
        baseline: str = "",
        exact_path: bool = False,
        reference: str = "sdpa",
    ) -> None:
        self.model_dir, self.dtype = model_dir, dtype
        self.baseline, self.exact_path = baseline, exact_path
        self.reference_attention = reference
        self.reference: Any = None
        self.second: Any = None
        self.rows: list[dict[str, Any]] = []
        self.members: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.suite = ""
        self.paths: set[str] = set()

    def patch(self) -> None:
        member, group = HFBackend._member, HFBackend.generate_group
        compare = self

        def recorded(backend: HFBackend, request: Any) -> Any:
            made = member(backend, request)
            compare.members[id(request)] = made
            return made

        async def compared(backend: HFBackend, requests: Any, on_result: Any = None) -> Any:
            if compare.exact_path:
                switches = backend.engine.kernels
                switches.fused_prefill_norm = switches.fused_prefill_ops = False
            answers = await group(backend, requests, on_result)
            await asyncio.to_thread(compare.check, backend, requests, answers)
            return answers

        HFBackend._member = recorded  # type: ignore[method-assign]
        HFBackend.generate_group = compared  # type: ignore[method-assign]

    def _load(self, device: Any, attention: str) -> Any:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(
            str(self.model_dir), dtype=self.dtype, attn_implementation=attention
        ).to(device)
        return model.eval()

    def _model(self, device: Any) -> Any:
        if self.reference is None:
            self.reference = self._load(device, self.reference_attention)
        return self.reference

    def _generate(self, model: Any, ids: Any, new: int, eos: list[int]) -> Any:
        return model.generate(
            ids,
            max_new_tokens=new,
            do_sample=False,
            eos_token_id=eos or None,
            pad_token_id=eos[0] if eos else 0,
            output_logits=True,
            return_dict_in_generate=True,
        )

    def _gaps(self, model: Any, prompt: list[int], answer: list[int]) -> tuple[float, float]:
        """Teacher-forced: the largest gap between transformers' best logit and the logit of
        the token `answer` took, over the answer; in logits and in bf16 steps at that scale."""
        if not answer:
            return 0.0, 0.0
        forced = prompt + answer[:-1]
        keep = len(answer)
        if _one_past_32(len(forced)):
            # torch's SDPA on CUDA is wrong at 32k+1 queries (`sdpa_suspect`): one token more
            # at the end, whose logits are dropped; under a causal mask it changes none before
            # it. (2026-11-30g: an 8K fwe row of 7,137 forced tokens had shown a 95.3-step gap.)
            forced, keep = [*forced, answer[-1]], keep + 1
        ids = torch.tensor([forced], device=model.device)
        logits = model(input_ids=ids, logits_to_keep=keep).logits[0, : len(answer)].float()
        best = logits.max(dim=-1).values
        taken = logits.gather(1, torch.tensor(answer, device=model.device)[:, None])[:, 0]
        gaps = best - taken
        # one bf16 step (8 significant bits) at each position's best logit
        steps = torch.exp2(torch.floor(torch.log2(best.abs().clamp_min(1e-30))) - 7)
        return round(float(gaps.max()), 4), round(float((gaps / steps).max()), 2)

    def check(self, backend: HFBackend, requests: Any, answers: Any) -> None:
        """Generate each request again with transformers and record the comparison."""
        with self.lock, torch.inference_mode():
            for request, answer in zip(requests, answers, strict=True):
                made = self.members.pop(id(request), None)
                if made is None or answer.status not in ("ok", "length"):
                    continue
                self.rows.append(self._one(backend, request, made, answer))
            # How the engine's batches decoded (set when a batch ends: rows of several groups
            # share one batch, so this is per batch, not per prompt).
            last = backend.engine.last_decode
            if last:
                self.paths.add(f"{last.get('path')}/{last.get('kernels')}")

    def _one(self, backend: HFBackend, request: Any, member: Any, answer: Any) -> dict[str, Any]:
        engine = list(member.generated)
        eos = sorted(backend._eos)
        by_eos = answer.status == "ok" and member.stop_at < 0
        model = self._model(backend._model.device)
        ids = torch.tensor([member.ids], device=model.device)
        new_tokens = max(1, len(engine) + (1 if by_eos else 0))
        out = self._generate(model, ids, new_tokens, eos)
        new = out.sequences[0, len(member.ids) :].tolist()
        same, first, reference = _compared(engine, new, set(eos) if by_eos else None)
        margins = []
        for logits in out.logits:
            top = torch.topk(logits[0].float(), 2).values
            margins.append(round(float(top[0] - top[1]), 4))
        at_first = margins[first] if first is not None and first < len(margins) else None
        gap, gap_steps = self._gaps(model, list(member.ids), engine)
        extra: dict[str, Any] = {"largest_gap": gap, "largest_gap_steps": gap_steps}
        if self.baseline:
            if self.second is None:
                self.second = self._load(model.device, self.baseline)
            other = self._generate(self.second, ids, len(new), eos)
            other_new = other.sequences[0, len(member.ids) :].tolist()
            extra["baseline_ids"] = other_new
            extra["baseline_same"] = other_new == new
            # the engine against this second reference: on the H200, transformers 5.17's SDPA
            # `generate` for Gemma 3 in float32 disagreed with its own eager `generate`, which
            # the engine matched (2026-11-30f, call G6)
            extra["engine_baseline_same"] = _compared(
                engine, other_new, set(eos) if by_eos else None
            )[0]
        config = model.config.get_text_config()
        extra["sdpa_suspect"] = sdpa_suspect(
            model.device.type,
            getattr(config, "num_key_value_heads", None) or config.num_attention_heads,
            config.num_attention_heads,
            len(member.ids),
        )
        return {
            **extra,
            "suite": self.suite,
            "sample": request.sample_id,
            "prompt_tokens": len(member.ids),
            "engine_status": answer.status,
            "engine_ids": engine,
            "transformers_ids": reference,
            "same": same,
            "first_difference": first,
            "margin_at_first_difference": at_first,
            "smallest_margin": min(margins) if margins else None,
        }


def _compared(
    engine: list[int], new: list[int], ended_by: set[int] | None = None
) -> tuple[bool, int | None, list[int]]:
    """Whether `new` (a reference's generated ids) equals the engine's answer, the first
    position where they differ, and the reference's ids compared. `ended_by`: the end-of-sequence
    ids, where the engine's answer stopped at one (not kept in its ids): the reference must then
    generate one of them at that position, not go on (until 2026-11-30f any token passed there:
    one exact-path row of call R, fwe at 4K, counted as equal where transformers went on with a
    newline)."""
    if not ended_by:
        reference = new[: len(engine)]
        want = engine
    else:
        reference = new[: len(engine) + 1]
        ends = reference[len(engine) :]
        # the engine's stop, written as the reference's own end token when it ended there
        want = [*engine, ends[0] if ends and ends[0] in ended_by else -1]
    same = reference == want
    first = next((i for i, (a, b) in enumerate(zip(reference, want, strict=False)) if a != b), None)
    if first is None and len(reference) != len(want):
        first = min(len(reference), len(want))
    return same, first, reference


def sdpa_suspect(device_type: str, kv_heads: int, heads: int, prompt_tokens: int) -> bool:
    """Whether transformers' SDPA `generate` may go wrong on this prompt: on CUDA, a model with one
    KV head (its keys broadcast across the query heads with stride 0), and a prompt 1 past a
    multiple of 32 tokens, the query count torch's memory-efficient kernel gets wrong when it is
    given a mask (pytorch/pytorch#191937, measured on an H200: BENCHMARKS.md, issue 46's
    fifteenth pass). A model whose prefill passes no mask may not meet it: "may"."""
    return device_type == "cuda" and kv_heads == 1 < heads and _one_past_32(prompt_tokens)


def _one_past_32(queries: int) -> bool:
    """The query counts torch's memory-efficient SDPA gets wrong over stride-0 keys."""
    return queries % 32 == 1


def save_smoke_model(folder: Path) -> None:
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    model = tiny_qwen2(vocab_size=len(tok), layers=2, hidden=128, heads=4, kv_heads=2)
    model.to(torch.bfloat16).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))


def run(suite: str, args: list[str], model_dir: Path, out: Path, options: list[str]) -> dict:
    from typer.testing import CliRunner

    from longscope.cli import app

    command = ["run", suite, "--model", f"hf/{model_dir}", *options, *args, "-o", str(out), "-q"]
    started = time.perf_counter()
    result = CliRunner().invoke(app, command, catch_exceptions=False)
    print(result.output[-1500:], flush=True)
    return {
        "suite": suite,
        "exit_code": result.exit_code,
        "wall_s": round(time.perf_counter() - started, 1),
        "command": "longscope " + " ".join(command),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="--smoke: a scratch folder")
    parser.add_argument("--lengths", default="4k,8k")
    parser.add_argument("--prompt-mode", default="chat")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--context-length", type=int, default=0)
    parser.add_argument("--tasks", default="")
    parser.add_argument("--skip-longctx", action="store_true")
    parser.add_argument("--reference", default="sdpa", choices=("sdpa", "eager"))
    parser.add_argument("--baseline", default="", help="also transformers with this attention")
    parser.add_argument("--exact-path", action="store_true", help="the engine run as transformers")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.out is None and not args.smoke:
        parser.error("--out DIR is needed (the runs, agreement.jsonl and summary.json go there)")
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="agreement-"))
        atexit.register(shutil.rmtree, args.out, True)  # a smoke scratch nobody reads after
    args.out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        args.model = args.out / "model"
        save_smoke_model(args.model)
        args.lengths, args.tasks, args.prompt_mode = "4k", "niah_single_1,qa_1", "completion"
        args.baseline = args.baseline or "eager"
    if args.model is None:
        parser.error("--model DIR is needed: a transformers model folder (real weights)")
    dtype = getattr(torch, args.dtype)
    compare = Compare(args.model, dtype, args.baseline, args.exact_path, args.reference)
    compare.patch()
    options = ["-M", f"prompt_mode={args.prompt_mode}", "-M", f"dtype={args.dtype}"]
    if args.exact_path:
        options += ["-M", "cuda_graph=false", "-M", "attn_implementation=sdpa"]
        options += ["-M", "prefill_chunk=262144"]
    if args.context_length:
        options += ["-M", f"context_length={args.context_length}"]
    runs = []
    ruler = ["--lengths", args.lengths, "-S", "samples=1"]
    ruler += [f"-S{k}={FIXTURES / f}" for k, f in (
        ("essays", "essays.json"), ("squad", "squad.json"), ("hotpotqa", "hotpotqa.json"))]  # fmt: skip
    if args.tasks:
        ruler += ["-S", f"tasks={args.tasks}"]
    compare.suite = "ruler"
    runs.append(run("ruler", ruler, args.model, args.out / "ruler", options))
    if not args.skip_longctx and not args.smoke:
        compare.suite = "longctx"
        longctx = ["-S", f"lengths={args.lengths}", "-S", "depths=0.1,0.5,0.9"]
        runs.append(run("longctx", longctx, args.model, args.out / "longctx", options))
    rows = compare.rows
    with open(args.out / "agreement.jsonl", "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    same = sum(r["same"] for r in rows)
    summary = {
        "kind": "agreement",
        "card": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "model": str(args.model),
        "dtype": args.dtype,
        "prompts": len(rows),
        "same": same,
        "rate": round(same / len(rows), 4) if rows else None,
        "exact_path": args.exact_path,
        "reference": args.reference,
        # differing prompts where the reference, transformers' SDPA, may be the one that is wrong
        "differing_sdpa_suspect": sum(r["sdpa_suspect"] for r in rows if not r["same"])
        if args.reference == "sdpa"
        else None,
        # the engine's answer took, at every position, transformers' choice or a token within
        # two bf16 steps of it (teacher-forced)
        "within_two_bf16_steps": sum(r["largest_gap_steps"] <= 2 for r in rows),
        "largest_gap_steps": max((r["largest_gap_steps"] for r in rows), default=None),
        **(
            {
                "baseline": args.baseline,
                "baseline_same": sum(r["baseline_same"] for r in rows),
                "baseline_rate": round(sum(r["baseline_same"] for r in rows) / len(rows), 4),
                "engine_baseline_same": sum(r["engine_baseline_same"] for r in rows),
                "engine_baseline_rate": round(
                    sum(r["engine_baseline_same"] for r in rows) / len(rows), 4
                ),
            }
            if args.baseline and rows
            else {}
        ),
        "differing": [
            {
                k: r[k]
                for k in (
                    "suite",
                    "sample",
                    "prompt_tokens",
                    "first_difference",
                    "margin_at_first_difference",
                    "largest_gap_steps",
                    "sdpa_suspect",
                )
            }
            | ({"engine_baseline_same": r["engine_baseline_same"]} if args.baseline else {})
            for r in rows
            if not r["same"]
        ],
        "decode_paths": sorted(compare.paths),
        "runs": runs,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary), flush=True)
    if args.smoke:
        assert rows and all(r["engine_ids"] for r in rows), "no answer compared"
        assert all(r["baseline_ids"] for r in rows), (
            "transformers' eager attention answered nothing"
        )


if __name__ == "__main__":
    main()
