"""LongBench Pro: 1,500 bilingual samples, scored and summarised as the official code does."""

SUITES = {"longbench-pro": "longscope.suites.longbench_pro.suite:LongBenchProSuite"}
