"""Escaping for GitHub-flavoured markdown: one function per context the reports put text in.

Anything an agent said, a tool got as arguments, or an eval file contains is hostile: on
GitHub it must never @-mention anyone, link an issue (`#123`, `GH-1`), a commit SHA, a
URL or an e-mail address (each would notify, cross-reference or lead somewhere), inject HTML
or an HTML comment (a spoofed sticky-comment marker), close a `<details>`, break a table
row, leave a code fence, or hide or reorder what is shown with invisible characters.

- `text`: inline markdown (headings, list items, paragraphs): one line.
- `cell`: a table cell: `text`, with the pipe escaped too.
- `html`: inside raw HTML (a `<summary>`): entities only, markdown is not parsed there.
- `code`: inline code inside markdown or a cell, as `<code>` with entities (a markdown code
  span cannot be used: an HTML tag inside it would win over the backticks).
- `code_block`: a fenced block, with a fence longer than any backtick run in the text.

Each returns `Md`, a str marking text that is safe to put in a report as it is; templates
escape everything else as a cell (the strictest inline context) by default.
"""

from __future__ import annotations

import re
from functools import lru_cache

ZWSP = "\u200b"  # breaks GitHub's autolinking without changing what a reader sees

# Shown as U+FFFD, so that what a reader sees is what the text holds: the Trojan-source
# characters that reorder what is shown (bidi embeddings and overrides U+202A-E, isolates
# U+2066-9, and the marks LRM U+200E, RLM U+200F, ALM U+061C); the zero-width ones that hide
# text or make two different names look alike (ZWSP, ZWNJ, ZWJ U+200B-D, word joiner and the
# invisible operators U+2060-4, the BOM U+FEFF); and control characters but tab and newline.
# (The zero-width space this module inserts itself goes in after this, where it breaks a link.)
_INVISIBLE = re.compile(
    r"[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
    r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
)
# Every @: a mention, and the e-mail autolink, whose domain may start with `-`, `.` or `_`.
_AT = re.compile(r"@")
_ISSUE = re.compile(r"(#|\bGH-)(?=\d)", re.IGNORECASE)
_HEX_RUN = re.compile(r"\b[0-9a-fA-F]{7,}\b")
# Every `www.` (GitHub links it after `_`, `*`, `~` and `(` too, where `\b` does not see a
# word start) and every `://` after a letter (a scheme).
_URL = re.compile(r"(?<=[A-Za-z])(://)|(www)(\.)", re.IGNORECASE)
# What any of the four above needs to find (more, not less): a text without it has none
_LINKY = re.compile(r"[@#]|GH-|[0-9a-fA-F]{7}|://|www\.", re.IGNORECASE)
# Backslash-escaped in inline markdown: emphasis, links, code, tables, strikethrough, headings.
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~#!])")
_LINE_START = re.compile(r"^(\s*(?:\d+)?)([-+.)])(?=\s|$)")  # would start a list item


class Md(str):
    """Markdown that is safe to emit as it is (escaped, or written by us)."""


def _clean(value: object) -> str:
    text = "" if value is None else str(value)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _INVISIBLE.sub("\ufffd", text)


def plain(value: object) -> str:
    """The text with its invisible and reordering characters shown as U+FFFD, nothing else
    changed: for a context that escapes the rest itself (report/html.py, autoescaped)."""
    return _clean(value)


def _unlink(text: str) -> str:
    """Break what GitHub would turn into a mention, a reference or a link."""
    if _LINKY.search(text) is None:  # most texts: one scan, not four
        return text
    text = _AT.sub("@" + ZWSP, text)
    text = _ISSUE.sub(lambda m: m.group(1) + ZWSP, text)
    text = _HEX_RUN.sub(lambda m: ZWSP.join(re.findall(".{1,6}", m.group())), text)
    return _URL.sub(
        lambda m: (":" + ZWSP + "//") if m.group(1) else (m.group(2) + ZWSP + "."), text
    )


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def text(value: object) -> Md:
    """Inline markdown on one line: no markup, no mention, no link, no HTML."""
    line = _one_line(_clean(value))
    line = _entities(_MD_PUNCT.sub(r"\\\1", line))
    line = _LINE_START.sub(r"\1\\\2", line)
    return Md(_unlink(line))


def cell(value: object) -> Md:
    """A table cell: like `text` (which already escapes `|`), newlines kept as <br>."""
    lines = _clean(value).split("\n")
    return Md("<br>".join(text(line) for line in lines))


def html(value: object) -> Md:
    """Text inside raw HTML, e.g. a <summary>: markdown is not parsed there, entities are."""
    escaped = _entities(_one_line(_clean(value))).replace('"', "&quot;")
    return Md(_unlink(escaped))


def code(value: object) -> Md:
    """Inline code, usable in a table cell: <code> with entities (`|` as &#124;)."""
    text = "" if value is None else str(value)
    # names (of metrics, of tools) are shown again and again: each escaped once
    return _short_code(text) if len(text) <= _SHORT else _code(text)


_SHORT = 200  # characters of a text whose inline code is kept once made


def _code(text: str) -> Md:
    inner = _MD_PUNCT.sub(r"\\\1", _unlink(_entities(_one_line(_clean(text)))))
    return Md("<code>" + inner.replace("\\|", "&#124;") + "</code>")


_short_code = lru_cache(maxsize=4096)(_code)


def code_block(value: object, lang: str = "") -> Md:
    """A fenced code block: GitHub links nothing inside it, so only the fence and the
    marker need care. The fence is longer than the longest run of backticks in the text."""
    body = _clean(value).replace("<!--", "<!" + ZWSP + "--")
    longest = max((len(run) for run in re.findall("`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    if not body.endswith("\n"):
        body += "\n"
    return Md(f"{fence}{lang}\n{body}{fence}")


def truncate(value: object, limit: int | None) -> str:
    """At most `limit` characters of the text (before escaping, so never mid-markup)."""
    text_ = "" if value is None else str(value)
    if limit is None or len(text_) <= limit:
        return text_
    return text_[:limit] + f" … ({len(text_) - limit:,} more characters)"
