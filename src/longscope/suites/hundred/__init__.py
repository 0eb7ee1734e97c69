"""100-LongBench: length-controllable contexts from real documents, and LongScore."""

SUITES = {"hundred": "longscope.suites.hundred.suite:HundredSuite"}
