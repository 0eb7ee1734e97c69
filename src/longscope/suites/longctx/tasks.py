"""The 20 LongCtx tasks (seed 003), in English and Chinese, with their grading keys.

Regexes run on normalised text (see `longscope.metrics.normalize`): lower case, dates as ISO
(`2019-07-14`, month-year as `2025-03`), no thousands separators, units in one spelling (`°c`,
`arcsec`, `minutes`, `hours`, `tons`, `ms`, `ghz`). One regex serves both languages.

Two facts of the seed's table contradict their own expected answers and are corrected here (the
README's LongCtx section lists them too); `tests/suites/longctx/test_tasks.py` re-derives every
reasoning task's conclusion from its facts so that such a contradiction cannot come back:
- LCB-008: the seed delivers on October 20, 2025, 35 days after the September 15 PO, which is late,
  yet expects "on time". We deliver on October 10, 2025 (25 days, on time).
- LCB-016: the seed's reading, 138 N·m, lies inside 145 N·m ± 5% (137.75 to 152.25), yet it expects
  "out of spec, below the lower bound". We record 136 N·m (below 137.75).
"""

from __future__ import annotations

import re
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
    """A named pattern worth `points` when it matches the normalised answer."""

    name: str
    regex: str
    points: float = 1.0


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

    @property
    def tokens(self) -> int:
        return TIERS[self.tier]


def _n(number: str) -> str:
    """Regex for a number not embedded in a longer number, id or date."""
    escaped = re.escape(number)
    return rf"(?<![\d.\-]){escaped}(?![\d]|\.\d|-\d)"


_YES = r"\byes\b|是的"
_NO = r"\bno\b|不是"

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
        (Key("0.003", _n("0.003")),),
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
            Key("3 founding members", _n("3") + r"|\bthree\b|三名|三位", 5 / 3),
            Key("July 14, 2019", r"2019-07-14", 5 / 3),
            Key("$12 million", r"12\s*million|1200\s*万|12000000\b", 5 / 3),
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
        (Key("94", _n("94")),),
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
            Key("18-month interval", r"18[\s-]*months?|18\s*个月|eighteen months|十八个月"),
            Key("last audit date", r"2024-03(-01)?"),
        ),
        correct=_YES + r"|\boverdue\b|已经?逾期|逾期了|超期",
        wrong=_NO + r"|not overdue|not yet due|未逾期|没有逾期|不逾期|没有超期",
        check={
            "kind": "interval_months",
            "start": "2024-03-01",
            "months": 18,
            "as_of": "2025-11-01",
            "expect": True,
        },
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
        (Key("48", _n("48")),),
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
            Key("312°C", _n("312"), 5 / 3),
            Key("1987", _n("1987"), 5 / 3),
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
        (Key("2.4", _n("2.4")),),
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
            Key("30 days", r"30\s*(calendar\s*)?days?|30\s*天|thirty days|三十天"),
            Key("PO date", r"2025-09-15", 0.5),
            Key("delivery date", r"2025-10-10", 0.5),
        ),
        correct=_YES + r"|on[ -]time|按时|准时|及时",
        wrong=_NO + r"|\blate\b|not on[ -]time|overdue|延迟|逾期|没有按时|未按时|不按时",
        check={
            "kind": "deadline_days",
            "start": "2025-09-15",
            "days": 30,
            "event": "2025-10-10",
            "expect": True,
        },
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
        (Key("72", _n("72") + r"|seventy-two|七十二"),),
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
            Key("6 layers", _n("6") + r"|\bsix\b|六层", 5 / 3),
            Key("April 3, 2023", r"2023-04-03", 5 / 3),
            Key("200 ms", _n("200"), 5 / 3),
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
        (Key("8400", _n("8400")),),
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
            "en": "No, not in compliance: SOP-14 requires at least 4, the night crew has 3",
            "zh": "不符合：SOP-14要求至少4人，而夜班只有3人",
        },
        (
            Key("minimum of 4", _n("4") + r"|\bfour\b|四人|4人"),
            Key("crew of 3", _n("3") + r"|\bthree\b|三人|3人"),
        ),
        correct=_NO
        + r"|not in compliance|non-?complian|not compliant|does not comply|不符合|不合规",
        wrong=_YES + r"|\bis in compliance|\bcompliant\b|\bcomplies\b|符合|合规",
        check={"kind": "minimum", "required": 4, "actual": 3, "expect": False},
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
        (Key("85", _n("85")),),
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
            Key("144 stations", _n("144"), 5 / 3),
            Key("every 6 minutes", _n("6") + r"\s*minutes|\bsix minutes", 5 / 3),
            Key("2 facilities", _n("2") + r"|\btwo\b|两个|两处", 5 / 3),
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
        (Key("1742", _n("1742")),),
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
            Key("136", _n("136"), 0.5),
            Key("145", _n("145"), 0.5),
            Key("5% tolerance", r"5\s*%|±\s*5|5 percent|百分之五", 0.5),
            Key("below lower bound", r"137\.75|lower (bound|limit)|minimum|下限|低于", 0.5),
        ),
        correct=_NO + r"|not within|out of spec|outside|\bbelow\b|不在|超出|低于|不符合|不合格",
        wrong=_YES + r"|\bwithin (the )?spec|\bis within|在规格(范围)?内|符合规格|合格",
        check={"kind": "tolerance", "nominal": 145, "percent": 5, "reading": 136, "expect": False},
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
        (Key("2032-08-08", r"2032-08-08"),),
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
            Key("March 2025", r"2025-03"),
            Key("coastal resilience", r"coastal|infrastructure resilience|沿海|海岸"),
            Key("2.4 billion", r"2\.4\s*billion|24\s*亿|2400000000\b"),
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
        (Key("2034-12-01", r"2034-12-01"),),
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
                r"2014|older than 10|(?<![\d.])1[01]\+?\s*years|ten years|10\s*年|十年",
            ),
            Key("refurbishment rule", r"(does not|doesn't|not) reset|不会?重置"),
        ),
        correct=_YES
        + r"|must be retired|should be retired|needs to be retired|必须退役|需要退役|应当?退役",
        wrong=_NO
        + r"|not (need to |have to )?be retired|does not need|need not|不需要退役|无需退役|不必退役",
        check={
            "kind": "age_years",
            "made": "2014-06-12",
            "years": 10,
            "as_of": "2026-04-30",
            "expect": True,
        },
    ),
)

TASKS_BY_ID: dict[str, TaskSpec] = {task.id: task for task in TASKS}
