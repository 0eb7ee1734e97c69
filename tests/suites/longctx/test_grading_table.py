"""Hand-graded answers: the points a person gives each one by the rubric, and why.

Each row is (task, language, answer, points, why). The points were decided by reading the answer
against the seed's rubric and the rules in `longscope.suites.longctx.grading`'s docstring, before
running the grader. Boundaries (60/61 words, overlap 0.3/0.6, the six levels, a negative total)
follow the table.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from longscope.suites.base import ScoredRow
from longscope.suites.longctx.grading import grade, overlap_points, word_count
from longscope.suites.longctx.summary import level, summarize_longctx
from longscope.suites.longctx.tasks import TASKS, TASKS_BY_ID, Fact, Key, TaskSpec
from longscope.types import Generation, Score

F = 5 / 3  # one fact of a 3-fact task

TABLE: list[tuple[str, str, str, float, str]] = [
    # --- LCB-001 needle: 0.003 arc-seconds
    ("LCB-001", "en", "0.0030 arc-seconds", 5, "trailing zero: the same number"),
    ("LCB-001", "en", "Crestfall reached 0.003 arcsec in phase two.", 5, "unit spelling"),
    ("LCB-001", "en", "3 milliarcseconds", 5, "the same angle in a smaller unit"),
    (
        "LCB-001",
        "en",
        "0.03 arc-seconds",
        0,
        "wrong number, right unit, no topic: at most 1, here 0",
    ),
    ("LCB-001", "en", "Its phase-two calibration reached 0.3 arc-seconds.", 1, "wrong, on topic"),
    ("LCB-001", "en", "The calibration resolution is not given.", 1, "topic only"),
    ("LCB-001", "en", "arc-seconds", 0, "a unit without a number shares no part of the value"),
    ("LCB-001", "zh", "Crestfall项目第二阶段校准的分辨率为0.0030角秒。", 5, "zh, trailing zero"),
    ("LCB-001", "zh", "分辨率为0.03角秒。", 1, "zh wrong number, topic (分辨率)"),
    # --- LCB-003 position_bias: 94 minutes
    ("LCB-003", "en", "It takes ninety-four minutes.", 5, "written-out number"),
    ("LCB-003", "en", "1 hour 34 minutes", 5, "a compound duration of 94 minutes"),
    ("LCB-003", "en", "Helios-7 orbits in 96 minutes.", 1, "wrong number; 'Helios-7' is a name"),
    ("LCB-003", "zh", "94分钟", 5, "zh exact"),
    ("LCB-003", "zh", "绕轨道一圈需要96分钟。", 1, "zh wrong number, topic (轨道)"),
    # --- LCB-005 needle: 48 hours
    ("LCB-005", "en", "Within 48 hours of the observed event.", 5, "exact"),
    ("LCB-005", "en", "2 days", 5, "the same duration"),
    ("LCB-005", "en", "24 hours", 0, "wrong number, no topic"),
    ("LCB-005", "zh", "观察到事件后48小时内。", 5, "zh exact"),
    ("LCB-005", "zh", "现场报告须在72小时内提交。", 1, "zh wrong number, topic (现场报告)"),
    # --- LCB-007 position_bias: 2.4 GHz
    ("LCB-007", "en", "2400 MHz", 5, "the same frequency in MHz"),
    ("LCB-007", "en", "2,400 MHz", 5, "thousands separator"),
    ("LCB-007", "en", "The Nexus relay operates at 5 GHz.", 1, "wrong number, topic"),
    ("LCB-007", "zh", "2.4GHz", 5, "zh, no space"),
    ("LCB-007", "zh", "工作频率为2.4千兆赫。", 5, "zh unit name"),
    # --- LCB-009 needle: 72
    ("LCB-009", "en", "seventy-two", 5, "written-out number"),
    ("LCB-009", "en", "64", 0, "wrong number, nothing else"),
    ("LCB-009", "zh", "七十二个", 5, "Chinese numeral with a measure word"),
    ("LCB-009", "zh", "Thornwick阵列使用了64个共振腔。", 1, "zh wrong number, topic"),
    # --- LCB-011 position_bias: 8,400 metric tons
    ("LCB-011", "en", "8.4 thousand metric tons", 5, "the same number, scale word"),
    ("LCB-011", "en", "8.4 million kilograms", 5, "the same mass in kg"),
    ("LCB-011", "en", "8,400 kg of steel", 1, "8.4 t is a wrong mass; topic (steel)"),
    ("LCB-011", "zh", "Cascade大桥用了8,400公吨结构钢。", 5, "zh exact"),
    ("LCB-011", "zh", "8400吨", 5, "zh, tons"),
    # --- LCB-013 needle: 85 degrees Celsius
    ("LCB-013", "en", "185°F", 5, "the same temperature in Fahrenheit"),
    ("LCB-013", "en", "85 degrees", 5, "the number; the scale left implicit"),
    ("LCB-013", "en", "80 degrees Celsius", 0, "wrong number, no topic"),
    ("LCB-013", "zh", "最低固化温度为八十五摄氏度。", 5, "zh numeral and unit"),
    # --- LCB-015 position_bias: 1742 degrees Celsius
    ("LCB-015", "en", "The melting point is 1,742 °C.", 5, "separator and symbol"),
    ("LCB-015", "zh", "1742℃", 5, "zh symbol"),
    ("LCB-015", "zh", "熔点为1724摄氏度。", 1, "zh wrong (transposed) number, topic"),
    # --- LCB-017 needle: August 8, 2032
    ("LCB-017", "en", "8 August 2032", 5, "day-month-year"),
    ("LCB-017", "en", "2032-08-08", 5, "ISO"),
    ("LCB-017", "en", "August 2032", 3, "month and year right, day missing: overlap 2/3"),
    ("LCB-017", "en", "2032", 2, "year only: overlap 1/3"),
    ("LCB-017", "en", "August 9, 2032", 0, "wrong day, no topic"),
    ("LCB-017", "zh", "2032年8月8日", 5, "zh date"),
    ("LCB-017", "zh", "2032年8月", 3, "zh month and year"),
    ("LCB-017", "zh", "Quintessa平台于2033年达到商业就绪。", 1, "zh wrong year, topic"),
    # --- LCB-019 position_bias: December 1, 2034
    ("LCB-019", "en", "2034/12/01", 5, "ISO with slashes"),
    ("LCB-019", "en", "December 2034", 3, "month and year"),
    ("LCB-019", "en", "It finished the test in late 2034.", 2, "year only"),
    ("LCB-019", "en", "12/01/2034", 2, "ambiguous numeric date: only the year is certain"),
    ("LCB-019", "zh", "2034年12月1日", 5, "zh date"),
    ("LCB-019", "zh", "Aurora-9原型机于2034年11月1日完成测试。", 1, "zh wrong month, topic"),
    # --- LCB-002 multi_fact: 3 / July 14, 2019 / $12 million
    ("LCB-002", "en", "3 / July 14, 2019 / $12 million", 5, "all three"),
    (
        "LCB-002",
        "en",
        "Three founding members; established 14 July 2019; initial funding of twelve million "
        "dollars.",
        5,
        "all three, written out",
    ),
    ("LCB-002", "en", "4 founders, July 14, 2019, $12 million", 2 * F, "member count wrong"),
    ("LCB-002", "en", "3 members, founded in 2019, $12M", 2 * F, "date incomplete"),
    ("LCB-002", "zh", "3名创始成员，2019年7月14日成立，初始资金1200万美元。", 5, "zh all three"),
    ("LCB-002", "zh", "三位创始成员，2019年7月成立，资金1200万美元", 2 * F, "zh date lacks day"),
    # --- LCB-006 multi_fact: 312°C / 1987 / Group II
    ("LCB-006", "en", "312 degrees Celsius, synthesized in 1987, Group 2 hazardous.", 5, "all"),
    ("LCB-006", "en", "Boiling point 321°C, first made in 1987, Group II.", 2 * F, "321 wrong"),
    ("LCB-006", "zh", "沸点312℃，1987年合成，属于第二类危险物质。", 5, "zh all three"),
    # --- LCB-010 multi_fact: 6 layers / April 3, 2023 / 200 ms
    (
        "LCB-010",
        "en",
        "Six layers; deployed 3 April 2023; target 0.2 seconds.",
        5,
        "all, converted",
    ),
    ("LCB-010", "en", "6 layers; deployed in April 2023; 200 ms", 2 * F, "date lacks day"),
    ("LCB-010", "zh", "6层，2023年4月3日部署，延迟目标200毫秒。", 5, "zh all three"),
    ("LCB-010", "zh", "六层神经网络，2023年4月3日部署。", 2 * F, "zh latency missing"),
    # --- LCB-014 multi_fact: 144 / every 6 minutes / 2 facilities
    (
        "LCB-014",
        "en",
        "One hundred forty-four stations transmit every six minutes to two archives.",
        5,
        "all, written out",
    ),
    ("LCB-014", "en", "144 stations, every 360 seconds, 2 facilities", 5, "360 s = 6 minutes"),
    ("LCB-014", "en", "144 stations, every 10 minutes, 2 facilities", 2 * F, "interval wrong"),
    ("LCB-014", "zh", "144个监测站，每6分钟传输一次，两个存档设施。", 5, "zh all three"),
    # --- LCB-018 multi_fact (5 facts, 1 point each)
    (
        "LCB-018",
        "en",
        "Mei Wong proposed it in March 2025; it targets coastal infrastructure resilience; the "
        "2027 allocation is $2.4 billion; it was renamed Sigma-Plus in early 2028.",
        5,
        "all five",
    ),
    (
        "LCB-018",
        "en",
        "Proposed by Mei Wong in 2025 for coastal regions; 2.4 million; renamed in early 2028.",
        3,
        "month missing, allocation wrong: Mei Wong, coastal, early 2028",
    ),
    (
        "LCB-018",
        "zh",
        "由Mei Wong于2025年3月提出，针对沿海地区基础设施韧性，2027财年拨款24亿，2028年初更名。",
        5,
        "zh all five",
    ),
    # --- LCB-004 reasoning: yes, overdue (18 months from March 1, 2024)
    (
        "LCB-004",
        "en",
        "Yes. Policy 3.2 requires an audit every 18 months; the last was March 1, 2024, so it was "
        "due by September 1, 2025.",
        5,
        "conclusion, both facts, derived due date",
    ),
    ("LCB-004", "en", "Yes, it is overdue because it is sunny.", 2, "connective beside no fact"),
    (
        "LCB-004",
        "en",
        "Yes, overdue. The interval is 18 months and the last audit was on March 1, 2024.",
        4,
        "facts listed, no step from them to the conclusion",
    ),
    (
        "LCB-004",
        "en",
        "Unit Alpha-12 has had no audit since March 1, 2024, more than 18 months before November "
        "1, 2025, so yes, it is overdue.",
        5,
        "'no audit' is not the conclusion; 'so' links the facts",
    ),
    ("LCB-004", "en", "No, it is not overdue: audits are every 18 months.", -5, "wrong conclusion"),
    (
        "LCB-004",
        "zh",
        "已逾期。政策要求每18个月审核一次，上次审核是2024年3月1日，所以2025年9月1日前就该审核了。",
        5,
        "zh full",
    ),
    ("LCB-004", "zh", "没有逾期，审核周期是18个月。", -5, "zh wrong conclusion"),
    # --- LCB-008 reasoning: yes, on time (25 of 30 days)
    (
        "LCB-008",
        "en",
        "Yes. PO issued September 15, 2025; delivered October 10, 2025; 25 days, inside the "
        "30-day limit.",
        5,
        "no linking word, but the derived 25 days is the step",
    ),
    (
        "LCB-008",
        "en",
        "Yes, it was on time: the contract allows 30 days and delivery came on October 10, 2025.",
        3.5,
        "30 days and delivery cited (1.5 of 2), PO date missing, no step",
    ),
    (
        "LCB-008",
        "en",
        "It was not late: delivery on October 10, 2025 came 25 days after the September 15, 2025 "
        "purchase order.",
        4,
        "'not late' is correct; both dates cited, 30 days not; derived 25 days",
    ),
    (
        "LCB-008",
        "en",
        "No, it was late: delivered October 20, 2025, more than 30 days after September 15, 2025.",
        -5,
        "the seed's uncorrected fact: wrong conclusion",
    ),
    ("LCB-008", "zh", "按时交货。", 2, "zh conclusion only"),
    ("LCB-008", "zh", "没有按时交货，因为超过了30天。", -5, "zh wrong conclusion"),
    # --- LCB-012 reasoning: no, 3 < 4
    (
        "LCB-012",
        "en",
        "No. SOP-14 requires a minimum of 4 for night operations, but tonight's crew has only 3.",
        5,
        "'but ... only' beside both numbers",
    ),
    ("LCB-012", "en", "No, the crew is not in compliance.", 2, "conclusion only"),
    ("LCB-012", "en", "Yes, the crew is in compliance.", -5, "wrong conclusion"),
    ("LCB-012", "en", "Not in compliance: 4 required, 3 present.", 4, "numbers cited, no step"),
    ("LCB-012", "en", "Not in compliance: 3 < 4 required.", 5, "a comparison sign is the step"),
    ("LCB-012", "en", "No: the crew has 3, which is 1 short of the required 4.", 5, "derived"),
    ("LCB-012", "zh", "不符合，夜班只有三人，少于规定的四人。", 5, "zh numerals, 少于 links"),
    ("LCB-012", "zh", "符合SOP-14。", -5, "zh wrong conclusion"),
    # --- LCB-016 reasoning: no, 136 < 137.75
    (
        "LCB-016",
        "en",
        "No. 136 N·m is below the 137.75 N·m lower limit (145 N·m ± 5%).",
        5,
        "all cited, derived bound",
    ),
    ("LCB-016", "en", "Yes, it is within spec.", -5, "wrong conclusion"),
    (
        "LCB-016",
        "en",
        "No, out of spec: the reading was 138 N·m against 145 ± 5%.",
        3,
        "138 misquotes 136 (no points for it); 145 and 5% cited (1 of 2); no step",
    ),
    ("LCB-016", "zh", "在规格范围内。", -5, "zh wrong conclusion"),
    # --- LCB-020 reasoning: yes, retire (2014 + 10 years < 2026)
    (
        "LCB-020",
        "en",
        "Yes. Made June 12, 2014, the unit turned 10 on June 12, 2024; refurbishment doesn't reset "
        "the date, so it must be retired.",
        5,
        "both facts, derived ten-year mark",
    ),
    ("LCB-020", "en", "Yes, it must be retired.", 2, "conclusion only"),
    (
        "LCB-020",
        "en",
        "No, it was refurbished on November 4, 2024, so it does not need to be retired.",
        -5,
        "wrong conclusion",
    ),
    (
        "LCB-020",
        "zh",
        "是的，必须退役，因为它于2014年6月12日制造，已超过10年，翻新不会重置制造日期。",
        5,
        "zh full",
    ),
    ("LCB-020", "zh", "不需要退役，因为2024年11月4日刚翻新过。", -5, "zh wrong conclusion"),
]


@pytest.mark.parametrize(
    ("task_id", "language", "answer", "points", "why"),
    TABLE,
    ids=[f"{row[0]}-{row[1]}-{i}" for i, row in enumerate(TABLE)],
)
def test_hand_graded_answer(task_id: str, language: str, answer: str, points: float, why: str):
    score = grade(TASKS_BY_ID[task_id], answer, language)
    assert score.value == pytest.approx(points, abs=1e-6), (why, score.evidence)
    assert score.evidence  # every result says which pattern matched and which did not


def test_table_covers_every_task_in_both_languages() -> None:
    assert len(TABLE) >= 60
    assert {row[0] for row in TABLE} == {task.id for task in TASKS}
    assert {row[1] for row in TABLE} == {"en", "zh"}
    for task_type in ("needle", "position_bias", "multi_fact", "reasoning"):
        languages = {row[1] for row in TABLE if TASKS_BY_ID[row[0]].type == task_type}
        assert languages == {"en", "zh"}, task_type


def _last_digit_up(text: str) -> str:
    """Return `text` with its last digit one higher (9 -> 0): a wrong value in the gold's words."""
    i = max(i for i, ch in enumerate(text) if ch.isdigit())
    return text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize(
    "task", [t for t in TASKS if t.type in ("needle", "position_bias")], ids=lambda t: t.id
)
def test_wrong_number_in_the_gold_unit_scores_one(task: TaskSpec, language: str) -> None:
    # The question's words mention the topic, so the wrong value earns exactly the 1 topic point.
    wrong = _last_digit_up(task.answer[language])
    score = grade(task, f"{task.question[language]} {wrong}", language)
    assert score.value == 1.0, (wrong, score.evidence)
    assert score.evidence["rule"] == "wrong value, topic mentioned"


