"""Identities that outlive a version: a run's id and stored hashes must not change, or resume
would redo (or mix up) everything stored by the previous release."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from longscope.types import Sample, stable_hash


def test_stable_hash_is_pinned() -> None:
    # sorted keys, compact separators, UTF-8 (not \\u escapes), str() for other objects
    assert stable_hash({"b": [1, "é"], "a": None}) == "f8f17faab95c0248"
    assert stable_hash({"b": [1, "é"], "a": None}, 8) == "f8f17faa"
    assert stable_hash({"a": None, "b": [1, "é"]}) == "f8f17faab95c0248"
    assert stable_hash({"when": Path("x")}) == "10490b4eed052070"
    assert len(stable_hash("x", 64)) == 64


def test_public_sample_drops_only_the_context() -> None:
    sample = Sample("i", "t", "en", "the long context", "q", ("g1", "g2"), 4096, {"k": 1})
    public = sample.public()
    expected = dataclasses.asdict(sample)
    del expected["context"]
    expected["gold"] = ["g1", "g2"]
    assert public == expected and "context" not in public
    assert isinstance(public["gold"], list) and public["meta"] == {"k": 1}
