"""The combination rule (router/combine.py), through `decide` with strategy `auto`: a question that
names a rare key retrieves, an aggregation question maps and reduces, and a key found in more
passages than the budget holds maps and reduces over those passages only. Named words count rarest
first: common words of a prompt's instructions never push the key's passage out."""

import itertools

from longscope.router.combine import combine
from longscope.router.decide import decide
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import Sample

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)


def _route(context: str, question: str, tokenizer, budget: int = 1024):
    sample = Sample("s1", "t", "English", context, question, ("x",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    parts = TEMPLATE.parts(sample, "completion")
    tokens = len(tokenizer.encode(prompt))
    return decide(prompt, parts, tokens, budget, tokenizer, strategy="auto"), parts


def _filler(count: int) -> list[str]:
    return list(itertools.islice(filler_sentences("en", 5), count))


def test_a_question_naming_a_rare_key_retrieves_its_passage(qwen_tokenizer) -> None:
    sentences = _filler(600)
    sentences.insert(300, "The vault code for marigold-lantern is 55102.")
    route, _ = _route(" ".join(sentences), "What is the vault code for marigold-lantern?",
                      qwen_tokenizer)  # fmt: skip
    chosen = route.plan["combination"]
    assert chosen["choice"] == "retrieve" and route.action == "retrieve"
    assert "marigold" in chosen["named"] and chosen["passages_holding_named"] >= 1
    assert "55102" in route.texts[0]


def test_an_aggregation_question_that_names_nothing_maps_and_reduces(qwen_tokenizer) -> None:
    route, parts = _route(" ".join(_filler(600)), "How many sentences mention a season?",
                          qwen_tokenizer)  # fmt: skip
    chosen = route.plan["combination"]
    assert chosen["named"] == [] and chosen["choice"] == "map-reduce"
    assert route.action == "map-reduce" and route.reduce and len(route.texts) >= 3
    assert all(t.startswith(parts.head) and t.endswith(parts.tail) for t in route.texts)
    assert "'how many'" in chosen["reason"].lower()


def test_a_key_in_more_passages_than_fit_maps_over_those_passages_only(qwen_tokenizer) -> None:
    sentences = _filler(1200)
    # The key in 5 passages of about 140: rare enough to be named, too many for a 600 budget.
    for i in range(0, 1200, 240):
        sentences[i] = f"Ledger entry {i} for copperfield-orchard reads {1000 + i}."
    route, parts = _route(" ".join(sentences), "Which entries are there for copperfield-orchard?",
                          qwen_tokenizer, budget=600)  # fmt: skip
    chosen = route.plan["combination"]
    assert chosen["choice"] == "retrieve-then-map-reduce", chosen
    assert route.action == "retrieve-then-map-reduce" and route.reduce
    sent = "".join(route.texts)
    assert all(f"reads {1000 + i}." in sent for i in range(0, 1200, 240))
    # Only the passages holding the key travel: far less than the whole context.
    assert (
        sum(c["context_tokens"] for c in route.plan["chunks"])
        < len(qwen_tokenizer.encode(parts.context)) / 3
    )


def test_instruction_words_in_many_passages_leave_the_rare_key_retrieved(qwen_tokenizer) -> None:
    sentences = _filler(1200)
    # "hidden" and "within" (the instructions' words) in 6 passages each of about 140: named, but
    # too many to keep at a 600 budget; the key is in one passage, which is kept.
    for i in range(60, 1200, 200):
        sentences[i] = "Some notes are hidden within the archive."
    sentences[777] = "The locker code for amber-falcon is 4417."
    question = "Codes are hidden within the text. What is the locker code for amber-falcon?"
    route, _ = _route(" ".join(sentences), question, qwen_tokenizer, budget=600)
    chosen = route.plan["combination"]
    assert {"hidden", "within", "amber"} <= set(chosen["named"]), chosen
    assert chosen["choice"] == "retrieve" and route.action == "retrieve", chosen
    assert "amber-falcon is 4417" in route.texts[0]
    assert "do not fit as well" in chosen["reason"]


def test_bare_numbers_and_short_words_are_never_named() -> None:
    passages = ["1. apple 2. pear", "3. plum 10. fig", *(f"{i}. kiwi" for i in range(40))]
    chosen = combine("What are the 10 most common words in the above list?", passages,
                     [8] * len(passages), 4000, 6)  # fmt: skip
    assert chosen.named == () and chosen.choice == "map-reduce"


# -- the rule at its boundaries, on hand-made passages ---------------------------------------


def _corpus(size: int, **where: int) -> list[str]:
    """`size` passages of plain words; `where` puts a word into the first N of them."""
    texts = [f"plain words of passage number {i}" for i in range(size)]
    for word, count in where.items():
        for i in range(count):
            texts[i] += f" {word}"
    return texts


def test_a_word_is_named_when_at_most_five_percent_of_passages_hold_it() -> None:
    from longscope.router.combine import named_words
    from longscope.router.retrieve import words

    def named(frame: str, texts: list[str]) -> tuple[str, ...]:
        return named_words(frame, [set(words(t)) for t in texts])

    # 40 passages: 5% is 2 (and never fewer than 2).
    assert named("fox owl", _corpus(40, fox=2, owl=3)) == ("fox",)
    # 41 passages: 5% is 2.05, so 3.
    assert named("fox owl", _corpus(41, fox=2, owl=3)) == ("fox", "owl")
    assert named("fox owl", _corpus(41, fox=1, owl=4)) == ("fox",)
    assert named("owl fox", _corpus(10, fox=2, owl=2)) == ("owl", "fox")  # the frame's order
    # Absent words, words under 3 characters and bare numbers name nothing; repeats count once.
    assert named("zebra ox 12345 Fox fox a12", _corpus(40, ox=1, fox=1, a12=1)) == ("fox", "a12")
    texts = _corpus(40)
    texts[0] += " 12345"
    assert named("12345", texts) == ()


def test_named_passages_that_fit_the_room_exactly_are_retrieved() -> None:
    texts = _corpus(40, fox=2)
    tokens = [10] * 40
    need = 2 * (10 + 8)
    fits = combine("Where is the fox?", texts, tokens, need, 8)
    assert fits == combine("Where is the fox?", texts, tokens, need, 8)
    assert fits.choice == "retrieve" and fits.holding == (0, 1) and fits.named == ("fox",)
    assert fits.reason == "names fox, found in 2 passages"
    over = combine("Where is the fox?", texts, tokens, need - 1, 8)
    assert over.choice == "retrieve-then-map-reduce" and over.holding == (0, 1)
    assert over.reason == (
        f"names fox; the 2 passages holding them need {need} tokens, over the {need - 1} the "
        "budget leaves"
    )


def test_the_rarest_named_word_is_kept_first_and_the_room_is_its_boundary() -> None:
    texts = _corpus(40, fox=1, owl=2)  # fox in passage 0; owl in 0 and 1
    tokens = [10] * 40
    kept = combine("owl fox", texts, tokens, 18, 8)  # room for one passage: fox's
    assert kept.choice == "retrieve" and kept.holding == (0,) and kept.named == ("owl", "fox")
    assert kept.reason == (
        "names owl, fox; keeps the 1 passages holding fox; those holding owl do not fit as well "
        "(all 2 passages need 36 tokens, over the 18 the budget leaves)"
    )
    over = combine("owl fox", texts, tokens, 17, 8)  # not even fox's passage fits
    assert over.choice == "retrieve-then-map-reduce" and over.holding == (0, 1)
    assert over.reason == (
        "names owl, fox; the 2 passages holding them need 36 tokens, over the 17 the budget leaves"
    )
    assert combine("owl fox", texts, tokens, 36, 8).holding == (0, 1)  # both fit: both kept


def test_a_word_that_does_not_fit_is_skipped_and_a_later_one_still_kept() -> None:
    # 60 passages (5%: 3). fox in 0; elk in 4 and 5 (costly); owl in 1, 2 and 3 (cheap).
    texts = [f"plain words of passage number {i}" for i in range(60)]
    texts[0] += " fox"
    for i in (4, 5):
        texts[i] += " elk"
    for i in (1, 2, 3):
        texts[i] += " owl"
    tokens = [10, 1, 1, 1, 100, 100] + [10] * 54
    room = (10 + 8) + 3 * (1 + 8)  # fox's and owl's passages, exactly
    chosen = combine("elk owl fox", texts, tokens, room, 8)
    assert chosen.choice == "retrieve" and chosen.holding == (0, 1, 2, 3)
    assert chosen.reason == (
        "names elk, owl, fox; keeps the 4 passages holding fox, owl; those holding elk do not "
        "fit as well (all 6 passages need 261 tokens, over the 45 the budget leaves)"
    )
    # equally rare words keep the frame's order
    two = combine("owl elk", _corpus(40, elk=2, owl=2), [10] * 40, 36, 8)
    assert two.reason == "names owl, elk, found in 2 passages"


def test_the_reason_names_at_most_eight_words() -> None:
    names = ["alpha", "bravo", "carol", "delta", "ember", "fjord", "gamma", "hotel", "indigo"]
    texts = _corpus(40, **{name: 1 for name in names})
    chosen = combine(" ".join(names), texts, [10] * 40, 4000, 8)
    assert chosen.named == tuple(names) and chosen.holding == (0,)
    assert chosen.reason == f"names {', '.join(names[:8])}, found in 1 passages"


def test_without_a_named_word_an_aggregation_cue_maps_else_best_passages() -> None:
    texts = _corpus(40)
    counted = combine("Count the passages, please", texts, [10] * 40, 100, 8)
    assert counted.choice == "map-reduce" and counted.holding == () and counted.named == ()
    assert counted.reason == "names nothing rare; aggregation cue 'Count'"
    plain = combine("Which passage is best?", texts, [10] * 40, 100, 8)
    assert plain.choice == "retrieve" and plain.holding == () and plain.named == ()
    assert plain.reason == "names nothing rare and asks no aggregation: best passages"


def test_rarity_not_the_words_own_order_decides_which_passages_are_kept() -> None:
    # fox (2 passages) sorts before owl (1 passage) and would fit alone; owl is the rarer.
    texts = _corpus(40, fox=2)
    texts[2] += " owl"
    tokens = [10] * 40
    chosen = combine("fox owl", texts, tokens, 36, 8)  # room for two passages
    assert chosen.choice == "retrieve" and chosen.holding == (2,)
    assert chosen.reason == (
        "names fox, owl; keeps the 1 passages holding owl; those holding fox do not fit as well "
        "(all 3 passages need 54 tokens, over the 36 the budget leaves)"
    )


def test_the_reason_names_at_most_eight_kept_and_eight_left_words() -> None:
    singles = ["alpha", "bravo", "carol", "delta", "ember", "fjord", "gamma", "hotel", "indigo"]
    pairs = ["juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"]
    texts = [f"plain words of passage number {i}" for i in range(40)]
    for i, word in enumerate(singles):
        texts[i] += f" {word}"
    for i, word in enumerate(pairs):
        texts[10 + 2 * i] += f" {word}"
        texts[11 + 2 * i] += f" {word}"
    # Room for the nine single passages: every word held by two is left out.
    chosen = combine(" ".join(singles + pairs), texts, [10] * 40, 9 * 18, 8)
    assert chosen.holding == tuple(range(9))
    assert chosen.reason == (
        f"names {', '.join(singles[:8])}; keeps the 9 passages holding {', '.join(singles[:8])}; "
        f"those holding {', '.join(pairs[:8])} do not fit as well (all 27 passages need 486 "
        "tokens, over the 162 the budget leaves)"
    )