def test_wrong_value_evidence_names_the_value() -> None:
    score = grade(TASKS_BY_ID["LCB-007"], "The Nexus relay runs at 2.5 GHz.")
    assert score.evidence["wrong_values"] == ["2.5 ghz"]
    assert score.evidence["missed"] == ["2.4 GHz"]


def test_reasoning_chain_evidence_says_why_not() -> None:
    score = grade(TASKS_BY_ID["LCB-004"], "Yes, overdue because it is sunny. Interval: 18 months.")
    assert score.value == 3.0  # conclusion 2 + one of two citations 1; no chain
    assert score.evidence["reasoning_chain"] is False
    assert score.evidence["links_away_from_facts"] == ["because"]
    linked = grade(TASKS_BY_ID["LCB-004"], "Yes, overdue because 18 months passed since the audit.")
    assert linked.evidence["reasoning_chain"] is True
    assert linked.evidence["chain_rule"] == "'because' with 18-month interval in one sentence"


# --- 60 / 61 words ---------------------------------------------------------------------------


def _needle_answer(words: int) -> str:
    head = "Project Crestfall achieved 0.003 arc-seconds"  # 5 words
    return head + " indeed" * (words - 5) + "."


@pytest.mark.parametrize(("words", "points"), [(59, 5), (60, 5), (61, 4), (62, 4)])
def test_concise_boundary_english(words: int, points: int) -> None:
    answer = _needle_answer(words)
    assert word_count(answer) == words
    assert grade(TASKS_BY_ID["LCB-001"], answer).value == points


