"""OpenAI MRCR: multi-round co-reference in a long chat, graded and binned as OpenAI defines it."""

SUITES = {"mrcr": "longscope.suites.mrcr.suite:MrcrSuite"}
