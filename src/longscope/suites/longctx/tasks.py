"""The 20 LongCtx tasks (docs/benchmarks/longctx.md), in English and Chinese, with their grading keys.

A key names what a grader looks for. A key with a `value` ("0.003 arc-seconds", "July 14, 2019")
matches when the answer states that value, compared as a number or date by
`longscope.text.quantities` ("0.0030 arcsec", "3 milli-arcseconds" and "0.003角秒" all state
"0.003 arc-seconds"). A key without one is a regex over the answer's canonical text (lower case,
values in one spelling: "2028年初" -> "2028 初", "ten years" -> "10 year", "March 1, 2024" ->
"2024-03-01"). One key serves both languages.

Two facts of the seed's table contradict their own expected answers and are corrected here (the
README's LongCtx section lists them too); `tests/suites/longctx/test_tasks.py` re-derives every
reasoning task's conclusion from its facts so that such a contradiction cannot come back:
- LCB-008: the seed delivers on October 20, 2025, 35 days after the September 15 PO, which is late,
  yet expects "on time". We deliver on October 10, 2025 (25 days, on time).
- LCB-016: the seed's reading, 138 N·m, lies inside 145 N·m ± 5% (137.75 to 152.25), yet it expects
  "out of spec, below the lower bound". We record 136 N·m (below 137.75).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TaskType = Literal["needle", "position_bias", "multi_fact", "reasoning"]
TASK_TYPES: tuple[TaskType, ...] = ("needle", "position_bias", "multi_fact", "reasoning")
TIERS: dict[int, int] = {1: 4096, 2: 16384, 3: 32768, 4: 65536, 5: 131072}


@dataclass(frozen=True)
class Fact:
    en: str
    zh: str
    depth: float


@dataclass(frozen=True)
class Key:
    """A named fact worth `points` when the answer states its `value` or matches its `regex`."""

    name: str
    regex: str = ""
    """A pattern over the answer's canonical text (for facts that are words, not values)."""
    points: float = 1.0
    value: str = ""
    """A number or date the answer must state, compared as a value ("8,400 metric tons")."""


def _v(name: str, value: str, points: float = 1.0) -> Key:
    """Return a key that matches when the answer states `value` (as a number or date)."""
    return Key(name, points=points, value=value)


@dataclass(frozen=True)
class TaskSpec:
    id: str
    type: TaskType
    tier: int
    facts: tuple[Fact, ...]
    question: dict[str, str]
    answer: dict[str, str]
    keys: tuple[Key, ...]
    """needle: the answer (all must match); multi_fact: one per fact; reasoning: the citations."""
    topic: str = ""
    """needle: words that show the model found the topic (1 point when the answer is wrong)."""
    correct: str = ""
    """reasoning: the expected conclusion."""
    wrong: str = ""
    """reasoning: the opposite conclusion (-5 for the task)."""
    check: dict[str, Any] = field(default_factory=dict)
    """reasoning: the facts as numbers, re-derived by a test."""
    derived: tuple[Key, ...] = ()
    """reasoning: values no fact states but the reasoning produces (a due date, an elapsed time, a
    bound); stating one is an explicit reasoning chain."""

    @property
    def tokens(self) -> int:
        return TIERS[self.tier]