@pytest.mark.parametrize(("cjk", "words", "points"), [(118, 60, 5), (119, 61, 4), (120, 61, 4)])
def test_concise_boundary_chinese(cjk: int, words: int, points: int) -> None:
    # "0.003" is one word; Chinese counts one word per two characters, rounded up.
    answer = "0.003角秒" + "的" * (cjk - 2)
    assert word_count(answer) == words
    assert grade(TASKS_BY_ID["LCB-001"], answer, "zh").value == points


# --- overlap 0.6 and 0.3 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "points"),
    [
        (Fraction(61, 100), 3),
        (Fraction(3, 5), 2),
        (Fraction(59, 100), 2),
        (Fraction(31, 100), 2),
        (Fraction(3, 10), 2),
        (Fraction(29, 100), 0),
    ],
)
def test_overlap_points_at_the_thresholds(ratio: Fraction, points: int) -> None:
    assert overlap_points(ratio) == points


def _text_task(gold: str) -> TaskSpec:
    """A needle whose gold is words, not a value: overlap decides partial credit."""
    return TaskSpec(
        "T-1",
        "needle",
        1,
        (Fact(gold, gold, 0.5),),
        {"en": "Which code words?", "zh": "Which code words?"},
        {"en": gold, "zh": gold},
        (Key("all words", gold),),
        topic=r"code",
    )


