"""LongCtx: synthetic needle, position-bias, multi-fact and reasoning tasks."""

SUITES = {"longctx": "longscope.suites.longctx.suite:LongCtxSuite"}
