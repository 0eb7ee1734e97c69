"""How each server says "the prompt does not fit": the one table, with where each wording comes from.

An HTTP answer of a server that refuses a prompt (or prompt + max_tokens) for length becomes the
final status `context_overflow`: never scored, never sent again. Anything else it refuses stays
`error`. The decision reads the error's `type`/`code` fields first (a server that names the case
says so exactly) and its message second (most servers only say it in words).

Sources, read from each server's own code (or, for hosted APIs, their documented answers):

| server | HTTP | body | how it names the case | where |
|---|---|---|---|---|
| llama.cpp `llama-server` | 400 | `{"error": {"code", "message", "type", "n_prompt_tokens", "n_ctx"}}` | type `exceed_context_size_error`; "request (N tokens) exceeds the available context size (M tokens), try increasing it" (older builds: "the request exceeds the available context size, try increasing it"); embeddings: "input (N tokens) is larger than the max context size (M tokens)" | ggml-org/llama.cpp tools/server/server-common.cpp (`format_error_response`), tools/server/server-context.cpp |
| LM Studio / older llama.cpp | 400 | `{"error": ...}` | "tokens to keep from the initial prompt is greater than the context length" | llama.cpp examples/server/server.cpp (n_keep check, before 2024) |
| vLLM | 400 | `{"error": {"message", "type": "BadRequestError", "param", "code": 400}}` (before 0.10: the same fields at the top level with `"object": "error"`) | "This model's maximum context length is M tokens. However, your request has N input tokens. ..."; "'max_tokens' or 'max_completion_tokens' is too large: K. This model's maximum context length is M tokens and your request has N input tokens (K > M - N)."; "The decoder prompt (length N) is longer than the maximum model length of M. ..." | vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (`_validate_input`), vllm/entrypoints/renderer.py / utils.py (`get_max_tokens`), vllm/v1/engine/input_processor.py (`_validate_prompt_len`) |
| SGLang | 400 | `{"object": "error", "message", "type": "BadRequestError", "param": null, "code": 400}` | "The input (N tokens) is longer than the model's context length (M tokens)."; "Requested token count exceeds the model's maximum context length of M tokens. ..." | sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py (`_validate_one_request`), python/sglang/srt/entrypoints/openai/serving_base.py (`create_error_response`) |
| text-generation-inference | 422 | `{"error": "Input validation error: ...", "error_type": "validation"}` | "`inputs` tokens + `max_new_tokens` must be <= M. Given: N `inputs` tokens and K `max_new_tokens`"; "`inputs` must have less than M tokens. Given: N" (`error_type` is `validation` for every bad parameter: the message decides) | huggingface/text-generation-inference router/src/validation.rs (`ValidationError`), router/src/server.rs (`From<InferError>`: 422), router/src/infer/mod.rs |
| Ollama (`/v1`) | 400 | `{"error": {"message", "type": "invalid_request_error", "param": null, "code": null}}` | "the prompt is longer than the context length currently available to the model; ..." (with context shift off); embeddings: "the input length exceeds the context length" | ollama/ollama llm/llama_server.go, middleware/openai.go (`writeError`), openai/openai.go (`NewError`) |
| OpenAI | 400 | `{"error": {"message", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}` | code `context_length_exceeded`; "This model's maximum context length is M tokens. However, your messages resulted in N tokens. ..." / "Your input exceeds the context window of this model. ..." | platform.openai.com error codes |
| Anthropic | 400 | `{"type": "error", "error": {"type": "invalid_request_error", "message"}}` | "prompt is too long: N tokens > M maximum" | docs.anthropic.com errors |
| Google Gemini (OpenAI-compatible) | 400 | `[{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}]` | "The input token count (N) exceeds the maximum number of tokens allowed (M)." | ai.google.dev troubleshooting |
| Mistral | 400 | `{"object": "error", "message", "type": "invalid_request_message_error", ...}` | "Prompt contains N tokens ... too large for model with M maximum context length" | docs.mistral.ai |
| OpenRouter, Groq, xAI, Together | 400 | `{"error": {...}}` | "This endpoint's maximum context length is M tokens ..."; "Please reduce the length of the messages or completion." (code `context_length_exceeded`); "This model's maximum prompt length is M but the request contains N tokens"; "The input (N tokens) is longer than the model's context length (M tokens)." | provider docs |
"""

from __future__ import annotations

import re
from typing import Any

OVERFLOW_HTTP_STATUSES = frozenset({400, 413, 422})
"""Statuses a length refusal comes with (422: text-generation-inference's validation errors)."""