@pytest.mark.parametrize(
    ("gold", "answer", "points", "rule"),
    [
        ("amber basil cedar dune ember", "amber basil cedar dune ember", 5, "exact, concise"),
        ("amber basil cedar dune ember", "amber basil cedar dune", 3, "overlap > 0.6"),  # 4/5
        ("amber basil cedar dune ember", "amber basil cedar", 2, "overlap 0.3-0.6"),  # 3/5
        (
            "amber basil cedar dune ember fern glade heath",
            "amber basil cedar dune ember",
            3,
            "overlap > 0.6",
        ),  # 5/8
        ("a1 b1 c1 d1 e1 f1 g1 h1 i1 j1", "a1 b1 c1", 2, "overlap 0.3-0.6"),  # 3/10
        ("a1 b1 c1 d1 e1 f1 g1", "a1 b1", 0, "wrong or off-topic"),  # 2/7 = 0.286
        ("a1 b1 c1 d1 e1 f1 g1", "a1 b1 code", 1, "topic mentioned, wrong answer"),
        ("a1 b1 c1 d1 e1 f1 g1 h1 i1 j1 k1 l1 m1", "a1 b1 c1 d1", 2, "overlap 0.3-0.6"),  # 4/13
    ],
)
def test_overlap_boundary_on_a_task(gold: str, answer: str, points: int, rule: str) -> None:
    score = grade(_text_task(gold), answer)
    assert (score.value, score.evidence["rule"]) == (points, rule)