# A yes/no conclusion: the answer's first word, or "yes"/"no" followed by punctuation ("so yes,").
# Neither matches inside a phrase ("no audit since ...") or in an echoed "是否".
_YES = (
    r"^\W*(?:yes\b|是(?![否不]))|\byes(?=\s*[,.!;:])"
    r"|(?<![否不])是(?=\s*[,.!;:。，！；])|(?<!不)是的"
)
_NO = (
    r"^\W*(?:no\b|否(?!则)|不是|不[,.。，])|\bno(?=\s*[,.!;:])"
    r"|(?<!是)否(?=\s*[,.!;:。，！；])|不是(?=\s*[,.!;:。，！；])"
)

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "LCB-001",
        "needle",
        1,
        (
            Fact(
                "Project Crestfall achieved a resolution of 0.003 arc-seconds in its phase-two calibration.",
                "Crestfall项目在第二阶段校准中达到了0.003角秒的分辨率。",
                0.50,
            ),
        ),
        {
            "en": "What resolution did Project Crestfall achieve in its phase-two calibration?",
            "zh": "Crestfall项目在第二阶段校准中达到了多高的分辨率？",
        },
        {"en": "0.003 arc-seconds", "zh": "0.003角秒"},
        (_v("0.003 arc-seconds", "0.003 arc-seconds"),),
        topic=r"crestfall|resolution|calibration|分辨率|校准",
    ),
    TaskSpec(
        "LCB-002",
        "multi_fact",
        1,
        (
            Fact(
                "The Aurora Initiative had 3 founding members.", "Aurora计划有3名创始成员。", 0.20
            ),
            Fact(
                "The Aurora Initiative was established on July 14, 2019.",
                "Aurora计划成立于2019年7月14日。",
                0.60,
            ),
            Fact(
                "The initial funding of the Aurora Initiative was $12 million.",
                "Aurora计划的初始资金为1200万美元。",
                0.85,
            ),
        ),
        {
            "en": "How many founding members did the Aurora Initiative have, when was it established, "
            "and what was its initial funding?",
            "zh": "Aurora计划有多少名创始成员？它何时成立？初始资金是多少？",
        },
        {"en": "3 / July 14, 2019 / $12 million", "zh": "3名 / 2019年7月14日 / 1200万美元"},
        (
            _v("3 founding members", "3", 5 / 3),
            _v("July 14, 2019", "July 14, 2019", 5 / 3),
            _v("$12 million", "$12 million", 5 / 3),
        ),
    ),
    TaskSpec(
        "LCB-003",
        "position_bias",
        1,
        (
            Fact(
                "The Helios-7 satellite completes one full orbit in 94 minutes.",
                "Helios-7卫星绕行一整圈轨道需要94分钟。",
                0.10,
            ),
        ),
        {
            "en": "How long does the Helios-7 satellite take to complete one full orbit?",
            "zh": "Helios-7卫星绕行一整圈轨道需要多长时间？",
        },
        {"en": "94 minutes", "zh": "94分钟"},
        (_v("94 minutes", "94 minutes"),),
        topic=r"helios|orbit|satellite|卫星|轨道",
    ),
    TaskSpec(
        "LCB-004",
        "reasoning",
        1,
        (
            Fact(
                "Policy 3.2 requires a safety audit of every unit at least once every 18 months.",
                "第3.2号政策要求每台设备至少每18个月进行一次安全审核。",
                0.15,
            ),
            Fact(
                "Unit Alpha-12 had its last safety audit on March 1, 2024.",
                "Alpha-12号设备上一次安全审核是在2024年3月1日。",
                0.50,
            ),
            Fact("Today is November 1, 2025.", "今天是2025年11月1日。", 0.80),
        ),
        {
            "en": "Is Unit Alpha-12 overdue for a safety audit? Briefly explain.",
            "zh": "Alpha-12号设备的安全审核是否已经逾期？请简要说明。",
        },
        {
            "en": "Yes, overdue: the 18-month interval from March 1, 2024 ended September 1, 2025",
            "zh": "是的，已逾期：自2024年3月1日起的18个月期限已于2025年9月1日届满",
        },
        (
            _v("18-month interval", "18 months"),
            # "last audited in March 2024" cites the date as well as "March 1, 2024".
            _v("last audit date", "March 2024"),
        ),
        correct=_YES
        + r"|(?<!not )(?<!n't )(?<!never )\boverdue\b|past due"
        + r"|(?<!是否已经)(?<!是否)(?<![没未不有否])逾期|(?<![没未不有否])超期",
        wrong=_NO + r"|not (yet )?(overdue|due)\b|未逾期|没有逾期|不逾期|尚未到期|没有超期|未超期",
        check={
            "kind": "interval_months",
            "start": "2024-03-01",
            "months": 18,
            "as_of": "2025-11-01",
            "expect": True,
        },
        derived=(
            _v("due September 2025", "September 2025"),
            _v("20 months elapsed", "20 months"),
            _v("2 months overdue", "2 months"),
        ),
    ),
    TaskSpec(
        "LCB-005",
        "needle",
        2,
        (
            Fact(
                "The Meridian Protocol requires all field reports to be submitted within 48 hours of the "
                "observed event.",
                "Meridian协议要求所有现场报告必须在观察到事件后的48小时内提交。",
                0.30,
            ),
        ),
        {
            "en": "What is the submission deadline for field reports under the Meridian Protocol?",
            "zh": "根据Meridian协议，现场报告的提交期限是多久？",
        },
        {"en": "48 hours", "zh": "48小时"},
        (_v("48 hours", "48 hours"),),
        topic=r"meridian|field report|deadline|submi|现场报告|提交",
    ),
    TaskSpec(
        "LCB-006",
        "multi_fact",
        2,
        (
            Fact("Compound XR-7 has a boiling point of 312°C.", "XR-7化合物的沸点为312°C。", 0.10),
            Fact(
                "Compound XR-7 was first synthesized in 1987.", "XR-7化合物于1987年首次合成。", 0.55
            ),
            Fact(
                "Compound XR-7 is classified as a Group II hazardous material.",
                "XR-7化合物被列为第II组危险物质。",
                0.80,
            ),
        ),
        {
            "en": "What are the boiling point, the year of synthesis and the hazard classification of "
            "Compound XR-7?",
            "zh": "XR-7化合物的沸点、合成年份和危险等级分别是什么？",
        },
        {"en": "312°C / 1987 / Group II", "zh": "312°C / 1987年 / 第II组"},
        (
            _v("312°C", "312°C", 5 / 3),
            _v("1987", "1987", 5 / 3),
            Key("Group II", r"group\s*(ii|2)\b|第?(ii|二)\s*(组|类)", 5 / 3),
        ),
    ),
    TaskSpec(
        "LCB-007",
        "position_bias",
        2,
        (
            Fact(
                "The operational frequency of the Nexus relay is 2.4 GHz.",
                "Nexus中继器的工作频率为2.4 GHz。",
                0.50,
            ),
        ),
        {
            "en": "What is the operational frequency of the Nexus relay?",
            "zh": "Nexus中继器的工作频率是多少？",
        },
        {"en": "2.4 GHz", "zh": "2.4 GHz"},
        (_v("2.4 GHz", "2.4 GHz"),),
        topic=r"nexus|relay|frequency|中继|频率",
    ),
    TaskSpec(
        "LCB-008",
        "reasoning",
        2,
        (
            Fact(
                "Contract Section 4.1 requires delivery within 30 days of the purchase order date.",
                "合同第4.1条要求在采购订单日期后30天内完成交货。",
                0.20,
            ),
            Fact(
                "Purchase order #4472 was issued on September 15, 2025.",
                "第4472号采购订单于2025年9月15日发出。",
                0.60,
            ),
            # Corrected: the seed says October 20, 2025 (35 days, late) but expects "on time".
            Fact(
                "The goods under PO #4472 were delivered on October 10, 2025.",
                "第4472号采购订单项下的货物于2025年10月10日交付。",
                0.75,
            ),
        ),
        {
            "en": "Was delivery under PO #4472 made on time? Briefly explain.",
            "zh": "第4472号采购订单的交货是否按时？请简要说明。",
        },
        {
            "en": "Yes, on time: delivered October 10, 2025, 25 days after the September 15, 2025 PO, "
            "within the 30 days of Section 4.1",
            "zh": "是的，按时：2025年10月10日交付，距2025年9月15日下单25天，在30天期限内",
        },
        (
            _v("30 days", "30 days"),
            _v("PO date", "September 15, 2025", 0.5),
            _v("delivery date", "October 10, 2025", 0.5),
        ),
        correct=_YES
        + r"|(?<!not )on[ -]time|(?<!not )\bin time\b|(?:not|n't|never) late|\bearly\b"
        + r"|(?<![没未不有否])(?:按时|准时|及时)|提前",
        wrong=_NO
        + r"|(?<!not )(?<!n't )(?<!never )\blate\b|not (delivered )?on[ -]time|overdue|missed"
        + r"|延迟|延误|逾期|没有按时|未按时|不按时|晚了",
        check={
            "kind": "deadline_days",
            "start": "2025-09-15",
            "days": 30,
            "event": "2025-10-10",
            "expect": True,
        },
        derived=(
            _v("25 days elapsed", "25 days"),
            _v("due October 15, 2025", "October 15, 2025"),
            _v("5 days early", "5 days"),
        ),
    ),
    TaskSpec(
        "LCB-009",
        "needle",
        3,
        (
            Fact(
                "The Thornwick Array uses exactly 72 resonance chambers in its primary configuration.",
                "Thornwick阵列在其主要配置中恰好使用72个共振腔。",
                0.40,
            ),
        ),
        {
            "en": "How many resonance chambers does the Thornwick Array use?",
            "zh": "Thornwick阵列使用多少个共振腔？",
        },
        {"en": "72", "zh": "72个"},
        (_v("72", "72"),),
        topic=r"thornwick|resonance|chamber|共振",
    ),
    TaskSpec(
        "LCB-010",
        "multi_fact",
        3,
        (
            Fact(
                "The Kepler-9 project uses a 6-layer neural architecture.",
                "Kepler-9项目采用6层神经网络架构。",
                0.15,
            ),
            Fact(
                "The Kepler-9 project was deployed on April 3, 2023.",
                "Kepler-9项目于2023年4月3日部署。",
                0.45,
            ),
            Fact(
                "The Kepler-9 project has a latency target of 200 ms.",
                "Kepler-9项目的延迟目标为200毫秒。",
                0.75,
            ),
        ),
        {
            "en": "How many layers does the Kepler-9 neural architecture have, when was it deployed, and "
            "what is its latency target?",
            "zh": "Kepler-9项目的神经网络架构有多少层？何时部署？延迟目标是多少？",
        },
        {"en": "6 layers / April 3, 2023 / 200 ms", "zh": "6层 / 2023年4月3日 / 200毫秒"},
        (
            _v("6 layers", "6", 5 / 3),
            _v("April 3, 2023", "April 3, 2023", 5 / 3),
            _v("200 ms", "200 ms", 5 / 3),
        ),
    ),
    TaskSpec(
        "LCB-011",
        "position_bias",
        3,
        (
            Fact(
                "The Cascade Bridge was constructed using 8,400 metric tons of structural steel.",
                "Cascade大桥的建造使用了8,400公吨结构钢。",
                0.90,
            ),
        ),
        {
            "en": "How much structural steel was used in the Cascade Bridge?",
            "zh": "Cascade大桥使用了多少结构钢？",
        },
        {"en": "8,400 metric tons", "zh": "8,400公吨"},
        (_v("8,400 metric tons", "8,400 metric tons"),),
        topic=r"cascade|bridge|steel|大桥|钢",
    ),
    TaskSpec(
        "LCB-012",
        "reasoning",
        3,
        (
            Fact(
                "SOP-14 requires a minimum crew of 4 personnel for all night operations.",
                "SOP-14规定所有夜间作业的最低人员配置为4人。",
                0.10,
            ),
            Fact("The current night crew consists of 3 personnel.", "当前夜班人员为3人。", 0.40),
            Fact("Night operations are scheduled for tonight.", "今晚安排了夜间作业。", 0.70),
        ),
        {
            "en": "Is tonight's crew in compliance with SOP-14? Briefly explain.",
            "zh": "今晚的夜班人员配置是否符合SOP-14？请简要说明。",
        },
        {
            "en": "No, not in compliance: SOP-14 requires at least 4, "
            "but the night crew has only 3",
            "zh": "不符合：SOP-14要求至少4人，而夜班只有3人",
        },
        (
            _v("minimum of 4", "4"),
            _v("crew of 3", "3"),
        ),
        correct=_NO
        + r"|not in compliance|non-?complian|not compliant"
        + r"|(?:does not|doesn't|fails to) (?:comply|meet)"
        + r"|understaffed|不符合|不合规|未达到|没有达到|不满足|不达标",
        wrong=_YES
        + r"|(?<!not )\bis in compliance|(?<!not )(?<!non-)\bcompliant\b|(?<!not )\bcomplies\b"
        + r"|(?<![不否没未])符合|(?<![不否没未])合规",
        check={"kind": "minimum", "required": 4, "actual": 3, "expect": False},
        derived=(
            Key(
                "one short",
                r"\b(?:1|one) (?:person |crew member |member |worker |people )?"
                r"(?:short|fewer|less|too few)|short by (?:1|one)\b|(?:少|差|缺)\s*1",
            ),
        ),
    ),
    TaskSpec(
        "LCB-013",
        "needle",
        4,
        (
            Fact(
                "The Veridian compound requires a minimum curing temperature of 85 degrees Celsius.",
                "Veridian化合物要求的最低固化温度为85摄氏度。",
                0.20,
            ),
        ),
        {
            "en": "What is the minimum curing temperature for the Veridian compound?",
            "zh": "Veridian化合物的最低固化温度是多少？",
        },
        {"en": "85 degrees Celsius", "zh": "85摄氏度"},
        (_v("85 degrees Celsius", "85 degrees Celsius"),),
        topic=r"veridian|curing|temperature|固化|温度",
    ),
    TaskSpec(
        "LCB-014",
        "multi_fact",
        4,
        (
            Fact(
                "The Sentinel Array consists of 144 ground-based monitoring stations.",
                "Sentinel阵列由144个地面监测站组成。",
                0.10,
            ),
            Fact(
                "Each station of the Sentinel Array transmits data every 6 minutes.",
                "Sentinel阵列的每个站点每6分钟传输一次数据。",
                0.45,
            ),
            Fact(
                "Sentinel Array data is archived in 2 geographically distinct archive facilities.",
                "Sentinel阵列的数据存档在2个地理位置不同的存档设施中。",
                0.85,
            ),
        ),
        {
            "en": "How many monitoring stations does the Sentinel Array have, how often do they transmit "
            "data, and how many archive facilities are there?",
            "zh": "Sentinel阵列有多少个监测站？多久传输一次数据？有几个存档设施？",
        },
        {"en": "144 / every 6 minutes / 2 facilities", "zh": "144个 / 每6分钟 / 2个设施"},
        (
            _v("144 stations", "144", 5 / 3),
            _v("every 6 minutes", "6 minutes", 5 / 3),
            _v("2 facilities", "2", 5 / 3),
        ),
    ),
    TaskSpec(
        "LCB-015",
        "position_bias",
        4,
        (
            Fact(
                "The Vega-X compound has a melting point of 1742 degrees Celsius.",
                "Vega-X化合物的熔点为1742摄氏度。",
                0.10,
            ),
        ),
        {
            "en": "What is the melting point of the Vega-X compound?",
            "zh": "Vega-X化合物的熔点是多少？",
        },
        {"en": "1742 degrees Celsius", "zh": "1742摄氏度"},
        (_v("1742 degrees Celsius", "1742 degrees Celsius"),),
        topic=r"vega|melting|熔点",
    ),
    TaskSpec(
        "LCB-016",
        "reasoning",
        4,
        (
            Fact(
                "Specification SC-3 requires bolts to be torqued to 145 N·m with a tolerance of ±5%.",
                "SC-3规范要求螺栓拧紧扭矩为145 N·m，公差为±5%。",
                0.10,
            ),
            # Corrected: the seed's 138 N·m is inside 137.75-152.25 yet it expects "below lower bound".
            Fact(
                "A torque reading of 136 N·m was recorded on assembly line 4.",
                "4号装配线记录到的扭矩读数为136 N·m。",
                0.45,
            ),
            Fact(
                "Specification SC-3 applies to all bolts on assembly line 4.",
                "SC-3规范适用于4号装配线上的所有螺栓。",
                0.75,
            ),
        ),
        {
            "en": "Was the torque reading on assembly line 4 within spec? Briefly explain.",
            "zh": "4号装配线的扭矩读数是否在规格范围内？请简要说明。",
        },
        {
            "en": "No, out of spec: 136 N·m is below the lower bound 137.75 N·m of 145 N·m ± 5%",
            "zh": "不在规格内：136 N·m低于145 N·m ± 5%的下限137.75 N·m",
        },
        (
            _v("136", "136 N·m", 0.5),
            _v("145", "145 N·m", 0.5),
            _v("5% tolerance", "5%", 0.5),
            Key("below lower bound", r"137\.75|lower (bound|limit)|minimum|下限|低于|最低", 0.5),
        ),
        correct=_NO
        + r"|not within|out of (?:spec|tolerance)|outside|(?<!not )\bbelow\b|under the (?:lower|min)"
        + r"|不在|超出|超差|低于|不符合|不合格",
        wrong=_YES
        + r"|(?<!not )\bwithin (?:the )?(?:spec|tolerance|range|limits)|(?<!not )\bis within"
        + r"|(?<!not )\bin spec\b"
        + r"|(?<![不否没未])在规格(?:范围)?内|(?<![不否])符合规格|(?<![不否])合格",
        check={"kind": "tolerance", "nominal": 145, "percent": 5, "reading": 136, "expect": False},
        derived=(
            _v("lower bound 137.75", "137.75"),
            _v("upper bound 152.25", "152.25"),
            _v("9 N·m under nominal", "9 N·m"),
            _v("6.2% under nominal", "6.2%"),
            _v("1.75 N·m under the bound", "1.75"),
        ),
    ),
    TaskSpec(
        "LCB-017",
        "needle",
        5,
        (
            Fact(
                "The Quintessa platform reached commercial readiness on August 8, 2032.",
                "Quintessa平台于2032年8月8日达到商业就绪状态。",
                0.50,
            ),
        ),
        {
            "en": "On what date did the Quintessa platform reach commercial readiness?",
            "zh": "Quintessa平台在哪一天达到商业就绪状态？",
        },
        {"en": "August 8, 2032", "zh": "2032年8月8日"},
        (_v("August 8, 2032", "August 8, 2032"),),
        topic=r"quintessa|commercial|readiness|商业",
    ),
    TaskSpec(
        "LCB-018",
        "multi_fact",
        5,
        (
            Fact(
                "Strategy Sigma was proposed by Mei Wong in March 2025.",
                "Sigma战略由Mei Wong于2025年3月提出。",
                0.05,
            ),
            Fact(
                "Strategy Sigma targets infrastructure resilience in coastal regions.",
                "Sigma战略的目标是提升沿海地区基础设施的韧性。",
                0.40,
            ),
            Fact(
                "The 2027 fiscal allocation for Strategy Sigma is 2.4 billion.",
                "Sigma战略2027财年的拨款为24亿。",
                0.70,
            ),
            Fact(
                "Strategy Sigma was renamed Strategy Sigma-Plus in early 2028.",
                "Sigma战略于2028年初更名为Sigma-Plus战略。",
                0.95,
            ),
        ),
        {
            "en": "Who proposed Strategy Sigma and when, what domain does it target, what is its 2027 "
            "fiscal allocation, and when was it renamed?",
            "zh": "Sigma战略由谁在何时提出？它针对什么领域？2027财年的拨款是多少？它何时更名？",
        },
        {
            "en": "Mei Wong / March 2025 / coastal resilience / 2.4 billion / early 2028",
            "zh": "Mei Wong / 2025年3月 / 沿海基础设施韧性 / 24亿 / 2028年初",
        },
        (
            Key("Mei Wong", r"mei\s*wong"),
            _v("March 2025", "March 2025"),
            Key("coastal resilience", r"coastal|infrastructure resilience|沿海|海岸"),
            _v("2.4 billion", "2.4 billion"),
            Key("early 2028", r"early\s*2028|(beginning|start) of 2028|2028\s*年?\s*初"),
        ),
    ),
    TaskSpec(
        "LCB-019",
        "position_bias",
        5,
        (
            Fact(
                "The Aurora-9 prototype completed its final endurance test on December 1, 2034.",
                "Aurora-9原型机于2034年12月1日完成了最后一次耐久性测试。",
                0.95,
            ),
        ),
        {
            "en": "On what date did the Aurora-9 prototype complete its final endurance test?",
            "zh": "Aurora-9原型机在哪一天完成了最后一次耐久性测试？",
        },
        {"en": "December 1, 2034", "zh": "2034年12月1日"},
        (_v("December 1, 2034", "December 1, 2034"),),
        topic=r"aurora|endurance|prototype|原型|耐久",
    ),
    TaskSpec(
        "LCB-020",
        "reasoning",
        5,
        (
            Fact(
                "Policy 8.1 requires the retirement of any device older than 10 years.",
                "第8.1号政策要求任何使用年限超过10年的设备必须退役。",
                0.05,
            ),
            Fact(
                "Unit RGV-441 was manufactured on June 12, 2014.",
                "RGV-441号设备的制造日期为2014年6月12日。",
                0.30,
            ),
            Fact(
                "Unit RGV-441 was last refurbished on November 4, 2024.",
                "RGV-441号设备最近一次翻新是在2024年11月4日。",
                0.55,
            ),
            Fact(
                "Under Policy 8.1, refurbishment does not reset a device's manufacturing date.",
                "根据第8.1号政策，翻新不会重置设备的制造日期。",
                0.80,
            ),
        ),
        {
            "en": "As of April 30, 2026, must Unit RGV-441 be retired under Policy 8.1? Briefly explain.",
            "zh": "截至2026年4月30日，根据第8.1号政策，RGV-441号设备是否必须退役？请简要说明。",
        },
        {
            "en": "Yes, it must be retired: made June 12, 2014, it is over 10 years old, and "
            "refurbishment does not reset the manufacturing date",
            "zh": "是的，必须退役：2014年6月12日制造，已超过10年，翻新不会重置制造日期",
        },
        (
            Key(
                "2014 / over 10 years",
                r"\b2014\b|older than 10\b|(?<![\d.])1[01](?:\.\d+)?\+? year|more than 10 year",
            ),
            Key(
                "refurbishment rule",
                r"(?:does not|doesn't|did not|didn't|not|never|cannot|can't|won't) (?:reset|restart)"
                r"|不会?重置|不能重置|并不重置|不重新计算",
            ),
        ),
        correct=_YES
        + r"|(?:must|should|needs to|has to|have to|is required to) be retired|must retire"
        + r"|(?<![否不])(?:必须|需要|应当?|应该|须)退役",
        wrong=_NO
        + r"|(?:not|n't) (?:need to |have to |required to )?be retired|need not|no need"
        + r"|不需要退役|无需退役|不必退役|不用退役|不应退役|不须退役",
        check={
            "kind": "age_years",
            "made": "2014-06-12",
            "years": 10,
            "as_of": "2026-04-30",
            "expect": True,
        },
        derived=(
            _v("ten-year mark June 2024", "June 2024"),
            Key(
                "age 11-12 years",
                r"(?<![\d.])11(?:\.\d+)? year|(?:almost|nearly|about|approximately|roughly|close to)"
                r" 12 year|近 ?12 year",
            ),
        ),
    ),
)

TASKS_BY_ID: dict[str, TaskSpec] = {task.id: task for task in TASKS}
