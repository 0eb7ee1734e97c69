"""Random Unicode through the whole store boundary (issue 21, deliverable 9).

Seeded random answers, reasoning and server error messages, drawn from the characters that have
broken text pipelines (lone surrogates, NUL and other controls, bidi marks, combining marks, astral
emoji, markup, a 1 MB line), go through `run`, `score`, `report` in every format, `compare` and
`merge`, each the real CLI in a subprocess. Nothing may crash, and what was received is what is
stored: every answer the server gave, exactly, with only UTF-8's unencodable code points (lone
surrogates) replaced by U+FFFD.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from longscope.run.store import RunStore
from longscope.types import Generation, Score, storable_text

from .cli_helper import longscope
from .models.fault_server import FaultServer, completion_body

SEEDS = (1,)
DEPTHS = [round(0.05 + 0.075 * i, 3) for i in range(12)]
ALPHABETS = (
    "abc xyz 0123456789 .,;:!?",
    "\ud800\udbff\udc00\udfff",  # lone surrogates (JSON "\ud800": valid JSON, not valid UTF-8)
    "\x00\x01\x07\x08\x0b\x1b\x7f\x85",  # NUL, bell, escape and other controls
    "\u200e\u200f\u202a\u202b\u202d\u202e\u2066\u2067\u2069\u061c",  # bidi marks and overrides
    "\u0301\u0308\u20dd\ufe0f\u200d",  # combining marks, zero-width joiner
    "\U0001f600\U0001f4a9\U00010348\U000e0001",  # astral plane
    "中文字符العربيةעברית",
    "<>&\"'[/][bold]$\\{}",  # HTML, rich markup, mathtext
    "\ufeff\ufffe\uffff\ufdd0",  # BOM and non-characters (encodable: kept as they are)
)


def _text(rng: random.Random, size: int) -> str:
    if size == 0:
        return ""
    while True:
        text = "".join(rng.choice(rng.choice(ALPHABETS)) for _ in range(size))
        if "<think>" not in text and "</think>" not in text and text.strip():
            return text


def _answers(seed: int) -> list[tuple[str, str]]:
    """Return (text, reasoning) per answer, the last one a 1 MB line."""
    rng = random.Random(seed)
    answers = [(_text(rng, rng.randint(1, 300)), _text(rng, rng.randint(0, 50))) for _ in DEPTHS]
    answers[-1] = ("x" * (1 << 20) + _text(rng, 20), "")
    return answers


def _received(text: str) -> str:
    return json.loads(json.dumps(text))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_unicode_is_stored_as_received_and_every_command_reads_it(
    seed: int, tmp_path: Path
) -> None:
    answers = _answers(seed)
    rng = random.Random(seed + 1000)
    with FaultServer() as server:
        # Two failures first (their messages random text too), each retried by the client.
        for _ in range(2):
            server.script.append(("status", (503, _text(rng, 80), {"Retry-After": "0"})))
        for text, reasoning in answers:
            body = completion_body(text, reasoning=reasoning or None, prompt_tokens=100_000)
            server.script.append(("ok", body))
        run = tmp_path / "run"
        made = longscope(
            "run", "longctx", "--model", "openai/m", "--base-url", server.url,
            "-M", "context_length=8192", "-S", "lengths=1k", "-S", "types=needle",
            "-S", "depths=" + ",".join(map(str, DEPTHS)), "-q", "-o", str(run),
            timeout=300,
        )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    assert "Traceback" not in made.stderr

    # What was received is what is stored (answers arrive in any order: compared as multisets).
    db = sqlite3.connect(f"{(run / 'longscope.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    db.text_factory = bytes
    rows = db.execute("SELECT status, text, reasoning, error FROM generations").fetchall()
    db.close()
    assert [r[0] for r in rows] == [b"ok"] * len(DEPTHS)
    stored = Counter((r[1].decode("utf-8"), r[2].decode("utf-8")) for r in rows)  # valid UTF-8
    # Received: the JSON the server sent, decoded (two adjacent surrogates that form a pair in
    # JSON decode to one astral character); stored: that, with lone surrogates replaced.
    received = [(_received(text), _received(reasoning)) for text, reasoning in answers]
    # An answer whose server set its thinking apart is stored as the visible answer: the white
    # space around it and around the reasoning is not kept (models/base.py's VISIBLE_ANSWER_RULE,
    # the same on every server); an answer without thinking is stored exactly.
    received = [(t.strip(), r.strip()) if r else (t, r) for t, r in received]
    expected = Counter((storable_text(t)[0], storable_text(r)[0]) for t, r in received)
    assert stored == expected
    flagged = sum(bool(storable_text(t)[1] or storable_text(r)[1]) for t, r in received)
    assert sum(r[3].startswith(b"sanitized:") for r in rows) == flagged

    # Every reader: re-score, tables, JSON, HTML, Markdown, compare, merge.
    for args in (
        ("score", str(run)),
        ("report", str(run)),
        ("report", str(run), "--json"),
        (
            "report",
            str(run),
            "--html",
            str(tmp_path / "r.html"),
            "--markdown",
            str(tmp_path / "r.md"),
        ),
        ("compare", str(run), str(run)),
        ("compare", str(run), "--json"),
        ("merge", str(tmp_path / "merged"), str(run)),
    ):
        done = longscope(*args, timeout=300)
        assert done.returncode == 0, (args, done.stderr[-3000:])
        assert "Traceback" not in done.stderr, args
    summary = json.loads(longscope("report", str(run), "--json").stdout)
    assert summary["completeness"]["scored"] == len(DEPTHS)
    assert "\ufffd" in (tmp_path / "r.html").read_text(encoding="utf-8")  # valid UTF-8
    assert (tmp_path / "r.md").read_text(encoding="utf-8")
    with sqlite3.connect(tmp_path / "merged" / "longscope.sqlite") as merged:
        count = merged.execute("SELECT COUNT(*) FROM generations WHERE status='ok'").fetchone()
    assert count == (len(DEPTHS),)


@pytest.mark.parametrize("seed", range(20))
def test_the_store_keeps_any_text_it_is_given(seed: int, tmp_path: Path) -> None:
    """The same property at the store itself, over many seeds: answers, reasoning, errors,
    judge texts and score evidence of random Unicode are stored and read back as given, lone
    surrogates replaced; nothing raises."""
    rng = random.Random(seed)
    rows = [
        (f"s{i}", rng.randint(0, 3), Generation(
            text=_text(rng, rng.randint(1, 400)), status=rng.choice(("ok", "length", "error")),
            reasoning=_text(rng, rng.randint(0, 40)), error=_text(rng, rng.randint(0, 40)),
        ))
        for i in range(40)
    ]  # fmt: skip
    with RunStore(tmp_path) as store:
        store.put_generations("r", rows)
        store.put_judgement("r", "s0", 0, _text(rng, 9), 0.5, _text(rng, 50), 1, _text(rng, 20))
        store.put_scores("r", [("s0", 0, Score(1.0, 1.0, {"answer": _text(rng, 60)}))])
        back = {(sid, rep): gen for sid, rep, gen in store.generations("r")}
        assert len(store.judgements("r")) == 1 and len(store.scores("r")) == 1
    latest: dict[tuple[str, int], Generation] = {}
    for sid, rep, gen in rows:  # a final answer is never replaced; a retryable one is
        held = latest.get((sid, rep))
        if held is None or held.status == "error":
            latest[(sid, rep)] = gen
    for key, gen in latest.items():
        got = back[key]
        assert got.text == storable_text(gen.text)[0]
        assert got.reasoning == storable_text(gen.reasoning)[0]
        if storable_text(gen.text)[1] + storable_text(gen.reasoning)[1]:
            assert got.error.startswith("sanitized:")
        else:
            assert got.error == storable_text(gen.error)[0]
