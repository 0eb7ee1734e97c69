"""100-LongBench's document pools: what a pool file gives, how the manual's topics are cut, and the
token counts every context is sized with (exact by hand with one token per character)."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.hundred.pool import (
    CHUNK_WORDS,
    WRAP,
    CountedPool,
    Document,
    jsonl_pool,
    load_pool,
    pydoc_pool,
)

from .helpers import CharTokenizer, SeamTokenizer, write_pool


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own: counts are computed here, not read from another test's."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("LONGSCOPE_CACHE", str(folder))
    return folder


def test_a_pool_file_gives_its_documents_ids_and_texts_in_order(tmp_path: Path) -> None:
    path = tmp_path / "pool.jsonl"
    path.write_text(
        '{"id": 7, "context": "Seven."}\n'
        '{"_id": "lb-1", "context": "LongBench row.", "input": "q"}\n'
        "\n"
        '{"context": "No id: its line number."}\n'
    )
    assert jsonl_pool(path) == [
        Document("7", "Seven."),
        Document("lb-1", "LongBench row."),
        Document("4", "No id: its line number."),
    ]


@pytest.mark.parametrize(
    ("line", "row"),
    [('["a list"]', 1), ('{"id": "x", "context": 5}', 1), ('{"id": "x", "text": "t"}', 1)],
)
def test_a_pool_row_without_a_string_context_is_refused_naming_the_row(
    tmp_path: Path, line: str, row: int
) -> None:
    path = tmp_path / "pool.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UsageError) as caught:
        jsonl_pool(path)
    assert str(caught.value) == f"{path}: row {row}: field 'context': expected a string"


def test_a_missing_pool_file_is_named_as_the_pool_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    for call in (jsonl_pool, load_pool):
        with pytest.raises(UsageError) as caught:
            call(str(missing))
        assert str(caught.value) == f"pool file {missing} does not exist"


def test_a_pool_files_identity_is_its_contents_digest(tmp_path: Path) -> None:
    # The identity keys the count cache: an edited file is counted again, a copy is not.
    path = write_pool(tmp_path / "a.jsonl", [{"id": "1", "context": "Alpha."}])
    documents, identity = load_pool(path)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    assert documents == [Document("1", "Alpha.")]
    assert identity == f"file:{digest}" and len(identity) == len("file:") + 16
    _, pydoc = load_pool("pydoc")
    assert pydoc == f"pydoc:{sys.version_info.major}.{sys.version_info.minor}"


def test_the_manuals_topics_are_cut_at_paragraphs_once_a_chunk_holds_400_words() -> None:
    from pydoc_data.topics import topics

    documents = pydoc_pool()
    by_topic: dict[str, list[tuple[int, str]]] = {}
    for position, document in enumerate(documents):
        topic, _, number = document.id.rpartition("/")
        assert number == str(position)  # ids number the documents of the whole pool
        by_topic.setdefault(topic, []).append((position, document.text))
    assert sorted(by_topic) == sorted(topics)
    for topic, chunks in by_topic.items():
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", topics[topic]) if p.strip()]
        # every paragraph once, in order, a blank line between paragraphs
        assert "\n\n".join(text for _, text in chunks) == "\n\n".join(paragraphs)
        cut = [text.split("\n\n") for _, text in chunks]
        assert sum(map(len, cut)) == len(paragraphs)
        for i, parts in enumerate(cut):
            before_last = sum(len(p.split()) for p in parts[:-1])
            assert before_last < CHUNK_WORDS, topic  # cut as soon as the words reach 400
            if i < len(cut) - 1:
                assert before_last + len(parts[-1].split()) >= CHUNK_WORDS, topic
    assert len(documents) > len(topics)  # long topics are several documents


def test_counts_are_of_each_wrapped_passage_and_its_body(cache: Path) -> None:
    texts = [f"Document number {i}." * (i + 1) for i in range(12)]
    documents = [Document(str(i), t) for i, t in enumerate(texts)]
    pool = CountedPool(documents, "test:12", CharTokenizer())
    # the upper bound: a three-digit index; the body: the text and its blank line
    assert pool.counts == [len(f"Passage 999:\n{t}\n\n") for t in texts]
    assert pool.bodies == [len(f"{t}\n\n") for t in texts]
    assert pool.total_tokens == sum(pool.counts)
    assert [pool.header(i) for i in (1, 9, 10, 123)] == [11, 11, 12, 13]
    # one token a character adds up across passages 1..12 (the index gains a digit at 10)
    assert pool.additive is True


def test_a_pool_whose_seams_do_not_add_up_is_not_additive(cache: Path) -> None:
    documents = [Document("a", "Plain text."), Document("q", "Quoted text."), Document("b", "B.")]
    assert CountedPool(documents, "test:q", SeamTokenizer("seam")).additive is False
    plain = [Document("a", "Plain text."), Document("b", "B.")]
    assert CountedPool(plain, "test:plain", SeamTokenizer("seam")).additive is True


def test_counts_are_cached_per_source_and_a_damaged_cache_is_counted_again(cache: Path) -> None:
    documents = [Document("a", "Alpha."), Document("b", "Beta beta.")]
    first = CountedPool(documents, "test:ab", CharTokenizer())
    (written,) = cache.glob("docs-*.json")
    assert json.loads(written.read_text()) == {
        "counts": first.counts,
        "bodies": first.bodies,
        "additive": True,
    }
    # a cache file of another pool size (bodies alone, or counts alone) is not believed
    for damaged in (
        {"counts": first.counts, "bodies": first.bodies[:1], "additive": True},
        {"counts": first.counts[:1], "bodies": first.bodies, "additive": True},
        {"counts": ["x", 1], "bodies": first.bodies, "additive": True},
        {"bodies": first.bodies, "additive": True},
    ):
        written.write_text(json.dumps(damaged))
        again = CountedPool(documents, "test:ab", CharTokenizer())
        assert (again.counts, again.bodies) == (first.counts, first.bodies)
    written.write_text("{not json")
    assert CountedPool(documents, "test:ab", CharTokenizer()).bodies == first.bodies
    # believed when whole: a stored count is used as it is (it is not recounted)
    written.write_text(json.dumps({"counts": [1, 2], "bodies": [3, 4], "additive": False}))
    cached = CountedPool(documents, "test:ab", CharTokenizer())
    assert (cached.counts, cached.bodies, cached.additive) == ([1, 2], [3, 4], False)
    # another source of the same size, or the same tokenizer name with other counts, is its own
    assert CountedPool(documents, "test:other", CharTokenizer()).counts == first.counts
    halves = CountedPool(documents, "test:ab", _Pairs("chars"))
    assert halves.counts == [(n + 1) // 2 for n in first.counts]


class _Pairs(CharTokenizer):
    """Two characters a token, under the same name as another tokenizer."""

    def encode(self, text: str) -> list[int]:
        return list(range((len(text) + 1) // 2))


def test_a_cache_that_cannot_be_written_only_costs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LONGSCOPE_CACHE", str(blocker / "cache"))
    documents = [Document("a", "Alpha."), Document("b", "Beta.")]
    pool = CountedPool(documents, "test:ro", CharTokenizer())
    assert pool.counts == [len(WRAP.format(index=999, text=d.text)) for d in documents]
