"""The context-budget router (docs/benchmarks/effective-context.md)."""

from longscope.router.backend import STRATEGIES, RoutedBackend, describe_routes, with_router
from longscope.router.chunks import chunk_context
from longscope.router.profile import RouterProfile, load_profile

__all__ = [
    "STRATEGIES",
    "RoutedBackend",
    "RouterProfile",
    "chunk_context",
    "describe_routes",
    "load_profile",
    "with_router",
]
