"""Every common server's "does not fit" answer becomes `context_overflow` (final, sent once).

The bodies below are written out here, independently of the table in models/overflow.py, exactly as
each server sends them (status, body shape, type/code, message), from the servers' own code:
- llama.cpp: ggml-org/llama.cpp tools/server/server-common.cpp (format_error_response),
  tools/server/server-context.cpp (the n_ctx check; older builds' wording without the counts);
- vLLM: vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (_validate_input, before
  0.10: the error fields at the top level), vllm/entrypoints/utils.py (get_max_tokens),
  vllm/v1/engine/input_processor.py (_validate_prompt_len);
- SGLang: sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py
  (_validate_one_request), python/sglang/srt/openai_api/adapter.py (create_error_response);
- text-generation-inference: huggingface/text-generation-inference router/src/validation.rs,
  router/src/server.rs (422, {"error", "error_type"}), router/src/infer/mod.rs;
- Ollama: ollama/ollama llm/llama_server.go, middleware/openai.go, openai/openai.go;
- hosted APIs (OpenAI, Anthropic, Gemini): their documented error bodies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longscope.models.openai_api import OpenAIBackend
from longscope.models.overflow import is_overflow, is_stored_overflow
from longscope.types import GenerationConfig, Message, Request

from ..factories import request
from .fault_server import FaultServer, completion_body

OVERFLOWS: list[tuple[str, int, Any]] = [
    (
        "llama.cpp server",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (9412 tokens) exceeds the available context size "
                "(8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9412,
                "n_ctx": 8192,
            }
        },
    ),
    (
        "llama.cpp server, older builds",
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ),
    (
        "vLLM, prompt alone",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "request has 9000 input tokens. Please reduce the length of the input messages.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
    ),
    (
        "vLLM, prompt + max_tokens",
        400,
        {
            "error": {
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 1000. This "
                "model's maximum context length is 8192 tokens and your request has 7500 input "
                "tokens (1000 > 8192 - 7500). (parameter=max_tokens, value=1000)",
                "type": "BadRequestError",
                "param": "max_tokens",
                "code": 400,
            }
        },
    ),
    (
        "vLLM v1 engine",
        400,
        {
            "error": {
                "message": "The decoder prompt (length 9000) is longer than the maximum model "
                "length of 8192. Make sure that `max_model_len` is no smaller than the number of "
                "text tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
    ),
    (
        "vLLM before 0.10 (top-level fields)",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce "
            "the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "SGLang, prompt alone",
        400,
        {
            "object": "error",
            "message": "The input (9000 tokens) is longer than the model's context length "
            "(8192 tokens).",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "SGLang, prompt + max_new_tokens",
        400,
        {
            "object": "error",
            "message": "Requested token count exceeds the model's maximum context length of 8192 "
            "tokens. You requested a total of 9000 tokens: 7000 tokens from the input messages "
            "and 2000 tokens for the completion. Please reduce the number of tokens in the input "
            "messages or the completion to fit within the limit.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (
        "text-generation-inference, prompt + max_new_tokens",
        422,
        {
            "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
            "Given: 4000 `inputs` tokens and 200 `max_new_tokens`",
            "error_type": "validation",
        },
    ),
    (
        "text-generation-inference, prompt alone",
        422,
        {
            "error": "Input validation error: `inputs` must have less than 4095 tokens. "
            "Given: 5000",
            "error_type": "validation",
        },
    ),
    (
        "Ollama /v1",
        400,
        {
            "error": {
                "message": "the prompt is longer than the context length currently available to "
                "the model; shorten the prompt, adjust the context length in settings, or use a "
                "model with a longer context length",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    ),
    (
        "OpenAI",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130000 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "OpenAI, newer wording",
        400,
        {
            "error": {
                "message": "Your input exceeds the context window of this model. Please adjust "
                "your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "Anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 213462 tokens > 200000 maximum",
            },
        },
    ),
    (
        "Gemini, OpenAI-compatible",
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1196265) exceeds the maximum number of "
                    "tokens allowed (1048575).",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ),
]

# The type/code fields decide first: a wording no table knows yet is still recognised by them.
NAMED_BY_TYPE: list[tuple[str, int, Any]] = [
    (
        "llama.cpp type, unknown wording",
        400,
        {
            "error": {
                "code": 400,
                "message": "no room for 9412",
                "type": "exceed_context_size_error",
            }
        },
    ),
    (
        "OpenAI code, unknown wording",
        400,
        {
            "error": {
                "message": "shorten it",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    ),
]

NOT_OVERFLOWS: list[tuple[str, int, Any]] = [
    (
        "vLLM bad parameter",
        400,
        {
            "error": {
                "message": "temperature must be non-negative, got -1.0.",
                "type": "BadRequestError",
                "param": "temperature",
                "code": 400,
            }
        },
    ),
    (
        "llama.cpp bad parameter",
        400,
        {
            "error": {
                "code": 400,
                "message": '"n_probs" must be positive',
                "type": "invalid_request_error",
            }
        },
    ),
    (
        "text-generation-inference bad parameter (same error_type as its overflow)",
        422,
        {
            "error": "Input validation error: `temperature` must be strictly positive",
            "error_type": "validation",
        },
    ),
    (
        "OpenAI bad max_tokens",
        400,
        {
            "error": {
                "message": "Invalid 'max_tokens': integer below minimum value. Expected a value "
                ">= 1, but got 0 instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "integer_below_min_value",
            }
        },
    ),
]


def _backend(server: FaultServer, **kwargs: Any) -> OpenAIBackend:
    options = {"base_url": server.url, "max_retries": 2, "backoff_base_s": 0.01, **kwargs}
    return OpenAIBackend("m", **options)


def _request() -> Request:
    return request("s1", messages=(Message("user", "hi"),), max_tokens=5)


def _raw(status: int, body: Any) -> tuple[str, tuple[int, str, bytes]]:
    return ("raw", (status, "application/json", json.dumps(body).encode()))


def _message(body: Any) -> str:
    inner = body[0] if isinstance(body, list) else body
    inner = inner.get("error", inner)
    return inner if isinstance(inner, str) else inner["message"]


@pytest.mark.parametrize(("server_name", "status", "body"), OVERFLOWS + NAMED_BY_TYPE)
async def test_each_servers_overflow_answer_is_final_and_sent_once(
    server_name: str, status: int, body: Any
) -> None:
    with FaultServer() as server:
        server.script.extend([_raw(status, body), ("ok", "must not be asked")])
        gen = await _backend(server).generate(_request())
        sent = len(server.requests)
    assert (gen.status, gen.text, sent) == ("context_overflow", "", 1), server_name
    # The reason keeps the server's words (a list body is kept as its text).
    assert gen.error.startswith(f"HTTP {status}: ") and _message(body)[:60] in gen.error


@pytest.mark.parametrize(("server_name", "status", "body"), NOT_OVERFLOWS)
async def test_a_bad_parameter_stays_an_error_sent_once(
    server_name: str, status: int, body: Any
) -> None:
    with FaultServer() as server:
        server.script.extend([_raw(status, body), ("ok", "must not be asked")])
        gen = await _backend(server).generate(_request())
        sent = len(server.requests)
    assert (gen.status, sent) == ("error", 1), server_name
    assert gen.error.startswith(f"HTTP {status}: ") and _message(body)[:60] in gen.error


async def test_an_overflow_wording_on_a_5xx_or_429_is_retried_not_final() -> None:
    # Only a refusal of the request (400, 413, 422) is final: a 5xx or a rate limit that happens
    # to mention tokens says nothing about whether the prompt fits.
    crash = {
        "error": {"message": "This model's maximum context length is 8192 tokens", "code": 500}
    }
    tpm = {
        "error": {
            "message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, "
            "Requested 50000.",
            "type": "tokens",
            "code": "rate_limit_exceeded",
        }
    }
    with FaultServer() as server:
        server.script.extend([_raw(500, crash), _raw(429, tpm), ("ok", "third time")])
        gen = await _backend(server).generate(_request())
        sent = len(server.requests)
    assert (gen.status, gen.text, sent) == ("ok", "third time", 3)


@pytest.mark.parametrize(("server_name", "status", "body"), OVERFLOWS)
def test_a_stored_overflow_reason_is_recognised_from_its_message(
    server_name: str, status: int, body: Any
) -> None:
    # What the store kept of such an answer (status and 200 characters of message) is enough.
    stored = f"HTTP {status}: {' '.join(_message(body).split())[:200]}"
    assert is_stored_overflow(stored), server_name


@pytest.mark.parametrize(
    "stored",
    [
        "HTTP 400: temperature must be non-negative, got -1.0.",
        "gave up after 6 attempts: HTTP 503: maximum context length is 8192 tokens",
        "HTTP 500: the request exceeds the available context size, try increasing it",
        "connection error: exceeds the available context size",
        "",
    ],
)
def test_a_stored_reason_that_is_not_a_refusal_stays_an_error(stored: str) -> None:
    assert not is_stored_overflow(stored)


@pytest.mark.parametrize(("server_name", "status", "body"), OVERFLOWS + NAMED_BY_TYPE)
def test_the_parsed_body_alone_decides(server_name: str, status: int, body: Any) -> None:
    # Whatever shape the SDK hands over: the whole body, or the `error` object inside it.
    assert is_overflow(status, body), server_name
    inner = body[0] if isinstance(body, list) else body
    assert is_overflow(status, inner.get("error", inner)), server_name


@pytest.mark.parametrize(
    "body",
    [
        None,
        42,
        [],
        {"error": {"type": "invalid_request_error"}},  # no message at all
        {"error": {"message": None, "code": 400}},
        {"error": "Input validation error: `temperature` must be strictly positive"},
    ],
)
def test_a_body_without_an_overflow_wording_is_not_one(body: Any) -> None:
    assert not is_overflow(400, body)


def test_second_hand_wordings_are_recognised_by_message() -> None:
    # Collected from clients that handle them (no server source to read): LM Studio, Mistral,
    # xAI, Groq, Together, Poolside, GitHub Copilot, Kimi.
    for message in (
        "tokens to keep from the initial prompt is greater than the context length",
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 "
        "maximum context length",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
        "Please reduce the length of the messages or completion.",
        "The input (516368 tokens) is longer than the model's context length (262144 tokens).",
        "Input length 131393 exceeds the maximum allowed input length of 131040 tokens.",
        "prompt token count of 200000 exceeds the limit of 128000",
        "Your request exceeded model token limit: 262144 (requested: 300000)",
    ):
        assert is_overflow(400, {"error": {"message": message}}), message
        assert not is_overflow(500, {"error": {"message": message}}), message


def _counted(prompt_tokens: int) -> Request:
    return Request(
        "s1",
        0,
        "chat",
        messages=(Message("user", "hi"),),
        config=GenerationConfig(max_tokens=5),
        prompt_tokens=4000,
    )


def _model_tokenizer_json(directory: Path) -> str:
    """Return the path of a model's own tokenizer as a `tokenizer.json` file (exact, no model)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"hi": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = directory / "tokenizer.json"
    tok.save(str(path))
    return str(path)


