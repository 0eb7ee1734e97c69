"""`files.sha256_of`: the one file digest every data source and download uses (issue 41)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from longscope.files import sha256_of


def test_the_digest_of_a_file_read_in_blocks_is_its_sha256(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # past one 1 MiB block
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert sha256_of(path) == hashlib.sha256(data).hexdigest()
    assert sha256_of(str(path)) == sha256_of(path)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert sha256_of(empty) == hashlib.sha256(b"").hexdigest()
