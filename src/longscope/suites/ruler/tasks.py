"""RULER's 13 tasks as its `scripts/synthetic.yaml` configures them, with its prompts and budgets.

Source: NVIDIA/RULER (Apache-2.0) at c3f5e3b, `scripts/synthetic.yaml`,
`scripts/data/synthetic/constants.py`, `scripts/eval/synthetic/constants.py`. The prompt strings are
RULER's verbatim (they are what a published score was measured on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Generator = Literal[
    "niah", "variable_tracking", "common_words_extraction", "freq_words_extraction", "qa"
]
Metric = Literal["string_match_all", "string_match_part"]

RULER_REVISION = "NVIDIA/RULER@c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a"
DEFAULT_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)
DEFAULT_SAMPLES = 500
DEFAULT_SEED = 42


@dataclass(frozen=True)
class TaskTemplate:
    """One generator's prompt (`{context}` and `{query}` fields), answer prefix and output budget."""

    template: str
    answer_prefix: str
    tokens_to_generate: int
    metric: Metric


TEMPLATES: dict[Generator, TaskTemplate] = {
    "niah": TaskTemplate(
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
        "memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are "
        "all the special magic {type_needle_v} for {query} mentioned in the provided text?",
        " The special magic {type_needle_v} for {query} mentioned in the provided text are",
        128,
        "string_match_all",
    ),
    "variable_tracking": TaskTemplate(
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
        "{context}\nQuestion: Find all variables that are assigned the value {query} in the text "
        "above.",
        " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
        "variables are assigned the value {query}, they are: ",
        30,
        "string_match_all",
    ),
    "common_words_extraction": TaskTemplate(
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most "
        "common words in the above list?",
        " Answer: The top 10 words that appear most often in the list are:",
        120,
        "string_match_all",
    ),
    "freq_words_extraction": TaskTemplate(
        "Read the following coded text and track the frequency of each coded word. Find the three "
        "most frequently appeared coded words. {context}\nQuestion: Do not provide any "
        "explanation. Please ignore the dots '....'. What are the three most frequently appeared "
        "words in the above coded text?",
        " Answer: According to the coded text above, the three most frequently appeared words are:",
        50,
        "string_match_all",
    ),
    "qa": TaskTemplate(
        "Answer the question based on the given documents. Only give me the answer and do not "
        "output any other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the "
        "question based on the given documents. Only give me the answer and do not output any "
        "other words.\n\nQuestion: {query}",
        " Answer:",
        32,
        "string_match_part",
    ),
}


# niah.py's wording for a single answer (`num_needle_q * num_needle_v == 1`), applied in this order to
# the whole template it is handed: the model template too ("You is a helpful assistant" in lwm-chat,
# "polite answer to the user's questions" in vicuna-chat), as RULER's own prompts read.
SINGLE_ANSWER_WORDING: tuple[tuple[str, str], ...] = (
    ("Some", "A"),
    ("are all", "is"),
    ("are", "is"),
    ("answers", "answer"),
)


# RULER's model templates (scripts/data/template.py): how RULER wraps a task for a model it prompts
# as plain text. `base` is RULER's default; the answer prefix always follows the wrapped task.
MODEL_TEMPLATES: dict[str, str] = {
    "base": "{task_template}",
    "meta-chat": "[INST] {task_template} [/INST]",
    "vicuna-chat": "A chat between a curious user and an artificial intelligence assistant. The "
    "assistant gives helpful, detailed, and polite answers to the user's questions. USER: "
    "{task_template} ASSISTANT:",
    "lwm-chat": "You are a helpful assistant. USER: {task_template} ASSISTANT: ",
    "command-r-chat": "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|USER_TOKEN|>{task_template}"
    "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    "chatglm-chat": "[gMASK]sop<|user|> \n {task_template}<|assistant|> \n ",
    "RWKV": "User: hi\n\nAssistant: Hi. I am your assistant and I will provide expert full "
    "response in full details. Please feel free to ask any question and I will always answer "
    "it\n\nUser: {task_template}\n\nAssistant:",
    "Phi3": "<|user|>\n{task_template}<|end|>\n<|assistant|>\n",
    "meta-llama3": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{task_template}"
    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    "jamba": "<|startoftext|><|bom|><|system|> <|eom|><|bom|><|user|> {task_template}<|eom|><|bom|>"
    "<|assistant|>",
    "nemotron5-instruct": "<SPECIAL_10>System\n\n<SPECIAL_11>User\n{task_template}\n"
    "<SPECIAL_11>Assistant\n",
}


@dataclass(frozen=True)
class Task:
    """A configured RULER task: its generator and the arguments synthetic.yaml gives it."""

    name: str
    generator: Generator
    args: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def template(self) -> TaskTemplate:
        return TEMPLATES[self.generator]

    @property
    def haystack(self) -> str:
        """Return the haystack kind this task reads (noise, essay, needle, words, coded, documents)."""
        if self.generator in ("niah", "variable_tracking"):
            return str(self.args["type_haystack"])
        if self.generator == "qa":
            return str(self.args["dataset"])
        return "words" if self.generator == "common_words_extraction" else "coded"


def _niah(haystack: str, k: str, v: str, nk: int = 1, nv: int = 1, nq: int = 1) -> dict[str, Any]:
    return {
        "type_haystack": haystack,
        "type_needle_k": k,
        "type_needle_v": v,
        "num_needle_k": nk,
        "num_needle_v": nv,
        "num_needle_q": nq,
    }


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("niah_single_1", "niah", _niah("noise", "words", "numbers")),
        Task("niah_single_2", "niah", _niah("essay", "words", "numbers")),
        Task("niah_single_3", "niah", _niah("essay", "words", "uuids")),
        Task("niah_multikey_1", "niah", _niah("essay", "words", "numbers", nk=4)),
        Task("niah_multikey_2", "niah", _niah("needle", "words", "numbers")),
        Task("niah_multikey_3", "niah", _niah("needle", "uuids", "uuids")),
        Task("niah_multivalue", "niah", _niah("essay", "words", "numbers", nv=4)),
        Task("niah_multiquery", "niah", _niah("essay", "words", "numbers", nq=4)),
        Task("vt", "variable_tracking", {"type_haystack": "noise", "num_chains": 1, "num_hops": 4}),
        Task("cwe", "common_words_extraction", {"freq_cw": 30, "freq_ucw": 3, "num_cw": 10}),
        Task("fwe", "freq_words_extraction", {"alpha": 2.0}),
        Task("qa_1", "qa", {"dataset": "squad"}),
        Task("qa_2", "qa", {"dataset": "hotpotqa"}),
    )
}
ALL_TASKS = tuple(TASKS)
