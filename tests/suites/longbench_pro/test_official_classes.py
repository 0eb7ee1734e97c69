"""Each class where the official LongBench Pro scorer differs from a naive one, at its boundary,
in English and Chinese. Official numbers were measured by running the official code
(`python main.py --only_eval`, see test_official.py for the setup) on one-row inputs."""

from collections.abc import Sequence

import numpy as np
import pytest

from longscope.metrics.rouge import OFFICIAL_FAILING_STEPS, rouge_l
from longscope.metrics.similarity import Embedder, load_embedder
from longscope.suites.longbench_pro.scoring import score_prediction, summary_score

from ...lbp_helper import CROSS_CPU_SCORE_TOLERANCE, standin_cosine

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU

ROUGE_SAME = 2.0 * (1.0 / (2.0 + 1e-8))
"""The package's ROUGE-L F of a text against itself: 0.999999995 (its 1e-8 in the F formula)."""
MARKER = {"English": "[Answer]", "Chinese": "[答案]"}
REFS = ["alpha beta gamma.", "alpha beta.", "gamma delta."]


def _walk(steps: int) -> str:
    """A prediction whose LCS walk against "alpha beta gamma" takes exactly `steps` steps."""
    return " ".join([f"w{i}" for i in range(steps - 1)] + ["gamma"])


@pytest.mark.parametrize("steps", [OFFICIAL_FAILING_STEPS - 1, OFFICIAL_FAILING_STEPS])
def test_rouge_recursion_fails_officially_from_987_steps(steps) -> None:
    result = rouge_l(_walk(steps), "alpha beta gamma")
    assert OFFICIAL_FAILING_STEPS == 987
    assert result.official_error == ("recursion" if steps == 987 else "")
    assert result.f > 0  # the true value either way


# Official Summary scores of these one-row inputs with test_official.py's stand-in embedding model,
# measured with the official main.py (a one-row dataset and inference file per input; AMD EPYC,
# 2026-11-29): the ROUGE-L term vanishes from 987 words on. The ROUGE-L half is text only, the same
# on every CPU; the cosine moves with the CPU (lbp_helper.CROSS_CPU_SCORE_TOLERANCE).
OFFICIAL_AT = {986: 0.42266138892446603, 987: 0.4215161666165217}
OFFICIAL_ROUGE_AT = {986: 0.0020242914575718343, 987: 0.0}


@pytest.mark.parametrize("language", ["English", "Chinese"])
@pytest.mark.parametrize("steps", [986, 987])
def test_summary_at_the_recursion_boundary_equals_the_official_run(language, steps) -> None:
    embedder = load_embedder()
    parity = summary_score(_walk(steps), REFS, language, embedder, official_parity=True)
    default = summary_score(_walk(steps), REFS, language, embedder)
    # the official formula with the cosine the official code sees on this CPU, to the last digit
    here = 0.5 * standin_cosine(_walk(steps), REFS) + 0.5 * OFFICIAL_ROUGE_AT[steps]
    assert parity.value == here and parity.evidence["official_value"] == here
    assert parity.evidence["rouge_l"] == OFFICIAL_ROUGE_AT[steps]
    assert parity.value == pytest.approx(OFFICIAL_AT[steps], abs=CROSS_CPU_SCORE_TOLERANCE, rel=0)
    if steps == 986:
        assert default.value == parity.value and not default.evidence["official_differs"]
    else:
        assert default.value > parity.value and default.evidence["official_error"] == (
            "rouge recursion"
        )
        assert default.value == pytest.approx(parity.value + 0.5 * parity.evidence["rouge_l_true"])
    assert not parity.evidence["official_failed"]  # caught inside the metric: 0, not a failure


class FixedEmbedder(Embedder):
    """An embedding model whose best cosine is given: puts it exactly where a test needs it."""

    name = "fixed"

    def __init__(self, cosine: float) -> None:
        self.cosine = cosine

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("max_similarity is used")

    def max_similarity(self, prediction: str, references: Sequence[str]) -> float:
        return self.cosine


def _fixed(pred: str, cosine: float) -> FixedEmbedder:
    return FixedEmbedder(cosine)


@pytest.mark.parametrize("language", ["English", "Chinese"])
@pytest.mark.parametrize(
    ("cosine", "official", "failed"),
    [
        (0.0, 0.0, False),  # 0.5 x 0 + 0.5 x 0 = 0: inside [0, 1]
        (-(2.0**-20), 0.0, True),  # a hair below 0: the official range assert fails the sample
        (-0.6, 0.0, True),
    ],
)
def test_negative_cosine_fails_the_sample_officially(language, cosine, official, failed) -> None:
    pred = "zeta eta theta" if language == "English" else "完全无关的文字"
    score = summary_score(pred, REFS, language, _fixed(pred, cosine), official_parity=True)
    assert (score.value, score.evidence["official_failed"]) == (official, failed)
    default = summary_score(pred, REFS, language, _fixed(pred, cosine))
    assert default.value == 0.0 and default.evidence["official_value"] == official


