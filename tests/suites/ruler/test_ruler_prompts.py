"""Every prompt reads as RULER's: its model templates x its task templates x its rewording.

`fixtures/ruler_templates.json` carries RULER's template strings verbatim with their source and
commit (`scripts/data/template.py`'s `Templates`, `scripts/data/synthetic/constants.py`'s `TASKS`).
The expected prompt is built here from those strings by RULER's own rules, never from longscope's
copies:
- prepare.py: `Templates[m].format(task_template=TASKS[g]['template']) + TASKS[g]['answer_prefix']`,
  handed to the generator whole (through the shell, in double quotes: no template holds a character
  the shell would change);
- niah.py, a single answer (`num_needle_q * num_needle_v == 1`): that whole string, the model
  template included, reworded `Some`->`A`, `are all`->`is`, `are`->`is`, `answers`->`answer`, and
  the needle type singular: lwm-chat reads "You is a helpful assistant", vicuna-chat "polite answer
  to the user's questions";
- variable_tracking.py: its one-shot example (the task template and answer prefix unwrapped, 3-letter
  names) inserted before the task's first 20 characters; common_words_extraction.py: its example
  wrapped like the task, then a newline, then the task;
- the answer prefix is split off at the last occurrence of its first 10 characters.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.ruler.data import load_hotpotqa, load_squad
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import ALL_TASKS, TASKS
from longscope.types import GenerationConfig

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
RULER = json.loads((FIXTURES / "ruler_templates.json").read_text())
MODEL_TEMPLATES: dict[str, str] = RULER["model_templates"]
TASK_TEMPLATES: dict[str, dict] = RULER["task_templates"]
LENGTHS = (2048, 4096)
SAMPLES = 2
SINGLE = ("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")


def _slot(name: str) -> str:
    """A placeholder no template holds and `re.escape` leaves as it is."""
    return f"QQ{name}QQ"


def _pattern(text: str, values: dict[str, str]) -> re.Pattern[str]:
    """`text` as a regular expression: placeholders become their value (text) or a wildcard."""
    pattern = re.escape(text)
    for name, value in values.items():
        pattern = pattern.replace(_slot(name), value)
    return re.compile(pattern, re.S)


def rulers_prompt(template: str, task: str, fields: dict[str, str]) -> tuple[re.Pattern[str], str]:
    """Return RULER's prompt for one sample (as a pattern where RULER draws what the sample does
    not record: vt's and cwe's examples) and the first 10 characters it splits the prefix at."""
    generator = TASKS[task].generator
    spec = TASK_TEMPLATES[generator]
    full = MODEL_TEMPLATES[template].format(task_template=spec["template"]) + spec["answer_prefix"]
    lit = {k: re.escape(v) for k, v in fields.items()}
    if generator == "niah":
        args = TASKS[task].args
        type_v = args["type_needle_v"]
        if args["num_needle_q"] * args["num_needle_v"] == 1:
            for old, new in SINGLE:
                full = full.replace(old, new)
            type_v = type_v[:-1]
        text = full.format(type_needle_v=type_v, context=_slot("C"), query=_slot("Q"))
    elif generator == "variable_tracking":
        main = full.format(context=_slot("C"), query=_slot("Q"), num_v=5)
        cut = main.index(spec["template"][:20])
        text = main[:cut] + _slot("EX") + "\n" + main[cut:]
        example = (spec["template"] + spec["answer_prefix"]).format(
            context=_slot("EC"), query=_slot("EV"), num_v=5
        )
        lit["EX"] = _pattern(example, {}).pattern + " [A-Z]{3}(?: [A-Z]{3}){4}\n"
        lit |= {"EC": "(?:.+?)", "EV": "[0-9]{5}"}
    elif generator == "common_words_extraction":
        shot = full.format(context=_slot("EC"), query="") + " " + _slot("EA")
        text = shot + "\n" + full.format(context=_slot("C"), query="")
        lit |= {"EC": "(?:.+?)", "EA": r"1\. \S+(?: [0-9]+\. \S+){9}"}
    elif generator == "freq_words_extraction":
        text = full.format(context=_slot("C"), query="")
    else:
        text = full.format(context=_slot("C"), query=_slot("Q"))
    return _pattern(text, lit), spec["answer_prefix"][:10]


def test_the_fixture_is_rulers_and_holds_nothing_the_shell_would_change() -> None:
    assert RULER["source"] == "NVIDIA/RULER"
    assert RULER["commit"] == "c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a"
    assert len(MODEL_TEMPLATES) == 11 and "{task_template}" in MODEL_TEMPLATES["Phi3"]
    for text in [*MODEL_TEMPLATES.values(), *(t["template"] for t in TASK_TEMPLATES.values())]:
        assert not set(text) & set('"$`\\'), text
    # RULER's rewording of the model template is what its own prompts read.
    worded = MODEL_TEMPLATES["lwm-chat"]
    for old, new in SINGLE:
        worded = worded.replace(old, new)
    assert worded.startswith("You is a helpful assistant.")


@pytest.fixture(scope="module")
def questions() -> dict[str, list[str]]:
    return {
        "qa_1": [q.query for q in load_squad(FIXTURES / "squad.json").questions],
        "qa_2": [q.query for q in load_hotpotqa(FIXTURES / "hotpotqa.json").questions],
    }


def _fields(sample, questions: dict[str, list[str]]) -> dict[str, str]:
    meta = sample.meta
    fields = {"C": sample.context}
    if "queries" in meta:  # niah: RULER's join of several queries
        q = meta["queries"]
        fields["Q"] = ", ".join(q[:-1]) + ", and " + q[-1] if len(q) > 1 else q[0]
    elif sample.task == "vt":
        fields["Q"] = meta["value"]
    elif sample.task in questions:
        fields["Q"] = questions[sample.task][meta["question_index"]]
    return fields


EXACT_IN_DEFAULT_RUN = ("base", "Phi3", "meta-llama3")
"""`fill=exact` on these templates in `make test`; on the others in `make test-slow` (a template
wraps the prompt alike under either fill; every template runs under `fill=ruler` in both)."""


def _template_fills() -> list[Any]:
    slow = [pytest.mark.slow]
    return [
        pytest.param(
            template,
            fill,
            marks=slow if fill == "exact" and template not in EXACT_IN_DEFAULT_RUN else [],
            id=f"{template}-{fill}",
        )
        for template in sorted(MODEL_TEMPLATES)
        for fill in ("ruler", "exact")
    ]


@pytest.mark.parametrize(("template", "fill"), _template_fills())
def test_every_prompt_is_rulers_rule_on_rulers_templates(
    qwen_tokenizer, questions, template, fill
) -> None:
    suite = make_suite(
        RulerSuite,
        lengths=LENGTHS,
        samples=SAMPLES,
        essays=str(FIXTURES / "essays.json"),
        squad=str(FIXTURES / "squad.json"),
        hotpotqa=str(FIXTURES / "hotpotqa.json"),
        model_template=template,
        fill=fill,
    )
    ctx = BuildContext(qwen_tokenizer, "completion", GenerationConfig())
    checked = 0
    for task in ALL_TASKS:
        for length in LENGTHS:
            for sample in suite.iter_cell(ctx, task, length, SAMPLES):
                pattern, split_at = rulers_prompt(template, task, _fields(sample, questions))
                prompt = sample.meta["head"] + sample.context + sample.question
                prefix = sample.meta["answer_prefix"]
                assert pattern.fullmatch(prompt + prefix), (task, length, sample.id)
                assert prefix == (prompt + prefix)[(prompt + prefix).rfind(split_at) :]
                checked += 1
    assert checked == len(ALL_TASKS) * len(LENGTHS) * SAMPLES