# --- levels and the floored total -------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "name"),
    [
        (100, "Excellent Retention"),
        (90, "Excellent Retention"),
        (89.99, "Strong Retention"),
        (75, "Strong Retention"),
        (74.99, "Functional Retention"),
        (60, "Functional Retention"),
        (59.99, "Partial Retention"),
        (40, "Partial Retention"),
        (39.99, "Limited Retention"),
        (20, "Limited Retention"),
        (19.99, "Severe Context Loss"),
        (0, "Severe Context Loss"),
    ],
)
def test_level_boundaries(total: float, name: str) -> None:
    assert level(total) == name


def _row(sample_id: str, task: str, value: float) -> ScoredRow:
    sample = {
        "id": sample_id,
        "task": task,
        "length": 4096,
        "language": "en",
        "meta": {"task_id": sample_id, "tier": 1, "depth": 0.5},
    }
    return ScoredRow(sample, 0, Generation("answer", "ok"), Score(value, 5.0))


def test_negative_raw_total_is_floored_and_kept() -> None:
    rows = [_row(f"LCB-{i:03d}", "reasoning", -5.0) for i in (4, 8)] + [
        _row("LCB-001", "needle", 4.0)
    ]
    summary = summarize_longctx(rows)
    assert summary["raw_points"] == -6.0
    assert summary["total"] == 0.0
    assert summary["level"] == "Severe Context Loss"


def test_level_follows_the_total_as_shown() -> None:
    # 16 full tasks and three multi_fact tasks with 2 of 3 facts: 80 + 3 x 10/3 = 90 points of 100,
    # summed in floats as 89.999999.
    rows = [_row(f"LCB-{i:03d}", "needle", 5.0) for i in range(1, 17)]
    rows += [_row(f"LCB-{i:03d}", "multi_fact", round(2 * 5 / 3, 6)) for i in range(17, 20)]
    rows.append(_row("LCB-020", "reasoning", 0.0))
    summary = summarize_longctx(rows)
    assert summary["total"] == 90.0
    assert summary["level"] == "Excellent Retention"


@pytest.mark.parametrize("separator", ["\n", ": ", ":\n", " "])
def test_a_value_opening_a_line_is_read_as_a_value(separator: str) -> None:
    # A number after a line that ends in a letter is no identifier ("abc94"): `$` in the label
    # and identifier patterns also matched before a newline, and this answer scored 1, not 5.
    answer = f"Orbital period{separator}94 minutes"
    assert grade(TASKS_BY_ID["LCB-003"], answer, "en").value == 5
