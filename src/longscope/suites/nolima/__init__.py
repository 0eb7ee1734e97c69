"""NoLiMa (adobe-research, ICML 2025): needle in a haystack without literal matches.

Rooms in dependency order: `schema` (the needle sets' files), `data` (a local folder or the Hub,
pinned; the licence), `scoring` (the authors' metrics, base score, effective length), `prompts`
(templates and needle placement), `published` (the README's tables), `summary`, `suite`.
"""

SUITES = {"nolima": "longscope.suites.nolima.suite:NoLiMaSuite"}
