"""Tokenizers whose counts are known by hand, and small pools written as the user would give them."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parents[2] / "fixtures"
GOV_REPORT = str(FIXTURES / "longbench_v1_gov_report.jsonl")
# LongBench v1 rows for the real tasks (CPython's docs serve the others offline)
LONGBENCH_V1 = {
    "single_doc_qa": str(FIXTURES / "longbench_v1_qa.jsonl"),
    "multi_doc_qa": str(FIXTURES / "longbench_v1_hotpotqa.jsonl"),
    "single_doc_sum": GOV_REPORT,
    "multi_doc_sum": str(FIXTURES / "longbench_v1_multi_news.jsonl"),
}


class CharTokenizer:
    """One token per character: every count in a prompt can be checked with `len`."""

    exact = True

    def __init__(self, name: str = "chars") -> None:
        self.name = name

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


class SeamTokenizer(CharTokenizer):
    """One token per character, except `\\nQ`, one token: a passage opening with "Q" does not add
    up (its header and body, counted apart, are one token more than the two joined)."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text.replace("\nQ", "\x01")]


def write_pool(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


# The authors' frame of each task, written out by hand from uservan/100-LongBench's
# config/dataset2prompt.json at commit 1254aae707c99f5420b172627be48192113356d4 (its `{input}`,
# and the QA tasks' "{instruction}\n\nQuestion: {input}", are our `{question}`). The suite keeps
# its own copy (suites/hundred/prompts.py): the two are written apart so that either can be wrong.
FRAMES = {
    "single_doc_qa": (
        "Answer the question based on the given passages. Only give me the answer and do not "
        "output any other words.\n\nThe following are given passages and these passages are from "
        "many different fields.\n\n{context}\n\nAnswer the question based on the given passages "
        "following the instruction: \n{question}\nOnly give me the answer and do not output any "
        "other words. Answer:\n"
    ),
    "single_doc_sum": (
        "You are given several passages as follows, but not all of them need to be summarized."
        "\n\n{context}\n\nPlease follow these instructions:\n1.{question}\n2.Ignore and do not "
        "summarize any passages not listed above.\n3.For the selected passages, the summary should "
        "include: the main arguments or conclusions of each article, the key evidence or "
        "supporting data presented and any unique or innovative points made in the passages.\n4."
        "The summary should be concise, focusing only on the most important information from the "
        "passages. Now, please generate the summary for the specified passage, following the "
        "instructions carefully.\nSummary:\n"
    ),
    "multi_doc_sum": (
        "You are given several passages as follows, but not all of them need to be summarized."
        "\n\n{context}\n\nPlease follow these instructions:\n1.{question}\n2.Ignore and do not "
        "summarize any passages not listed above.\n3.All the selected passages should be "
        "summarized into a few short sentences and do not summarize each selected passages "
        "separately. The summary should include: the main arguments or conclusions of each "
        "article, the key evidence or supporting data presented and any unique or innovative "
        "points made in the passages.\n4.The summary should be concise, focusing only on the most "
        "important information from the passages. Now, please combine and summarize the main "
        "ideas from the selected relevant passages into one cohesive summary, following the "
        "instructions carefully.\n\nSummary:\n"
    ),
    "passage_retrieval": (
        "Here are some passages from many different fields, along with an summarization. Please "
        "determine which passage the summarization is from.\n\n{context}\n\nThe following is a "
        "summarization.\n\n{question}\n\nPlease enter the number of the passage that the "
        'summarization is from. The answer format must be like "Passage 1", "Passage 2", etc.'
        "\n\nThe answer is Passage "
    ),
    "kv_retrieval": (
        "There are some passages below sourced from many different fields.\n\n{context}\n\nGiven "
        "several key-value pairs in these passages, you need to find the value of the key. Read "
        "the question related with these key-value pairs and give the correct answer. {question} "
    ),
    "counting_stars": (
        "There are some passages below sourced from many different fields.\n\n{context}\n\nOnly "
        "output the results without any explanation. Read the following question and give the "
        "correct answer: {question}\nThe final answer is: "
    ),
    "passage_count": (
        "There are some paragraphs below sourced from many different fields. Some of them may be "
        "duplicates. Please carefully read these paragraphs and determine how many unique "
        "paragraphs there are after removing duplicates. In other words, how many non-repeating "
        "paragraphs are there in total?\n\n{context}\n\nPlease enter the final count of unique "
        "paragraphs after removing duplicates. The output format should only contain the number, "
        "such as 1, 2, 3, and so on.\n\nThe final answer is: "
    ),
    # `qa_old`: the QA filter's question with no context (its trailing space included)
    "no_context": (
        "Answer the question as concisely as you can, using a single phrase or sentence if "
        'possible. If the question cannot be answered, write "unanswerable". Do not provide any '
        "explanation. Question: {question}\nOnly give me the answer and do not output any other "
        "words. Answer:\n "
    ),
}
FRAMES["multi_doc_qa"] = FRAMES["single_doc_qa"]


def rendered(task: str, context: str, question: str) -> str:
    """The text a model is sent for `task` (the prompt, or the one user message: the same)."""
    return FRAMES[task].format(context=context, question=question)
