"""Shared fixtures: the embedded model's file and tokenizer, an isolated cache, free ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One cache per test session: token counts are computed once, never shared with the user's.
    monkeypatch.setenv("LONGSCOPE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="session")
def model_path() -> Path:
    from longscope.models.registry import resolve_model_path

    return resolve_model_path("gemma3-270m")


@pytest.fixture(scope="session")
def gemma_tokenizer(model_path: Path):
    from longscope.text.tokenizers import GGUFTokenizer

    return GGUFTokenizer(model_path, name="gemma3-270m")


@pytest.fixture(scope="session")
def qwen_tokenizer():
    from longscope.text.tokenizers import QwenTokenizer

    return QwenTokenizer()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
