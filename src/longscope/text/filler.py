"""Seeded haystack prose: generic technical writing that never answers a benchmark question.

The text comes only from the templates and word lists below and `random.Random(seed)`, so the same
seed gives byte-identical text on any machine. It contains no digits and no proper names, so it can
never hold a number, date or name that a needle asks for.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

_EN_SLOTS: dict[str, tuple[str, ...]] = {
    "team": (
        "procurement office",
        "quality assurance group",
        "facilities team",
        "compliance unit",
        "operations desk",
        "records management office",
        "vendor management team",
        "internal audit team",
        "maintenance planning group",
        "logistics coordination cell",
        "document control office",
        "risk committee",
        "inspection crew",
        "supplier development team",
        "contracts office",
    ),
    "artifact": (
        "calibration certificate",
        "risk matrix",
        "audit schedule",
        "purchase requisition",
        "inspection checklist",
        "maintenance log",
        "change request",
        "supplier scorecard",
        "corrective action report",
        "work order",
        "inventory reconciliation",
        "training register",
        "asset register",
        "approval memo",
        "nonconformance record",
        "shipping manifest",
        "service level summary",
        "escalation matrix",
        "deviation notice",
        "control plan",
    ),
    "verb": (
        "reviews",
        "updates",
        "archives",
        "circulates",
        "cross-checks",
        "approves",
        "reconciles",
        "revises",
        "validates",
        "consolidates",
        "signs off on",
        "files",
        "annotates",
        "audits",
    ),
    "event": (
        "the quarterly review",
        "the next planning cycle",
        "the supplier meeting",
        "the monthly close",
        "the handover to operations",
        "the internal inspection",
        "the budget consolidation",
        "the steering committee session",
        "the annual recertification",
        "the shift changeover",
        "the vendor onboarding",
        "the site walkthrough",
    ),
    "adj": (
        "routine",
        "standard",
        "preliminary",
        "consolidated",
        "revised",
        "provisional",
        "detailed",
        "summary",
        "periodic",
        "supplementary",
        "interim",
        "baseline",
    ),
    "quality": (
        "traceable",
        "complete",
        "consistent",
        "legible",
        "current",
        "properly referenced",
        "signed by the responsible owner",
        "aligned with the master template",
        "free of open comments",
    ),
    "concern": (
        "duplicate entries",
        "missing signatures",
        "outdated references",
        "unclear ownership",
        "inconsistent units",
        "late submissions",
        "unapproved deviations",
        "ambiguous wording",
    ),
    "place": (
        "the shared repository",
        "the document management system",
        "the central register",
        "the project workspace",
        "the controlled archive",
        "the team folder",
    ),
}

_EN_TEMPLATES: tuple[str, ...] = (
    "The {team} {verb} the {adj} {artifact} before {event}.",
    "Each {artifact} is kept in {place} so that every revision remains {quality}.",
    "During {event}, the {team} checks whether the {artifact} is {quality}.",
    "A {adj} {artifact} is prepared whenever the {team} detects {concern}.",
    "Reviewers are asked to flag {concern} in the {artifact} and to route them to the {team}.",
    "The {team} keeps the {artifact} {quality} and {verb} it after {event}.",
    "If the {artifact} shows {concern}, the {team} opens a {adj} {artifact2}.",
    "Before {event}, owners confirm that the {artifact} and the {artifact2} are {quality}.",
    "The {adj} {artifact} links each open item to the {artifact2} maintained by the {team}.",
    "Copies of the {artifact} are stored in {place}, and superseded versions are withdrawn.",
    "The {team} {verb} the {artifact2} once the {adj} {artifact} has been accepted.",
    "Sampling of the {artifact} focuses on {concern} rather than on formatting details.",
    "Where {concern} persist, the {team} escalates the {artifact} to the {team2}.",
    "The {artifact} template asks for a short rationale, an owner and a review date.",
    "Lessons from {event} are added to the {adj} {artifact} by the {team}.",
    "The {team2} relies on the {artifact} to plan the work that follows {event}.",
    "No {artifact} is closed until the {team} has confirmed that it is {quality}.",
    "Guidance for the {artifact} is published in {place} and revised after {event}.",
)

_ZH_SLOTS: dict[str, tuple[str, ...]] = {
    "team": (
        "采购部门",
        "质量保证小组",
        "设施管理团队",
        "合规部门",
        "运营值班组",
        "档案管理办公室",
        "供应商管理团队",
        "内部审计组",
        "维护计划小组",
        "物流协调组",
        "文件控制办公室",
        "风险委员会",
        "检验小组",
        "合同管理部门",
    ),
    "artifact": (
        "校准证书",
        "风险矩阵",
        "审核计划",
        "采购申请单",
        "检查清单",
        "维护日志",
        "变更申请",
        "供应商评分表",
        "纠正措施报告",
        "工作单",
        "库存核对表",
        "培训登记表",
        "资产登记册",
        "审批备忘录",
        "不合格记录",
        "发货清单",
        "服务水平摘要",
        "升级矩阵",
        "偏差通知",
        "控制计划",
    ),
    "verb": (
        "审阅",
        "更新",
        "归档",
        "分发",
        "复核",
        "批准",
        "核对",
        "修订",
        "验证",
        "汇总",
        "签署",
    ),
    "event": (
        "季度评审",
        "下一个计划周期",
        "供应商会议",
        "月度结账",
        "移交运营",
        "内部检查",
        "预算汇总",
        "指导委员会会议",
        "年度复审",
        "交接班",
        "供应商准入",
        "现场巡查",
    ),
    "adj": (
        "例行的",
        "标准的",
        "初步的",
        "汇总的",
        "修订后的",
        "临时的",
        "详细的",
        "定期的",
        "补充的",
    ),
    "quality": ("可追溯", "完整", "前后一致", "清晰可读", "保持最新", "引用规范", "已由负责人签字"),
    "concern": (
        "重复条目",
        "缺少签字",
        "引用过时",
        "责任不清",
        "单位不一致",
        "提交延迟",
        "未经批准的偏差",
    ),
    "place": ("共享资料库", "文件管理系统", "中央登记册", "项目工作区", "受控档案室", "团队文件夹"),
}

_ZH_TEMPLATES: tuple[str, ...] = (
    "{team}在{event}之前{verb}{adj}{artifact}。",
    "每一份{artifact}都保存在{place}中，以确保每个版本都{quality}。",
    "在{event}期间，{team}检查{artifact}是否{quality}。",
    "当{team}发现{concern}时，会准备一份{adj}{artifact}。",
    "审阅人需要标出{artifact}中的{concern}，并转交给{team}。",
    "{team}负责让{artifact}{quality}，并在{event}之后{verb}它。",
    "如果{artifact}出现{concern}，{team}会另开一份{adj}{artifact2}。",
    "在{event}之前，负责人确认{artifact}和{artifact2}都{quality}。",
    "{adj}{artifact}把每个未结事项与{team}维护的{artifact2}关联起来。",
    "{artifact}的副本存放在{place}中，被取代的版本会被撤回。",
    "{adj}{artifact}通过之后，{team}再{verb}{artifact2}。",
    "对{artifact}的抽查侧重于{concern}，而不是格式细节。",
    "如果{concern}持续存在，{team}会把{artifact}上报给{team2}。",
    "{artifact}模板要求写明简短理由、负责人和复查日期。",
    "{event}中的经验教训由{team}补充到{adj}{artifact}中。",
    "{team2}依靠{artifact}来安排{event}之后的工作。",
    "在{team}确认{artifact}{quality}之前，任何{artifact2}都不会关闭。",
)

LANGUAGES = ("en", "zh")
SEPARATOR = {"en": " ", "zh": ""}
"""What joins two filler sentences (and needles) in each language."""


def filler_sentences(language: str, seed: int) -> Iterator[str]:
    """Yield an endless, seeded stream of filler sentences in `language` (`en` or `zh`)."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown filler language {language!r}: use one of {', '.join(LANGUAGES)}")
    slots, templates = (
        (_EN_SLOTS, _EN_TEMPLATES) if language == "en" else (_ZH_SLOTS, _ZH_TEMPLATES)
    )
    rng = random.Random(f"longscope-filler:{language}:{seed}")
    while True:
        template = templates[rng.randrange(len(templates))]
        values = {name: words[rng.randrange(len(words))] for name, words in slots.items()}
        # Second picks from the same list, so a sentence never pairs a thing with itself.
        for name in ("artifact", "team"):
            words = slots[name]
            other = words[rng.randrange(len(words) - 1)]
            values[f"{name}2"] = other if other != values[name] else words[-1]
        yield template.format(**values)
