"""LongBench v2: 503 expert-written multiple-choice questions over 8K-2M words, official prompts."""

SUITES = {"longbench-v2": "longscope.suites.longbench_v2.suite:LongBenchV2Suite"}
