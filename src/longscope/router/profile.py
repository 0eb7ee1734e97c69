"""Model profiles as the router reads them: the file `longscope profile` writes, checked at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.errors import UsageError, describe_error

Basis = Literal["absolute", "relative"]


class _Measured(BaseModel):
    model_config = ConfigDict(extra="ignore")

    suite: str
    effective_length: int | None = None
    relative_effective_length: int | None = None


class _ProfileFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    claimed_context: int | None = None
    effective_context: int | None = None
    measured: list[_Measured] = []
    date: str = ""


@dataclass(frozen=True)
class RouterProfile:
    """What the router needs from a profile: the effective lengths and where they came from."""

    path: str
    model: str
    claimed: int | None
    absolute: int | None
    """Largest length at or above the absolute threshold (RULER 85.6), across the measured suites."""
    relative: int | None
    """Largest length at or above the relative threshold (a share of the model's own base score)."""
    date: str

    def effective(self, basis: Basis) -> int | None:
        return self.absolute if basis == "absolute" else self.relative


def load_profile(path: str | Path) -> RouterProfile:
    """Read a profile written by `longscope profile`; a bad file fails in one line."""
    from longscope.files import decode_text, parse_json

    try:
        data_bytes = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read profile {path}: {exc.strerror or exc}") from exc
    # empty, binary, not UTF-8, malformed or too deeply nested: one line naming the file
    raw = parse_json(decode_text(data_bytes, path, "profile"), str(path))
    try:
        data = _ProfileFile.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(f"{path}: {describe_error(exc)}") from exc
    relative = [m.relative_effective_length for m in data.measured if m.relative_effective_length]
    return RouterProfile(
        path=str(path),
        model=data.model,
        claimed=data.claimed_context,
        absolute=data.effective_context,
        relative=min(relative) if relative else None,
        date=data.date,
    )
