"""LongBench Pro's row schema, tasks and metric families (docs/benchmarks/longbench-pro.md).

Rows come from files we did not write: they are validated here, at the edge, with pydantic, and a
bad row fails with its file, row number, field and what was expected.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from longscope.errors import describe_error as describe_error  # re-exported
from longscope.types import Sample

LANGUAGES = ("English", "Chinese")
LENGTHS = ("8k", "16k", "32k", "64k", "128k", "256k")
DIFFICULTIES = ("Easy", "Moderate", "Hard", "Extreme")
REQUIREMENTS = ("Full", "Partial")

# secondary task -> (primary task, metric)
SECONDARY_TASKS: dict[str, tuple[str, str]] = {
    "T1.1 Global Cohesive Retrieval": ("T1. Retrieval & Ranking", "ndcg"),
    "T1.2 Key-Snippet Retrieval": ("T1. Retrieval & Ranking", "ndcg"),
    "T2.1 Global Timeline Reconstruction": (
        "T2. Sequencing & Structure Reconstruction",
        "pairwise",
    ),
    "T2.2 Local Causal Chain Sorting": ("T2. Sequencing & Structure Reconstruction", "pairwise"),
    "T3.1 Multi-Doc Integration QA": ("T3. Evidence-Grounded QA", "accuracy"),
    "T3.2 Single-Hop Fact QA": ("T3. Evidence-Grounded QA", "accuracy"),
    "T4.1 Global-Coverage Constrained Summary": ("T4. Summarization & Synthesis", "summary"),
    "T4.2 Query-Focused Summary": ("T4. Summarization & Synthesis", "summary"),
    "T5.1 Full-Sentence Citation Alignment": ("T5. Attribution & Citation Alignment", "f1"),
    "T5.2 Key-Statement Citation Alignment": ("T5. Attribution & Citation Alignment", "f1"),
    "T6.1 Large-Scale Document Clustering": ("T6. Aggregation & Clustering", "subem"),
    "T6.2 Targeted Subset Cluster Identification": ("T6. Aggregation & Clustering", "f1"),
    "T6.3 Global Frequency Analysis": ("T6. Aggregation & Clustering", "pairwise"),
    "T7.1 Global Conflict & Inconsistency Localization": (
        "T7. Consistency & Compliance Checking",
        "f1",
    ),
    "T7.2 Targeted Rule or Condition Violation Detection": (
        "T7. Consistency & Compliance Checking",
        "f1",
    ),
    "T7.3 Comprehensive Error & Anomaly Sweep": ("T7. Consistency & Compliance Checking", "f1"),
    "T8.1 Structured Multi-Source Consistency Verification": (
        "T8. Structured & Numeric Reasoning",
        "subem",
    ),
    "T8.2 Single-Source Targeted Aggregation": ("T8. Structured & Numeric Reasoning", "subem"),
    "T8.3 Long-Context Procedural State Tracking": ("T8. Structured & Numeric Reasoning", "subem"),
    "T9.1 Dependency-Aware Multi-Version Impact Analysis": (
        "T9. Version & Code Diff Analysis",
        "f1",
    ),
    "T9.2 Localized Interface Change Detection": ("T9. Version & Code Diff Analysis", "f1"),
    "T10.1 Large-Scale In-Context Rule Induction": (
        "T10. Rule Induction & In-Context Learning",
        "subem",
    ),
    "T10.2 Targeted Example-Based Rule Induction": (
        "T10. Rule Induction & In-Context Learning",
        "subem",
    ),
    "T11.1 Long-Range Entity & Commitment Tracking": (
        "T11. Dialogue Memory & Long-Horizon Tracking",
        "accuracy",
    ),
    "T11.2 Short-Range Reference Resolution & State Query": (
        "T11. Dialogue Memory & Long-Horizon Tracking",
        "accuracy",
    ),
}
PRIMARY_TASKS = tuple(dict.fromkeys(primary for primary, _ in SECONDARY_TASKS.values()))


class Row(BaseModel):
    """One LongBench Pro sample, as the Hub file and user files hold it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    context: str
    language: Literal["English", "Chinese"]
    token_length: Literal["8k", "16k", "32k", "64k", "128k", "256k"]
    primary_task: str
    secondary_task: str
    contextual_requirement: Literal["Full", "Partial"]
    difficulty: Literal["Easy", "Moderate", "Hard", "Extreme"]
    question_nonthinking: str
    question_thinking: str
    answer: list[str]

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @field_validator("primary_task")
    @classmethod
    def _known_primary(cls, value: str) -> str:
        if value not in PRIMARY_TASKS:
            raise ValueError(f"unknown primary task {value!r}")
        return value

    @field_validator("secondary_task")
    @classmethod
    def _known_secondary(cls, value: str) -> str:
        if value not in SECONDARY_TASKS:
            raise ValueError(f"unknown secondary task {value!r}")
        return value

    @field_validator("answer")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("answer must hold at least one string")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Row:
        primary, _ = SECONDARY_TASKS[self.secondary_task]
        if primary != self.primary_task:
            raise ValueError(f"secondary task {self.secondary_task!r} belongs to {primary!r}")
        return self

    @property
    def metric(self) -> str:
        return SECONDARY_TASKS[self.secondary_task][1]


def row_sample(
    row: Row, mode: str, *, context: str | None = None, question: str | None = None, **meta: Any
) -> Sample:
    """Return the sample of one dataset row in one prompt mode (`meta` adds run-time facts)."""
    if question is None:
        question = row.question_thinking if mode == "thinking" else row.question_nonthinking
    return Sample(
        id=f"{row.id}#{mode}",
        task=row.secondary_task,
        language=row.language,
        context=row.context if context is None else context,
        question=question,
        gold=tuple(row.answer),
        meta={
            "row_id": row.id,
            "mode": mode,
            "metric": row.metric,
            "token_length": row.token_length,
            "primary_task": row.primary_task,
            "secondary_task": row.secondary_task,
            "contextual_requirement": row.contextual_requirement,
            "difficulty": row.difficulty,
            "truncated": False,
            **meta,
        },
    )
