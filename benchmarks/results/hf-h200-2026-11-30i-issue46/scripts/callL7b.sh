#!/bin/bash
# Issue 46, seventeenth pass (carry [".gpu/g46"]), right after callM3.sh on the same machine: the
# 64-row step without the norms, then without the rotary, to split callL7's norms+rotary saving.
ROWS=64 ABLATE="norms:rope" bash .gpu/g46/callL7.sh
