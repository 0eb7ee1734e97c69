"""Untrusted text in terminal, Markdown and plot labels: every escape at its edge.

The characters just inside and just outside each unsafe range, the one-line switch, and the
markup each output format would otherwise read (rich's `[...]`, Markdown links, mathtext `$`).
"""

from __future__ import annotations

import pytest
from rich.console import Console

from longscope.text.safe_text import markdown, mpl, plain, visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x00", "\\x00"),
        ("\x08", "\\x08"),
        ("\x0b", "\\x0b"),
        ("\x1b[2J", "\\x1b[2J"),
        ("\x1f", "\\x1f"),
        ("\x7f", "\\x7f"),
        ("\x9f", "\\x9f"),
        ("\u200b", "\\u200b"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\ufeff", "\\ufeff"),
        ("\u00ad", "\\u00ad"),  # soft hyphen: a format character outside the listed ranges
        (" ~", " ~"),  # printable ASCII edges stay
        ("\xa0é中", "\xa0é中"),  # printable non-ASCII stays
    ],
)
def test_visible_escapes_exactly_the_unsafe_characters(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_newlines_and_tabs_only_in_one_line_mode() -> None:
    assert visible("a\nb\tc") == "a\\nb\\tc"
    assert visible("a\nb\tc", one_line=False) == "a\nb\tc"
    assert visible(42) == "42"


def test_plain_is_never_markup_and_keeps_style_and_lines() -> None:
    text = plain("[bold]x[/bold]\n\x1b[31m", "red")
    assert text.plain == "[bold]x[/bold]\\n\\x1b[31m" and str(text.style) == "red"
    assert plain("a\nb", one_line=False).plain == "a\nb"
    assert str(plain("a").style) == ""
    console = Console(width=80, color_system=None, record=True)
    console.print(plain("[/] [link=javascript:x]y[/link]"))
    assert console.export_text().strip() == "[/] [link=javascript:x]y[/link]"


def test_markdown_escapes_html_links_code_and_cells() -> None:
    assert markdown('<img src="x">') == "&lt;img src=&quot;x&quot;&gt;"
    assert markdown("[a](javascript:x)") == "\\[a\\]\\(javascript:x)"
    assert markdown("`code` | cell \\") == "\\`code\\` \\| cell \\\\"
    assert markdown("line\nbreak") == "line\\\\nbreak"
    assert markdown("*emphasis* stays") == "*emphasis* stays"


def test_mpl_label_has_no_mathtext() -> None:
    assert mpl("$\\x{$ \x1b") == "\\$\\x{\\$ \\x1b"


def test_surrogates_and_private_use_characters_are_shown_as_escapes() -> None:
    # category Cs (a lone surrogate) and Co (private use) can render as anything
    assert visible("a\ud800b\ue000c") == "a\\ud800b\\ue000c"