OVERFLOW_KINDS = frozenset(
    {
        "exceed_context_size_error",  # llama.cpp server: `type`
        "context_length_exceeded",  # OpenAI, Groq: `code`; llama.cpp's Responses API: `code`
        "model_context_window_exceeded",  # Z.ai: `code`
    }
)
"""Error `type`/`code` values that name the case exactly, whatever the message says."""

OVERFLOW_MESSAGES: tuple[tuple[str, str], ...] = (
    # (server, pattern): searched case-insensitively in the error message.
    ("llama.cpp", r"exceeds the available context size"),
    ("llama.cpp", r"is larger than the max context size"),
    (
        "LM Studio / llama.cpp",
        r"tokens to keep from the initial prompt is greater than the context",
    ),
    ("vLLM, OpenAI, OpenRouter", r"maximum context length is \d+"),
    ("vLLM", r"is longer than the maximum model length"),
    ("vLLM", r"'max_tokens' or 'max_completion_tokens' is too large"),
    ("SGLang, Together", r"is longer than the model's context length"),
    ("SGLang", r"exceeds the model's maximum context length"),
    ("text-generation-inference", r"`inputs` tokens \+ `max_new_tokens` must be <="),
    ("text-generation-inference", r"`inputs` must have less than \d+ tokens"),
    ("Ollama", r"prompt is longer than the context length"),
    ("Ollama", r"input length exceeds the context length"),
    ("OpenAI", r"exceeds the context window"),
    ("Anthropic", r"prompt is too long"),
    ("Google Gemini", r"input token count \(\d+\) exceeds the maximum number of tokens"),
    ("Mistral", r"too large for model with \d+ maximum context length"),
    ("xAI", r"maximum prompt length is \d+"),
    ("Groq", r"reduce the length of the messages or completion"),
    ("Poolside", r"exceeds the maximum allowed input length"),
    ("GitHub Copilot", r"prompt token count of \d+ exceeds the limit"),
    ("Kimi", r"exceeded model token limit"),
    ("generic", r"context[ _]length[ _]exceeded|context window exceeded|input is too long"),
)

_MESSAGE = re.compile("|".join(f"(?:{pattern})" for _, pattern in OVERFLOW_MESSAGES), re.I)
_STORED = re.compile(r"^HTTP (\d{3}): (.*)$", re.S)


def _fields(body: Any) -> tuple[list[str], str]:
    """Return the error's type/code strings and its message, whatever the body's shape."""
    if isinstance(body, list) and body:
        body = body[0]  # Gemini's OpenAI-compatible endpoint answers a list of errors
    if isinstance(body, str):
        return [], body
    if not isinstance(body, dict):
        return [], ""
    inner = body.get("error")
    if isinstance(inner, dict):
        body = inner  # {"error": {...}} (OpenAI, vLLM, llama.cpp, Ollama, Anthropic)
    # TGI's `error_type` and Gemini's `status` never name the case (`validation`,
    # `INVALID_ARGUMENT` for every bad request): only `type` and `code` are read.
    kinds = [str(body[key]).lower() for key in ("type", "code") if isinstance(body.get(key), str)]
    message = body.get("message")
    if not isinstance(message, str):
        message = inner if isinstance(inner, str) else ""  # TGI: {"error": "...", ...}
    return kinds, message


def is_overflow(status: int, body: Any, message: str = "") -> bool:
    """Return whether an HTTP error answer says the prompt does not fit the model's context.

    `body` is the answer's parsed JSON (any shape: the `error` object or the whole body, a bare
    string); `message` is the message already taken from it, if any, searched as well.
    """
    if status not in OVERFLOW_HTTP_STATUSES:
        return False
    kinds, found = _fields(body)
    if any(kind in OVERFLOW_KINDS for kind in kinds):
        return True
    return any(_MESSAGE.search(text) for text in (found, message) if text)


def is_stored_overflow(error: str) -> bool:
    """Return whether a stored `error` reason (`HTTP 400: message`) is an overflow under this table.

    Only the status and the message were stored, so only the message rule applies: runs made
    before a wording was added here are re-classified by it.
    """
    match = _STORED.match(error.strip())
    return bool(match) and is_overflow(int(match.group(1)), match.group(2))


__all__ = [
    "OVERFLOW_HTTP_STATUSES",
    "OVERFLOW_KINDS",
    "OVERFLOW_MESSAGES",
    "is_overflow",
    "is_stored_overflow",
]
