"""LongProc (Princeton, COLM 2025): long procedural generation, graded by the authors' rules."""

SUITES = {"longproc": "longscope.suites.longproc.suite:LongProcSuite"}
