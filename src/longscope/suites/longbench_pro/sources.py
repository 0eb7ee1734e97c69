"""Where LongBench Pro's data comes from: its Hub dataset, for `longscope data longbench-pro`."""

from __future__ import annotations

from longscope.download import HubSource, Sources
from longscope.suites.longbench_pro.loader import HUB_DATASET

REVISION: str | None = None
"""The dataset commit to pin. None: the Hub's `main` (no commit could be looked up offline where
this was written); set it to the commit a run was measured on."""


def sources() -> Sources:
    """Return LongBench Pro's download: its Hub dataset at `REVISION`."""
    return Sources(
        "longbench-pro",
        hub=(HubSource(HUB_DATASET, REVISION, f"LongBench Pro ({HUB_DATASET})"),),
    )
