"""Moved to `longscope.params` (below both suites and models); kept so that imports of the old
path keep working while suites written against it land."""

from longscope.params import *  # noqa: F403
from longscope.params import __all__  # noqa: F401
