"""BABILong's answer checking: the authors' `compare_answers`, reproduced rule for rule.

Source: `babilong/metrics.py` of github.com/booydar/babilong at commit
7a6efee29f5cac03c3c410e6799c80fd2ffe3610 (`TASK_LABELS`, `preprocess_output`, `compare_answers`);
`babilong/collect_results.py` at the same commit applies it to every row of a prediction file
(an empty or missing output read as the empty string) and reports 100 * correct / rows.

The rules, as their code has them (quirks kept, never fixed: the published numbers depend on them):

1. The output is lower-cased, then cut at the first `.`, then at `<context>`, then at `<example>`,
   then at `Question`. The last cut never fires: the text is already lower case.
2. A label of the task counts as *in the output* when it is a substring of it (`no` is in
   `not`; `one` is in `none`); labels that are substrings of the lower-cased question never count
   (a question never has its own words as the answer).
3. A target with a comma and more than three characters (qa8's `apple,milk`) is right when every
   comma-separated part is among the output's labels and the output has no other label. Any other
   target (qa19's `n,w` has three characters) is right when it is the output's one and only label.

Consequences the docs state: qa7's `none` is never right (its output always holds `one` too);
qa8's `nothing` is right only alone; a target outside the task's labels is never right.

4. The output reaches the metric through a CSV: `scripts/run_model_on_babilong.py` writes the
   stripped output with `DataFrame.to_csv`, and `collect_results.py` reads it back with
   `pd.read_csv` (pandas 2.2.2, the repository's `requirements.txt`) and `fillna('')`. pandas reads
   a field that is exactly one of its default NA strings (`None`, `NA`, `null`, `nan`, ...) as
   missing, so such an output is scored as the empty string: a bare `None` to a yes/no question
   whose answer is `no` is wrong there, although `no` is in `none` (`collected_output`).
"""

from __future__ import annotations

from longscope.suites.babilong.schema import check_task

SOURCE = "booydar/babilong babilong/metrics.py@7a6efee29f5cac03c3c410e6799c80fd2ffe3610"

TASK_LABELS: dict[str, tuple[str, ...]] = {
    "qa1": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa2": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa3": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa4": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
    "qa6": ("no", "yes"),
    "qa7": ("none", "one", "three", "two"),
    "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": ("no", "yes"),
    "qa10": ("maybe", "no", "yes"),
    "qa11": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa12": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa13": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa14": ("bedroom", "cinema", "kitchen", "office", "park", "school"),
    "qa15": ("cat", "mouse", "sheep", "wolf"),
    "qa16": ("gray", "green", "white", "yellow"),
    "qa17": ("no", "yes"),
    "qa18": ("no", "yes"),
    "qa19": ("e,e", "e,n", "e,s", "n,e", "n,n", "n,w", "s,e", "s,s", "s,w", "w,n", "w,s", "w,w"),
    "qa20": ("bedroom", "bored", "garden", "hungry", "kitchen", "thirsty", "tired"),
}
"""Each task's answer labels, as `TASK_LABELS` in the authors' metrics.py."""


PANDAS_NA_STRINGS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
"""pandas 2.2.2's default `na_values` of `read_csv` (`pandas._libs.parsers.STR_NA_VALUES`)."""


def collected_output(output: str) -> str:
    """Return the output as `collect_results.py` reads it back from the CSV (rule 4 of the module):
    the empty string when the stripped output is one of pandas' NA strings, else the output."""
    stripped = output.strip()
    return "" if stripped in PANDAS_NA_STRINGS else stripped


def preprocess_output(output: str) -> str:
    """Return the part of a model's output the authors' metric reads (rule 1 of the module)."""
    text = output.lower()
    text = text.split(".")[0]
    text = text.split("<context>")[0]
    text = text.split("<example>")[0]
    # The authors cut at "Question" after lower-casing: it never matches; kept for fidelity.
    return text.split("Question")[0]


def compare_answers(target: str, output: str, question: str, labels: tuple[str, ...]) -> bool:
    """Return whether `output` answers `target` by the authors' rules, given the task's labels."""
    text = preprocess_output(output)
    gold = target.lower()
    label_set = {label.lower() for label in labels}
    asked = {label for label in label_set if label in question.lower()}
    said = {label for label in label_set if label in text} - asked
    if "," in gold and len(gold) > 3:
        parts = gold.split(",")
        return all(part in said for part in parts) and len(said) == len(parts)
    return gold in said and len(said) == 1


def is_correct(task: str, target: str, output: str, question: str) -> bool:
    """Return whether `output` is right for a row of `task` (qa1-qa20) by the authors' metric."""
    return compare_answers(target, output, question, TASK_LABELS[check_task(task)])


def accuracy(correct: int, rows: int) -> float:
    """Return the authors' cell score: 100 * correct / rows, and 0 for an empty file."""
    return 100.0 * correct / rows if rows > 0 else 0.0