@pytest.mark.parametrize(
    ("tokenizer", "seen", "status"),
    [
        # The model's own tokenizer: a few tokens of difference (1%, at least 8) is allowed. The
        # GGUF one needs the embedded model (`model`: left out of mutmut's fast selection); a
        # tokenizer.json is as exact and needs none.
        pytest.param("gemma3-270m", 3960, "ok", marks=pytest.mark.model),
        pytest.param("gemma3-270m", 3959, "context_overflow", marks=pytest.mark.model),
        ("tokenizer.json", 3960, "ok"),
        ("tokenizer.json", 3959, "context_overflow"),
        # A stand-in tokenizer miscounts by a few percent: 20% is allowed.
        ("qwen2.5", 3200, "ok"),
        ("qwen2.5", 3199, "context_overflow"),
    ],
)
async def test_a_server_that_saw_fewer_prompt_tokens_than_sent_truncated_silently(
    tokenizer: str, seen: int, status: str, tmp_path: Path
) -> None:
    if tokenizer == "tokenizer.json":
        tokenizer = _model_tokenizer_json(tmp_path)
    with FaultServer() as server:
        server.script.append(("ok", completion_body("x", prompt_tokens=seen)))
        gen = await _backend(server, tokenizer=tokenizer).generate(_counted(4000))
    assert (gen.status, gen.prompt_tokens) == (status, seen)
    if status == "context_overflow":
        assert (
            gen.error
            == f"silent truncation: server counted {seen} prompt tokens, harness sent 4000"
        )