@pytest.mark.parametrize("language", ["English", "Chinese"])
def test_negative_cosine_inside_the_range_is_the_official_value(language) -> None:
    # not clamped at 0: 0.5 x (-0.5) + 0.5 x ROUGE-L for a prediction equal to a reference
    pred = "alpha beta gamma" if language == "English" else "阿尔法 贝塔 伽马"
    refs = [pred, "x.", "y."]
    score = summary_score(pred, refs, language, _fixed(pred, -0.5))
    assert score.value == 0.5 * -0.5 + 0.5 * ROUGE_SAME and not score.evidence["official_differs"]


@pytest.mark.parametrize("language", ["English", "Chinese"])
@pytest.mark.parametrize(
    ("cosine", "failed"),
    [
        (1.0, False),
        (1.000000005, False),  # 0.5 x 1.000000005 + 0.5 x 0.999999995 = 1.0 exactly: inside
        (1.00000001, True),  # 1.0000000025: the range assert fails the sample
        (float(np.nextafter(np.float32(1), np.float32(2))), True),  # float32 cosine of a copy
    ],
)
def test_cosine_a_hair_above_one_fails_a_perfect_summary_officially(
    language, cosine, failed
) -> None:
    pred = "alpha beta gamma" if language == "English" else "阿尔法 贝塔 伽马"
    refs = [pred, "x.", "y."]
    parity = summary_score(pred, refs, language, _fixed(pred, cosine), official_parity=True)
    assert (parity.value, parity.evidence["official_failed"]) == (
        (0.0, True) if failed else (0.5 * cosine + 0.5 * ROUGE_SAME, False)
    )
    default = summary_score(pred, refs, language, _fixed(pred, cosine))
    assert default.value == (1.0 if failed else 0.5 * cosine + 0.5 * ROUGE_SAME)
    if cosine == 1.000000005:
        assert parity.value == 1.0  # the edge itself is inside [0, 1]


@pytest.mark.parametrize("language", ["English", "Chinese"])
@pytest.mark.parametrize("bad_reference", ["", "   ", ".", "..."])
def test_empty_or_period_only_reference_zeroes_all_rouge_officially(
    language, bad_reference
) -> None:
    pred = "alpha beta gamma" if language == "English" else "阿尔法 贝塔 伽马"
    refs = [bad_reference, pred, "x."]
    embedder = _fixed(pred, 0.25)
    parity = summary_score(pred, refs, language, embedder, official_parity=True)
    default = summary_score(pred, refs, language, embedder)
    assert parity.value == 0.125  # 0.5 x 0.25 + 0.5 x 0: one failing reference zeroes all three
    assert default.value == 0.5 * 0.25 + 0.5 * ROUGE_SAME  # the true ROUGE-L of the others
    assert default.evidence["official_error"] == "rouge empty reference"
    assert not parity.evidence["official_failed"]


def test_a_reference_with_one_sentence_left_is_not_empty() -> None:
    # ". . ." leaves a blank sentence (as the package splits it): no error, real value
    score = rouge_l("alpha beta", ". . .")
    assert score.official_error == "" and score.f == 0.0


@pytest.mark.parametrize("language", ["English", "Chinese"])
@pytest.mark.parametrize(
    ("reply", "value", "official_failed", "blank", "unparsable"),
    [
        ("", 0.0, True, True, False),  # only the exact "" counts as failed there
        ("   ", 0.0, False, True, False),
        ("{m}", 0.0, False, True, False),
        ("{m}\nB", 1.0, False, False, False),
        ("B", 1.0, False, False, True),
        ("The answer:\nB", 0.0, False, False, True),
    ],
)
def test_failed_count_is_the_exact_empty_string_only(
    language, reply, value, official_failed, blank, unparsable
) -> None:
    sample = {"language": language, "gold": ["B"], "meta": {"metric": "accuracy"}}
    score = score_prediction(reply.format(m=MARKER[language]), sample)
    assert score.value == value
    assert score.evidence["official_failed"] is official_failed
    assert (score.evidence["blank_answer"], score.evidence["unparsable_answer"]) == (
        blank,
        unparsable,
    )


@pytest.mark.parametrize("language", ["English", "Chinese"])
def test_an_empty_gold_answered_blank_scores_one_and_is_not_failed(language) -> None:
    sample = {"language": language, "gold": [""], "meta": {"metric": "accuracy"}}
    score = score_prediction(MARKER[language], sample)
    assert score.value == 1.0 and not score.evidence["official_failed"]
    assert score.evidence["blank_answer"]  # longscope's own count still sees it


@pytest.mark.parametrize("language", ["English", "Chinese"])
def test_blank_summary_scores_zero_without_failing_unless_exactly_empty(language) -> None:
    embedder = _fixed("x", 0.5)
    blank = summary_score(" \n ", REFS, language, embedder)
    empty = summary_score("", REFS, language, embedder)
    assert blank.value == empty.value == 0.0
    assert not blank.evidence["official_failed"] and empty.evidence["official_failed"]
