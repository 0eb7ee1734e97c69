"""NoLiMa (adobe-research, ICML 2025): needle in a haystack without literal matches.

Not registered yet: the suite class waits for the registry rework (issue 41). This package holds
what does not depend on it: the needle-set schema, the authors' scorer, prompts and placement, the
published tables and the data layout.
"""
