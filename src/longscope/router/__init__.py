"""The context-budget router (docs/benchmarks/effective-context.md, docs/router-api.md)."""

from longscope.router.backend import STRATEGIES, RoutedBackend, describe_routes, with_router
from longscope.router.chunks import chunk_context
from longscope.router.decide import Route, decide
from longscope.router.fit import Decision, fit, route
from longscope.router.profile import RouterProfile, load_profile

__all__ = [
    "STRATEGIES",
    "Decision",
    "Route",
    "RoutedBackend",
    "RouterProfile",
    "chunk_context",
    "decide",
    "describe_routes",
    "fit",
    "load_profile",
    "route",
    "with_router",
]
