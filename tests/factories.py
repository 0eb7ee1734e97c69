"""Builders the tests share (instead of a `_sample(`/`_request(` copied into each module): a suite
with some options and every other option's declared default, a sample, its stored form, and a
request, each with the fields a test names and plain values for the rest."""

from __future__ import annotations

from typing import Any, TypeVar

from longscope.suites.base import Suite
from longscope.types import GenerationConfig, Message, PromptMode, Request, Sample

S = TypeVar("S", bound=Suite)


def make_suite(cls: type[S], **values: Any) -> S:
    """Return `cls` built by its constructor from `values` and each other option's default
    (`Suite.completed`), without the data cache or `-S` checks a run applies."""
    return cls(**{**cls.completed({}), **values})


def sample(
    sid: str = "s",
    *,
    task: str = "t",
    language: str = "en",
    context: str | None = None,
    question: str = "q",
    gold: tuple[str, ...] = ("a",),
    length: int = 0,
    meta: dict[str, Any] | None = None,
    **typed: Any,
) -> Sample:
    """Return a sample: its own context (`document of SID`) unless one is given."""
    text = context if context is not None else f"document of {sid}"
    return Sample(sid, task, language, text, question, gold, length, dict(meta or {}), **typed)


def stored_sample(sid: str = "s", length: int = 0, **fields: Any) -> dict[str, Any]:
    """Return a sample as a run stores it beside its generations (`Sample.public`, no context)."""
    return {"id": sid, "task": "t", "length": length, "meta": {}, **fields}


def request(
    sid: str = "s",
    repeat: int = 0,
    *,
    prompt: str | None = None,
    messages: tuple[Message, ...] | None = None,
    max_tokens: int = 8,
    **fields: Any,
) -> Request:
    """Return a request: completion mode with `prompt` (default `hello`), or chat with `messages`."""
    mode: PromptMode = "chat" if messages is not None else "completion"
    config = fields.pop("config", GenerationConfig(max_tokens=max_tokens))
    return Request(
        sid,
        repeat,
        mode,
        prompt=prompt if prompt is not None else ("" if messages is not None else "hello"),
        messages=messages or (),
        config=config,
        **fields,
    )
