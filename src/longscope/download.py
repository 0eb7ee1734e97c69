"""Downloading a suite's input files into a cache, with pinned checksums and resumable transfers.

A suite package declares its downloads in its `__init__.py`: `DATA = {"suite": "module:attr"}`, the
attribute returning a `Sources` (files from URLs, or a Hub dataset at a revision). Nothing here
knows any suite. A file is written as `NAME.part` while it arrives and renamed only once its
sha256 matches the pinned one; a `.part` left by an interrupted transfer is resumed with an HTTP
range request. A checksum that does not match removes the file and is one line, exit 2.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pkgutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from longscope.errors import UsageError
from longscope.files import is_disk_full, open_nofollow, write_atomic

CHUNK = 1 << 16


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


@dataclass(frozen=True)
class Sources:
    """A suite's downloads and how to make them by hand when this machine is offline."""

    suite: str
    files: tuple[FileSource, ...] = ()
    hub: tuple[HubSource, ...] = ()
    by_hand: tuple[str, ...] = ()
    """Inputs no URL gives as one file (how to build them, and where to put them)."""


@dataclass(frozen=True)
class Fetched:
    """What `fetch` did with one file."""

    name: str
    path: Path
    state: str
    """`downloaded`, `resumed`, `cached` (already there and matching) or `hub`."""
    sha256: str
    pinned: bool
    size: int = 0


def cache_root() -> Path:
    """Return the folder downloads go to: `$XDG_CACHE_HOME/longscope/data` or `~/.cache/...`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "longscope" / "data"


def suite_cache(suite: str) -> Path:
    """Return the cache folder of `suite`'s inputs (it may not exist)."""
    return cache_root() / suite


@functools.cache
def _tables() -> dict[str, str]:
    import longscope.suites as suites

    found: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(suites.__path__), key=lambda i: i.name):
        if info.ispkg:
            module = importlib.import_module(f"{suites.__name__}.{info.name}")
            found.update(getattr(module, "DATA", {}) or {})
    return found


def sources_of(suite: str) -> Sources:
    """Return the downloads `suite` declares (one line naming those that have some, if none)."""
    tables = _tables()
    target = tables.get(suite)
    if target is None:
        known = ", ".join(sorted(tables)) or "none"
        raise UsageError(f"suite {suite!r} has no data to download: suites with data are {known}")
    module, _, attr = target.partition(":")
    made = getattr(importlib.import_module(module), attr)
    return made() if callable(made) else made


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


class Offline(UsageError):
    """A file could not be reached at all (no network, no such host)."""

    def __init__(self, source: FileSource, folder: Path, why: str) -> None:
        self.source, self.folder, self.why = source, folder, why
        super().__init__(
            f"cannot download {source.what} ({why}): download {source.url} yourself and save it "
            f"as {folder / source.name}"
        )


def _offline(source: FileSource, folder: Path, why: str) -> UsageError:
    return Offline(source, folder, why)


def _transfer(source: FileSource, url: str, part: Path, timeout: float) -> str:
    """Download `url` into `part`, resuming what is there; return `downloaded` or `resumed`."""
    import httpx

    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with httpx.stream(
            "GET", url, headers=headers, timeout=timeout, follow_redirects=True
        ) as response:
            if response.status_code == 416 and have:  # the part is already whole
                return "resumed"
            if response.status_code not in (200, 206):
                _discard(part)  # a part the server no longer serves is junk
                raise UsageError(
                    f"cannot download {source.what}: {url} answered HTTP {response.status_code}"
                )
            resumed = response.status_code == 206 and have > 0
            expected = response.headers.get("content-length")
            # Never through a link planted as the part file: it would be written in its target.
            flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if resumed else os.O_TRUNC)
            got = 0
            with os.fdopen(open_nofollow(part, flags), "wb") as out:
                for block in response.iter_bytes(CHUNK):
                    out.write(block)
                    got += len(block)
            if expected is not None and got < int(expected):
                raise httpx.RemoteProtocolError("the connection closed early")
    except httpx.TimeoutException as exc:
        raise _interrupted(source, part, url, f"timed out: {exc}") from exc
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise _interrupted(source, part, url, str(exc) or type(exc).__name__) from exc
    except httpx.HTTPError as exc:
        _discard(part)
        raise _offline(source, part.parent, f"{type(exc).__name__}: {exc}") from exc
    except OSError as exc:  # the disk: nothing half-written stays behind
        _discard(part)
        if is_disk_full(exc):
            from longscope.files import disk_full

            raise disk_full(part) from exc
        raise UsageError(f"cannot write {part}: {exc.strerror or exc}") from exc
    return "resumed" if resumed else "downloaded"


