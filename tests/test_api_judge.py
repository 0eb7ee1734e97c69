"""The judge never sends prompts (or the API key) to a host the user did not name."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope import api
from longscope.errors import UsageError


def test_openai_judge_without_any_url_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(
        UsageError, match=r"judge openai/gpt-judge has no endpoint: give --judge-base-url"
    ):
        api.judge(tmp_path, "openai/gpt-judge")


def test_judge_url_from_the_environment_is_a_named_host(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    # Past the endpoint check: the next thing that fails is the missing run, not the refusal.
    with pytest.raises(UsageError) as caught:
        api.judge(tmp_path / "no-run", "openai/gpt-judge")
    assert "has no endpoint" not in str(caught.value)
