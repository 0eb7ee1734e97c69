"""Grouping requests by shared prompt prefix (one prefill per document)."""

from __future__ import annotations

import pytest

from longscope.models.groups import group_by_prefix, prefix_key
from longscope.types import Message, PromptParts, Request


def _chat(sample: str, repeat: int, context: str, question: str = "Q?") -> Request:
    body = f"Read this.\n{context}\n{question}"
    return Request(
        sample,
        repeat,
        "chat",
        messages=(Message("system", "Be brief."), Message("user", body)),
        parts=PromptParts("Read this.\n", context, f"\n{question}"),
    )


def test_repeats_of_a_document_form_one_group_in_order() -> None:
    requests = [_chat("a", r, "doc A") for r in range(3)] + [
        _chat("b", r, "doc B") for r in range(3)
    ]
    assert group_by_prefix(requests) == [(0, 1, 2), (3, 4, 5)]


def test_interleaved_requests_still_group_by_document() -> None:
    requests = [_chat("a", 0, "A"), _chat("b", 0, "B"), _chat("a", 1, "A"), _chat("b", 1, "B")]
    assert group_by_prefix(requests) == [(0, 2), (1, 3)]


def test_different_questions_over_one_context_share_the_prefix() -> None:
    requests = [_chat("q1", 0, "same doc", "Who?"), _chat("q2", 0, "same doc", "When?")]
    assert prefix_key(requests[0]) == prefix_key(requests[1])
    assert group_by_prefix(requests) == [(0, 1)]


def test_a_different_system_message_or_mode_is_another_prefix() -> None:
    base = _chat("a", 0, "doc")
    other_system = Request(
        "a", 1, "chat", messages=(Message("system", "Think."), base.messages[1]), parts=base.parts
    )
    completion = Request("a", 2, "completion", prompt=base.messages[1].content, parts=base.parts)
    assert len({prefix_key(r) for r in (base, other_system, completion)}) == 3


def test_requests_without_parts_group_only_when_identical() -> None:
    same = [Request("x", r, "completion", prompt="full prompt") for r in range(2)]
    other = Request("y", 0, "completion", prompt="full prompt!")
    assert group_by_prefix([*same, other]) == [(0, 1), (2,)]


def test_large_groups_are_split() -> None:
    requests = [_chat("a", r, "doc") for r in range(10)]
    assert group_by_prefix(requests, max_group=4) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]
    assert group_by_prefix(requests) == [tuple(range(8)), (8, 9)]
    with pytest.raises(ValueError):
        group_by_prefix(requests, max_group=0)
