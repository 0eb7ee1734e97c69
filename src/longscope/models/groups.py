"""Requests that share a prompt prefix, grouped so a backend can prefill the prefix once.

A document's repeats (and any requests over the same context) differ at most after the context:
a backend with `generate_group` prefills the shared part once and decodes the members as one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from longscope.types import Request, stable_hash

DEFAULT_MAX_GROUP = 8
"""Members decoded together at most: enough for 3 repeats x 2 modes, small enough to plan memory."""


def prefix_key(request: Request) -> str:
    """Return a key equal for requests whose prompts are the same up to the end of their context."""
    if request.parts is not None:
        before = [(m.role, m.content) for m in request.messages[:-1]]
        shared = {"before": before, "head": request.parts.head, "context": request.parts.context}
    elif request.mode == "completion":
        shared = {"text": request.prompt}
    else:
        shared = {"messages": [(m.role, m.content) for m in request.messages]}
    return stable_hash({"mode": request.mode, **shared}, length=24)


def group_by_prefix(
    requests: Sequence[Request], max_group: int = DEFAULT_MAX_GROUP
) -> list[tuple[int, ...]]:
    """Return groups of indices into `requests` that share a prompt prefix, in first-seen order.

    A key with more than `max_group` members is split into consecutive groups of at most that size.
    """
    if max_group < 1:
        raise ValueError(f"max_group must be at least 1, got {max_group}")
    by_key: dict[str, list[int]] = {}
    for index, request in enumerate(requests):
        by_key.setdefault(prefix_key(request), []).append(index)
    groups: list[tuple[int, ...]] = []
    for members in by_key.values():
        for start in range(0, len(members), max_group):
            groups.append(tuple(members[start : start + max_group]))
    return groups
