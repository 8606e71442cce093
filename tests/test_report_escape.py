"""Escaping: hostile agent answers, tool args and eval-file text, one rule at a time, then
a whole report built from them as GitHub renders it."""

from __future__ import annotations

import re

import pytest
from helpers.factory import case
from report_diffs import pair
from test_report_markdown import structure, to_html

from agent_eval_action.report import escape, markdown

ZW = escape.ZWSP
MARKER = "<!-- agent-eval-action:agent-eval -->"
INLINE = [escape.text, escape.cell, escape.code, escape.html]


def visible(html: str) -> str:
    """Text as a reader sees it: tags dropped, entities decoded, zero-width spaces removed."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html)).replace(ZW, "")


@pytest.mark.parametrize("fn", INLINE)
@pytest.mark.parametrize(
    "hostile",
    ["@octocat", "cc @octo-org/security-team", "mail a@b.com"],
)
def test_no_mention(fn, hostile):
    out = fn(hostile)
    assert not re.search(r"@[A-Za-z0-9]", out)
    assert "@" in visible(to_html(out)) or fn is escape.html


@pytest.mark.parametrize("fn", INLINE)
@pytest.mark.parametrize("hostile", ["fixes #123", "see GH-42", "octo/repo#7", "gh-9"])
def test_no_issue_reference(fn, hostile):
    assert not re.search(r"#\d|GH-\d", fn(hostile), re.IGNORECASE)


@pytest.mark.parametrize("fn", INLINE)
def test_no_commit_sha_or_url_autolink(fn):
    out = fn(
        "reverted 4e1f0c2a9b7d3e5f6a8b0c1d2e3f4a5b6c7d8e9f, see https://evil.example/x and www.evil.example"
    )
    assert not re.search(r"\b[0-9a-f]{7,}\b", out)
    assert "://" not in out and "www." not in out
    html = to_html(out)
    assert "<a " not in html
    assert "4e1f0c2a9b7d3e5f6a8b0c1d2e3f4a5b6c7d8e9f" in visible(html)  # still readable


@pytest.mark.parametrize("fn", INLINE)
@pytest.mark.parametrize(
    "hostile",
    [
        MARKER,
        "</details><details open><summary>fake</summary>",
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        "]]><!--",
    ],
)
def test_no_html_and_no_comment(fn, hostile):
    out = fn(hostile)
    assert "<!--" not in out and "<details" not in out and "</details" not in out
    assert "<img" not in out and "<script" not in out
    html = to_html(out)
    assert "<!--" not in html and "<details" not in html and "<img" not in html
    assert visible(html).strip() == hostile


@pytest.mark.parametrize("hostile", ["a | b", "a\\|b", "line one\nline two", "x\r\n| y |"])
def test_table_row_stays_one_row_of_three_cells(hostile):
    for fn in (escape.cell, escape.code):
        table = f"| a | b | c |\n|---|---|---|\n| 1 | {fn(hostile)} | 3 |\n"
        page = structure(table)
        assert page.rows[1][0] == "1" and page.rows[1][2] == "3" and len(page.rows) == 2


@pytest.mark.parametrize(
    "hostile",
    ["- item", "1. item", "# heading", "> quote", "**bold** _it_ ~~s~~", "[x](http://e)", "`code`"],
)
def test_inline_text_stays_plain_text(hostile):
    html = to_html(f"- {escape.text(hostile)}\n")
    assert html.count("<li>") == 1
    for tag in ("<ol", "<h1", "<blockquote", "<strong", "<em", "<del", "<a ", "<code"):
        assert tag not in html
    assert visible(html).strip() == hostile


@pytest.mark.parametrize(
    "hostile", ["```", "````\n```diff\n+ evil\n````", "end ``` ", "~~~\n", "`" * 10]
)
def test_code_block_cannot_be_left(hostile):
    block = escape.code_block(hostile, "diff")
    fence = block.splitlines()[0].removesuffix("diff")
    assert len(fence) > max((len(run) for run in re.findall("`+", hostile)), default=2)
    page = structure(f"{block}\n\nafter\n")
    assert len(page.code_blocks) == 1
    assert page.code_blocks[0] == hostile.rstrip("\n").replace("\r", "") + "\n"


def test_code_block_neutralises_a_spoofed_marker_but_shows_it():
    block = escape.code_block(f"say {MARKER}")
    assert "<!--" not in block
    assert visible(to_html(block)).strip() == f"say {MARKER}"


def test_invisible_reordering_characters_are_shown_as_replacement_marks():
    assert escape.text("a\u202eb\x00c") == "a\ufffdb\ufffdc"


def test_a_report_of_hostile_content_keeps_its_structure():
    hostile = (
        "@octocat fixes #1 </details> " + MARKER + " | cell\n```\n<script>x</script> ~~~ 4e1f0c2a9b"
    )
    before = [case("ok", {"tool_trajectory_avg_score": [1.0]}, eval_set_id="s")]
    after = [case("ok", {"tool_trajectory_avg_score": [0.0]}, [hostile], eval_set_id="s")]
    diff, current = pair(before, after)
    diff.cases[0].eval_id = hostile  # eval ids come from eval files
    diff.cases[0].notes += (hostile,)
    diff.notes.append(hostile)
    for text in (markdown.comment(diff, current), markdown.summary(diff, current)):
        assert text.count("<!--") == (1 if text.startswith("<!--") else 0)
        html = to_html(text)
        outside_code_blocks = re.sub(r"<pre.*?</pre>", "", html, flags=re.DOTALL)  # not linked
        assert not re.search(r"@[A-Za-z0-9]|#\d|4e1f0c2", outside_code_blocks)
        assert "<script" not in html
        page = structure(text)  # raises on any tag closed out of order
        assert page.tags.get("details", 0) == page.tags.get("summary", 0)
        assert len(page.code_blocks) == 1
        assert "<script>x</script>" in page.code_blocks[0]
        [row] = [r for r in page.rows if r[0].replace(ZW, "").startswith("s / @octocat")]
        assert len(row) == 4 and row[1] == "tool_trajectory_avg_score"  # case, metric, scores, Δ


def test_truncate_counts_what_it_left_out():
    assert escape.truncate("abcdef", 3) == "abc … (3 more characters)"
    assert escape.truncate("abc", 3) == "abc" and escape.truncate(None, 3) == ""