def _discard(part: Path) -> None:
    """Remove a partial download that cannot be resumed into the pinned file."""
    part.unlink(missing_ok=True)


def _interrupted(source: FileSource, part: Path, url: str, why: str) -> UsageError:
    size = part.stat().st_size if part.exists() else 0
    if source.sha256 is None:
        # Without a pin, a resumed file could not be told from a spliced one: start over.
        _discard(part)
        return UsageError(
            f"download of {source.what} from {url} was interrupted after {size} bytes ({why}); "
            "the partial file was removed: run the same command again"
        )
    return UsageError(
        f"download of {source.what} from {url} was interrupted after {size} bytes ({why}): run "
        "the same command again to resume (the whole file is checked against its sha256)"
    )


def fetch_file(
    source: FileSource,
    folder: Path,
    *,
    mirror: str | None = None,
    timeout: float = 60.0,
) -> Fetched:
    """Download one file into `folder` (resuming, verifying), or check the copy already there."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / source.name
    url = f"{mirror.rstrip('/')}/{source.name}" if mirror else source.url
    state = "cached"
    if not dest.exists():
        part = folder / f"{source.name}.part"
        state = _transfer(source, url, part, timeout)
        digest = sha256_of(part)
        if source.sha256 and digest != source.sha256:
            part.unlink()
            raise UsageError(
                f"checksum mismatch for {source.what} from {url}: sha256 {digest}, pinned "
                f"{source.sha256}; the download was removed (a changed or wrong file)"
            )
        os.replace(part, dest)
    else:
        digest = sha256_of(dest)
        if source.sha256 and digest != source.sha256:
            raise UsageError(
                f"{dest} is not the pinned {source.what} (sha256 {digest}, pinned "
                f"{source.sha256}): remove it and run the same command again"
            )
    if source.unzip:
        _unzip(dest, folder, *source.unzip)
    return Fetched(source.name, dest, state, digest, bool(source.sha256), dest.stat().st_size)


def _unzip(archive: Path, folder: Path, prefix: str, under: str) -> None:
    target = folder / under
    try:
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                if not member.startswith(prefix) or member.endswith("/"):
                    continue
                relative = Path(member)
                if relative.is_absolute() or ".." in relative.parts:
                    raise UsageError(f"{archive}: unsafe member {member!r} in the archive")
                write_atomic(target / relative, z.read(member))
    except zipfile.BadZipFile as exc:
        archive.unlink(missing_ok=True)
        raise UsageError(
            f"{archive} is not a zip archive: it was removed; run the same command again"
        ) from exc


def fetch_hub(source: HubSource, folder: Path) -> Fetched:
    """Download a Hub dataset snapshot at its revision into `folder/<folder>`."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise UsageError(
            f"downloading {source.what} needs `pip install huggingface_hub` (or datasets)"
        ) from exc
    target = folder / source.folder
    try:
        path = snapshot_download(
            source.repo_id, repo_type="dataset", revision=source.revision, local_dir=str(target)
        )
    except Exception as exc:  # the Hub client raises many unrelated types when offline
        raise UsageError(
            f"cannot download {source.what} from the Hub ({type(exc).__name__}): on a machine "
            f"online, `huggingface-cli download --repo-type dataset {source.repo_id}"
            f"{' --revision ' + source.revision if source.revision else ''} --local-dir {target}`"
        ) from exc
    return Fetched(
        source.repo_id, Path(path), "hub", source.revision or "main", bool(source.revision)
    )


def fetch(
    sources: Sources,
    folder: Path | None = None,
    *,
    mirror: str | None = None,
    timeout: float = 60.0,
    only: Sequence[str] = (),
) -> list[Fetched]:
    """Download every input of `sources` into `folder` (default: the suite's cache folder)."""
    folder = Path(folder) if folder is not None else suite_cache(sources.suite)
    done: list[Fetched] = []
    unreached: list[Offline] = []
    for source in sources.files:
        if only and source.name not in only:
            continue
        try:
            done.append(fetch_file(source, folder, mirror=mirror, timeout=timeout))
        except Offline as exc:  # the others may still come; then say what to fetch by hand
            unreached.append(exc)
    if len(unreached) == 1:
        raise unreached[0]
    if unreached:
        wanted = "; ".join(
            [f"{e.source.url} as {e.source.name}" for e in unreached] + list(sources.by_hand)
        )
        raise UsageError(
            f"cannot download {len(unreached)} of {sources.suite}'s files ({unreached[0].why}): "
            f"download them yourself into {folder}: {wanted}"
        )
    done += [fetch_hub(h, folder) for h in sources.hub if not only]
    return done
