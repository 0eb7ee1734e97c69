"""What a suite downloads: files from URLs with pinned checksums, Hub datasets at a revision, and
what must be made by hand. A suite returns one `Sources` from `Suite.sources()`; `longscope.download`
fetches it. Plain values, below both `suites` and `download`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileSource:
    """One file: where it comes from, its pinned sha256 (None: not pinned) and how to unpack it."""

    name: str
    """The file's name in the cache folder (what the suite looks for)."""
    url: str
    sha256: str | None
    what: str
    """What the file is, for messages (`SQuAD v2 dev`)."""
    unzip: tuple[str, str] | None = None
    """(member prefix in the zip, folder under the cache) to extract after the download."""


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face Hub dataset at a revision, downloaded by `huggingface_hub`."""

    repo_id: str
    revision: str | None
    """None: the Hub's current `main` (not pinned)."""
    what: str
    folder: str = "hub"
    patterns: tuple[str, ...] = ()
    """Only the files matching these globs (huggingface_hub's `allow_patterns`); empty: all."""


@dataclass(frozen=True)
class Sources:
    """A suite's downloads and how to make them by hand when this machine is offline."""

    suite: str
    files: tuple[FileSource, ...] = ()
    hub: tuple[HubSource, ...] = ()
    by_hand: tuple[str, ...] = ()
    """Inputs no URL gives as one file (how to build them, and where to put them)."""


__all__ = ["FileSource", "HubSource", "Sources"]
