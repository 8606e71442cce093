"""Escaping bypasses (security issue, finding 6): text that GitHub's own renderer would still
turn into a live link, and invisible characters, in every context report/escape.py serves.

Rendered with cmarkgfm, GitHub's cmark-gfm with its extensions (autolink among them: the
`www.`, `scheme://` and e-mail autolinks). Each hostile string below came out as a live link
before the fix: `www.` right after `_` (Python's `\\b` counts `_` as a word character, GitHub
does not), and an e-mail address whose domain starts with `-`, `.` or `_`.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable

import pytest
from helpers.factory import case
from hypothesis import example, given, settings
from hypothesis import strategies as st
from report_diffs import pair

from agent_eval_action.report import check, escape, markdown

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm is in the dev extra")
from cmarkgfm.cmark import Options as CmarkOptions  # noqa: E402

ZW = escape.ZWSP

# Each was a live link in the comment, the check run and the job summary.
BYPASSES = [
    "x_www.evil.example",
    "_www.evil.example/phish",
    "snake_case_www.evil.example",
    "__www.evil.example__",
    "mail a@-evil.example",
    "mail a@.evil.example",
    "mail a@_evil.example",
    "mailto:a@-evil.example",
    "a.b+c@_evil.example.com",
]
# Linked before the fix too, and must stay unlinked.
CLASSICS = [
    "www.evil.example",
    "*www.evil.example*",
    "(www.evil.example)",
    "~www.evil.example~",
    "https://evil.example/x",
    "_https://evil.example_",
    "a@evil.example",
    "xmpp:a@evil.example/x",
]
HOSTILE = BYPASSES + CLASSICS


def to_html(text: str) -> str:
    """GitHub's renderer: cmark-gfm with table, autolink, tagfilter, strikethrough, tasklist."""
    return cmarkgfm.github_flavored_markdown_to_html(text, options=CmarkOptions.CMARK_OPT_UNSAFE)


def visible(rendered: str) -> str:
    """Text as a reader sees it: tags dropped, entities decoded, our zero-width spaces removed."""
    return html_lib.unescape(re.sub(r"<[^>]+>", "", rendered)).replace(ZW, "")


def _table(cell: str) -> str:
    return f"| a | b |\n|---|---|\n| {cell} | 2 |\n"


# Every context the reports put hostile text in, as the templates do.
CONTEXTS: dict[str, Callable[[str], str]] = {
    "text in a paragraph": lambda v: f"{escape.text(v)}\n",
    "text in a list item": lambda v: f"- {escape.text(v)}\n",
    "text in a heading": lambda v: f"### {escape.text(v)}\n",
    "text after emphasis": lambda v: f"**Note:** {escape.text(v)}\n",
    "cell": lambda v: _table(escape.cell(v)),
    "code inline": lambda v: f"see {escape.code(v)} here\n",
    "code in a cell": lambda v: _table(escape.code(v)),
    "html in a summary": lambda v: (
        f"<details><summary>First divergent turn of <code>{escape.html(v)}</code></summary>\n\n"
        "body\n\n</details>\n"
    ),
    # the worst case: html() output where markdown is parsed after all
    "html in a paragraph": lambda v: f"{escape.html(v)}\n",
    "code block": lambda v: f"{escape.code_block(v, 'diff')}\n",
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("hostile", HOSTILE)
def test_no_link_survives_in_any_context(context, hostile):
    rendered = to_html(CONTEXTS[context](hostile))
    assert "<a " not in rendered and "href" not in rendered, rendered
    if context != "html in a paragraph":  # html() escapes no emphasis: not meant for markdown
        assert hostile in visible(rendered)  # still readable, as written


@pytest.mark.parametrize("fn", [escape.text, escape.cell, escape.code, escape.html])
def test_every_at_sign_is_broken(fn):
    out = fn("a@-b.c a@.b.c a@_b.c @x")
    assert re.findall("@.", out) == ["@" + ZW] * 4


INVISIBLE = {
    "\u200e": "LEFT-TO-RIGHT MARK",
    "\u200f": "RIGHT-TO-LEFT MARK",
    "\u061c": "ARABIC LETTER MARK",
    "\u200b": "ZERO WIDTH SPACE",
    "\u200c": "ZERO WIDTH NON-JOINER",
    "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE (BOM)",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
}
ALL_CONTEXTS = [escape.text, escape.cell, escape.code, escape.html, escape.code_block]


@pytest.mark.parametrize("fn", ALL_CONTEXTS)
@pytest.mark.parametrize("char", sorted(INVISIBLE), ids=lambda c: INVISIBLE[c])
def test_invisible_characters_are_shown_as_replacement_marks(fn, char):
    out = fn(f"eval{char}_id")
    assert char not in out and "eval\ufffd" in out


def test_a_look_alike_name_does_not_look_alike_any_more():
    # "admin" and "ad\u200bmin" look the same on the page unless the hidden character shows
    assert visible(to_html(escape.text("ad\u200bmin"))).strip() == "ad\ufffdmin"
    assert visible(to_html(escape.text("admin"))).strip() == "admin"


def _hostile_diff(hostile: str):
    before = [case("ok", {"tool_trajectory_avg_score": [1.0]}, eval_set_id="s")]
    after = [case("ok", {"tool_trajectory_avg_score": [0.0]}, [hostile], eval_set_id="s")]
    diff, current = pair(before, after)
    diff.cases[0].eval_id = hostile  # eval ids come from eval files
    diff.cases[0].notes += (hostile,)
    diff.notes.append(hostile)
    return diff, current


@pytest.mark.parametrize("hostile", BYPASSES)
def test_no_link_to_the_hostile_host_in_comment_summary_or_check_run(hostile):
    diff, current = _hostile_diff(hostile)
    out = check.check_output(diff, current)
    pages = {
        "comment": markdown.comment(diff, current),
        "summary": markdown.summary(diff, current),
        "check summary": out.summary,
        "check text": out.text,
    }
    for name, page in pages.items():
        rendered = to_html(page)
        links = re.findall(r'<a [^>]*href="([^"]*)"', rendered)
        assert not [link for link in links if "evil" in link], (name, links)


# Text near what links: the characters each pattern of escape._unlink looks for, and others.
_LINKISH = st.text(alphabet="@#gGhH-wW.:/_aAfF0179 x\n", max_size=40)


@settings(max_examples=500, deadline=None)
@given(_LINKISH)
@example("a@b")
@example("see #1")
@example("gh-12")
@example("sha deadbee.")
@example("ftp://x")
@example("WWW.x")
def test_a_text_the_quick_scan_passes_has_nothing_to_unlink(text):
    # _unlink skips its four passes when one scan finds none of what they look for: the
    # scan must find whatever any of them would
    if escape._LINKY.search(text) is None:
        for pattern in (escape._AT, escape._ISSUE, escape._HEX_RUN, escape._URL):
            assert pattern.search(text) is None, (pattern.pattern, text)


@pytest.mark.parametrize("name", ["tool_trajectory_avg_score", "a|b @c", "x" * 300])
def test_inline_code_is_the_same_escaped_once_or_again(name):
    # short names are escaped once and kept (lru_cache); a long text each time
    first, again = escape.code(name), escape.code(escape.Md(name))
    assert first == again == escape._code(name)
    assert isinstance(again, escape.Md)
