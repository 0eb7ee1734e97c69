"""100-LongBench's prompts: the authors' instruction around each task's context, word for word.

The texts are the reference benchmark's (uservan/100-LongBench, config/dataset2prompt.json at
1254aae707c99f5420b172627be48192113356d4), with its `{input}` (and the QA tasks'
`{instruction}`) as our `{question}`: what each task asks stays in the sample, the frame is here.
The reference sends the same text to base models and, as the one user message, to chat models, so
both modes get it unchanged; the answer prefix ("Answer:", "The final answer is: ", ...) ends
every frame.
"""

from __future__ import annotations

from dataclasses import dataclass

from longscope.suites.base import PromptTemplate
from longscope.types import Message, PromptMode, Sample

NO_CONTEXT = "no_context"
"""The QA filter's frame: the question alone (the reference's `qa_old`)."""

_QA = (
    "Answer the question based on the given passages. Only give me the answer and do not output "
    "any other words.\n\nThe following are given passages and these passages are from many "
    "different fields.\n\n{context}\n\nAnswer the question based on the given passages following "
    "the instruction: \n{question}\nOnly give me the answer and do not output any other words. "
    "Answer:\n"
)
_SUM_HEAD = (
    "You are given several passages as follows, but not all of them need to be summarized.\n\n"
    "{context}\n\nPlease follow these instructions:\n1.{question}\n2.Ignore and do not summarize "
    "any passages not listed above.\n3."
)
_SUM_WHAT = (
    "the main arguments or conclusions of each article, the key evidence or supporting data "
    "presented and any unique or innovative points made in the passages.\n4.The summary should be "
    "concise, focusing only on the most important information from the passages. Now, please "
)
_FIELDS = "There are some passages below sourced from many different fields.\n\n{context}\n\n"

TEMPLATES = {
    "single_doc_qa": _QA,
    "multi_doc_qa": _QA,
    "single_doc_sum": (
        _SUM_HEAD
        + "For the selected passages, the summary should include: "
        + _SUM_WHAT
        + "generate the summary for the specified passage, following the instructions carefully."
        "\nSummary:\n"
    ),
    "multi_doc_sum": (
        _SUM_HEAD
        + "All the selected passages should be summarized into a few short sentences and do not "
        "summarize each selected passages separately. The summary should include: "
        + _SUM_WHAT
        + "combine and summarize the main ideas from the selected relevant passages into one "
        "cohesive summary, following the instructions carefully.\n\nSummary:\n"
    ),
    "passage_retrieval": (
        "Here are some passages from many different fields, along with an summarization. Please "
        "determine which passage the summarization is from.\n\n{context}\n\nThe following is a "
        "summarization.\n\n{question}\n\nPlease enter the number of the passage that the "
        'summarization is from. The answer format must be like "Passage 1", "Passage 2", etc.\n\n'
        "The answer is Passage "
    ),
    "kv_retrieval": (
        _FIELDS + "Given several key-value pairs in these passages, you need to find the value of "
        "the key. Read the question related with these key-value pairs and give the correct "
        "answer. {question} "
    ),
    "counting_stars": (
        _FIELDS + "Only output the results without any explanation. Read the following question "
        "and give the correct answer: {question}\nThe final answer is: "
    ),
    # The reference's frame has no {input}: the question is the frame, ours is empty.
    "passage_count": (
        "There are some paragraphs below sourced from many different fields. Some of them may be "
        "duplicates. Please carefully read these paragraphs and determine how many unique "
        "paragraphs there are after removing duplicates. In other words, how many non-repeating "
        "paragraphs are there in total?\n\n{context}\n\nPlease enter the final count of unique "
        "paragraphs after removing duplicates. The output format should only contain the number, "
        "such as 1, 2, 3, and so on.\n\nThe final answer is: {question}"
    ),
    # No context at all (the reference formats `qa_old`, which has no {context}, trailing space
    # included); `{context}` is kept only so that the frame can be cut around an empty context.
    NO_CONTEXT: (
        "{context}Answer the question as concisely as you can, using a single phrase or sentence "
        'if possible. If the question cannot be answered, write "unanswerable". Do not provide any '
        "explanation. Question: {question}\nOnly give me the answer and do not output any other "
        "words. Answer:\n "
    ),
}


@dataclass(frozen=True)
class HundredTemplate(PromptTemplate):
    """Each task's own frame (`TEMPLATES`); the no-context twin of a QA sample gets `qa_old`'s."""

    body: str = ""
    answer_prefix: str = ""

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return (prompt, messages): the same text in both modes, as the reference sends it."""
        frame = TEMPLATES[NO_CONTEXT if sample.meta.get(NO_CONTEXT) else sample.task]
        text = frame.format(context=sample.context, question=sample.question)
        if mode == "completion":
            return text, ()
        return "", (Message("user", text),)
