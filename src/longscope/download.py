"""Downloading a suite's input files into a cache, with pinned checksums and resumable transfers.

A suite declares its downloads by its `sources()` (files from URLs, or a Hub dataset at a
revision: `longscope.sources`), so a plug-in suite gets `longscope data` with nothing else to
register; the data-source registry (`DATA`) finds them. Nothing here knows any suite. A file is written as `NAME.part` while it arrives and renamed only once its
sha256 matches the pinned one; a `.part` left by an interrupted transfer is resumed with an HTTP
range request. A checksum that does not match removes the file and is one line, exit 2.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import is_disk_full, open_nofollow, sha256_of, write_atomic
from longscope.plugins import Registry
from longscope.sources import FileSource, HubSource, Sources

CHUNK = 1 << 16
MIN_RATE = 16 * 1024
"""Bytes per second a download must keep on average once its first `timeout` seconds are past:
the transfer's overall deadline is `timeout` + bytes received / MIN_RATE (a file of 100 MB gets
about 1 h 45 min), so a mirror that drips a few bytes a second ends as interrupted (resumable)."""


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


def _suite_sources() -> dict[str, Any]:
    """Every suite that declares downloads (`Suite.sources()`), as its `sources` method."""
    from longscope.suites import REGISTRY as SUITES

    found = {}
    for name in SUITES.names():
        suite = SUITES.get(name)
        if suite.sources() is not None:
            found[name] = suite.sources
    return found


DATA: Registry[Callable[[], Sources]] = Registry(
    "data source", "longscope.data", _suite_sources, cached=False
)
"""Name -> a callable returning `Sources`: every suite that declares some (`Suite.sources()`), the
`longscope.data` entry-point group, and `DATA.register` at run time."""


def sources_of(suite: str) -> Sources:
    """Return the downloads `suite` declares (one line naming those that have some, if none)."""
    if suite not in DATA:
        known = ", ".join(DATA.names()) or "none"
        raise UsageError(f"suite {suite!r} has no data to download: suites with data are {known}")
    made = DATA.get(suite)()
    if made is None:  # a plug-in named here that declares nothing after all
        raise UsageError(f"suite {suite!r} has no data to download")
    return made


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
            started = time.monotonic()
            with os.fdopen(open_nofollow(part, flags), "wb") as out:
                # Each piece as it arrives: a mirror dripping bytes never trips the read timeout,
                # so the whole transfer is bounded here by the rate it must keep on average.
                for block in response.iter_bytes():
                    out.write(block)
                    got += len(block)
                    late = time.monotonic() - started - timeout
                    if late > 0 and got < late * MIN_RATE:
                        raise _interrupted(
                            source, part, url,
                            f"slower than {MIN_RATE:,} bytes/s on average after the first "
                            f"{timeout:g} s: {got:,} bytes in {late + timeout:.0f} s",
                        )  # fmt: skip
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
    return UsageError(
        f"download of {source.what} from {url} was interrupted after {size} bytes ({why}): run "
        "the same command again to resume"
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
    dest.parent.mkdir(parents=True, exist_ok=True)  # a name may keep its dataset's folders
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
            source.repo_id,
            repo_type="dataset",
            revision=source.revision,
            local_dir=str(target),
            allow_patterns=list(source.patterns) or None,
        )
    except Exception as exc:  # the Hub client raises many unrelated types when offline
        raise UsageError(
            f"cannot download {source.what} from the Hub ({type(exc).__name__}): on a machine "
            f"online, `hf download --repo-type dataset {source.repo_id}"
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


def download_lines(
    suite: str, folder: str | Path | None = None, *, mirror: str | None = None
) -> list[str]:
    """Download `suite`'s inputs into `folder` (default: its cache); return one line per file,
    then one per input made by hand."""
    sources = sources_of(suite)
    done = fetch(sources, Path(folder) if folder else None, mirror=mirror)
    lines = [
        f"{f.state}: {f.path} (sha256 {f.sha256}{'' if f.pinned else ', not pinned'})" for f in done
    ]
    target = Path(folder) if folder else suite_cache(sources.suite)
    return lines + [f"by hand: {text} (into {target})" for text in sources.by_hand]
