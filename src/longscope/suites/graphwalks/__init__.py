"""OpenAI GraphWalks: BFS and parent finding over an edge list, graded by set F1 as the card defines."""

SUITES = {"graphwalks": "longscope.suites.graphwalks.suite:GraphWalksSuite"}
