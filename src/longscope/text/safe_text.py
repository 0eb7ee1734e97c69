"""Untrusted text (answers, errors, model names, dataset strings, paths) made safe to show.

Every string that did not come from longscope's own code is data, never markup:
- `visible` makes control characters, escape sequences and bidi overrides visible as escapes
  (`\\x1b`, `\\u202e`), so a model's answer or a server's error cannot drive the terminal;
- `plain` wraps it in a rich `Text`, which rich never parses as markup (`[/]`, `[bold]`);
- `markdown` escapes it for a Markdown report (HTML tags come out as text);
- `mpl` escapes it for a matplotlib label (`$...$` would be parsed as mathtext).
"""

from __future__ import annotations

import html
import re
import unicodedata

from rich.text import Text

# C0 and C1 controls, DEL, and the invisible format characters that reorder or hide text:
# bidi embeddings/overrides/isolates, zero-width characters, the BOM, line/paragraph separators.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)
_UNSAFE_ONE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n\t]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, one_line: bool = True) -> str:
    """Return `text` with every control and invisible format character shown as an escape.

    With `one_line` (the default) newlines and tabs are escaped too, so the result is one line.
    """
    value = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    value = pattern.sub(_escape, value)
    # Other format characters (category Cf) can also hide or reorder text; rare enough to scan.
    if not value.isascii():
        value = "".join(
            f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Cs", "Co") else c
            for c in value
        )
    return value


def plain(text: object, style: str = "", *, one_line: bool = True) -> Text:
    """Return a rich `Text` of `visible(text)`: printed as-is, never parsed as markup."""
    return Text(visible(text, one_line=one_line), style=style)


# Enough to keep text inert: no HTML (escaped above), no links or images (brackets), no code
# spans, no table cells broken by a pipe. Emphasis characters are harmless and left readable.
_MD_SPECIAL = re.compile(r"([\\`\[\]|])")


def markdown(text: object) -> str:
    """Return `text` as inert Markdown: one line, HTML escaped, links and code spans backslashed."""
    value = html.escape(visible(text), quote=True)
    # `](` after an escaped bracket is no link either; escaped too, so that no reader sees one.
    return _MD_SPECIAL.sub(r"\\\1", value).replace("\\](", "\\]\\(")


def mpl(text: object) -> str:
    """Return `text` safe for a matplotlib label (no mathtext, no control characters)."""
    return visible(text).replace("$", r"\$")
