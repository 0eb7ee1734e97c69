"""Endpoint URLs: checked, normalised, and shown without the credentials they may carry.

A URL names a host the prompts (and the API key) go to, so longscope never picks one itself: the
user gives `--base-url` or sets `OPENAI_BASE_URL` (non-empty). Only http(s) is spoken; the same
server written two ways (`/v1` and `/v1/`, `HOST` and `host`) is one endpoint. A password in a URL
(`http://user:PW@host/v1`) is used to connect but never printed or stored: `shown` replaces it.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from longscope.errors import UsageError

BASE_URL_ENV = "OPENAI_BASE_URL"
EXAMPLE = "http://127.0.0.1:8000/v1"


def endpoint_url(raw: str, flag: str = "--base-url") -> str:
    """Return `raw` normalised (scheme and host lower case, no trailing slash), or raise
    UsageError (one line, credentials hidden) when it is empty or not an http(s) URL with a host."""
    from longscope.text.safe_text import visible

    text = raw.strip()
    if not text:
        raise UsageError(f"empty {flag}: give the server's URL, e.g. {EXAMPLE}")
    parts = urlsplit(text)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, or out of range
        host, port = None, None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise UsageError(
            f"bad {flag} {visible(shown(text))!r}: expected http:// or https:// and a host, "
            f"e.g. {EXAMPLE}"
        )
    userinfo, _, _ = parts.netloc.rpartition("@")
    netloc = (f"{userinfo}@" if userinfo else "") + (f"[{host}]" if ":" in host else host)
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), parts.query, ""))


def shown(url: str) -> str:
    """Return `url` as it may be printed or stored: any user name and password replaced by ***."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


def base_url_or_env(base_url: str | None, flag: str = "--base-url") -> str:
    """Return the endpoint given (checked), else `OPENAI_BASE_URL` if set and non-empty; raise
    UsageError otherwise: a hosted API is reached only when its URL is given."""
    if base_url is not None:
        return endpoint_url(base_url, flag)
    env = os.environ.get(BASE_URL_ENV)
    if env is None or not env.strip():
        state = "is empty" if env is not None else "is not set"
        raise UsageError(
            f"no endpoint for the openai/ model: give {flag} URL (e.g. {EXAMPLE}; OpenAI's own "
            f"API: https://api.openai.com/v1) or set {BASE_URL_ENV} ({state}); longscope sends "
            "prompts and the API key only to a host you name"
        )
    return endpoint_url(env, BASE_URL_ENV)
