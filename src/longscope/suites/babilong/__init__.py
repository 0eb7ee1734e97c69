"""BABILong (Kuratov et al., NeurIPS 2024): bAbI's 20 reasoning tasks hidden in PG-19 text.

Rooms, in dependency order: `schema` (the dataset's rows and names), `scoring` (the authors'
`compare_answers`), `prompts` (the authors' prompt pieces and assembly), `data` (where rows come
from: the Hub's files at a pinned revision, or a local folder in their layout), `published` (the
authors' published predictions, re-scored as their `collect_results.py` does), `suite` (the suite
class: cells, samples, scores and the summary).
"""

SUITES = {"babilong": "longscope.suites.babilong.suite:BabilongSuite"}
