import hashlib
import itertools
import re

import pytest

from longscope.suites.longctx.tasks import TASKS
from longscope.text.filler import filler_sentences
from longscope.text.quantities import canonical_text, parse_value, read_values, same_value


def _text(language: str, seed: int, n: int = 3000) -> str:
    return "".join(itertools.islice(filler_sentences(language, seed), n))


# Byte-identical on any machine: a change of templates, word lists or RNG use must be deliberate
# (bump FILLER_VERSION in text/haystack.py, which also invalidates cached token counts).
GOLDEN = {
    ("en", 0): "e178630f7ab66ce4",
    ("zh", 0): "87c76ff111107b53",
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_filler_is_seeded_and_deterministic(language: str) -> None:
    assert _text(language, 0) == _text(language, 0)
    assert _text(language, 0) != _text(language, 1)
    digest = hashlib.sha256(_text(language, 0).encode()).hexdigest()[:16]
    assert digest == GOLDEN[(language, 0)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_filler_never_holds_an_answer(language: str) -> None:
    text = _text(language, 0, 6000)
    assert not re.search(r"\d", text), "filler must hold no digits (every answer has one)"
    normalized = canonical_text(text)
    values = read_values(text)
    for task in TASKS:
        for key in task.keys:
            if key.value:  # a number or date: compared as a value, as the grader does
                gold = parse_value(key.value)
                assert not any(same_value(gold, v) for v in values), (task.id, key.name)
            else:
                assert not re.search(key.regex, normalized), (task.id, key.name)
    for name in ("crestfall", "helios", "meridian", "thornwick", "kepler", "quintessa", "sigma"):
        assert name not in normalized


def test_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown filler language"):
        next(filler_sentences("fr", 0))
