"""Answer diffs a reviewer can read: long answers word by word, every line wrapped, and no
agent text that can fake a marker, leave the block or inject markup (report/divergence.py)."""

from __future__ import annotations

import re

import pytest
from helpers.factory import case
from hypothesis import given, settings
from hypothesis import strategies as st
from report_diffs import ACTUAL_REFUND, EXPECTED_REFUND, answering, pair

from agent_eval_action.compare.model import TurnDiff
from agent_eval_action.report import markdown
from agent_eval_action.report.divergence import (
    WIDTH,
    WORD_DIFF_HEADER,
    answer_lines,
    divergence_text,
    word_diff,
)

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm is in the dev extra")
from test_report_markdown import structure  # noqa: E402

T, R = "tool_trajectory_avg_score", "response_match_score"

# a marked group: [-removed-] or {+added+}, its closing sign not backslashed
GROUP = re.compile(r"\[-(?P<removed>.*?)(?<!\\)-\]|\{\+(?P<added>.*?)(?<!\\)\+\}|(?P<kept>\S+)")


def decode(lines: list[str]) -> tuple[list[str], list[str]]:
    """The words of both texts, read back from a word diff as a reader would: a sign
    next to a bracket with a backslash before it is the text's own."""
    before: list[str] = []
    after: list[str] = []
    for line in lines:
        assert line[:2] in ("! ", "  "), line
        changed = False
        for m in GROUP.finditer(line[2:]):
            if m.group("removed") is not None:
                before += [_unescape(w) for w in m.group("removed").split()]
                changed = True
            elif m.group("added") is not None:
                after += [_unescape(w) for w in m.group("added").split()]
                changed = True
            else:
                word = _unescape(m.group("kept"))
                before.append(word)
                after.append(word)
        assert line.startswith("! ") == changed, line
    return before, after


def _unescape(word: str) -> str:
    return re.sub(r"(?<=[\[{])\\([-+])|\\([-+])(?=[\]}])", lambda m: m.group(1) or m.group(2), word)


def test_a_long_answer_shows_the_changed_words_and_fits_the_width():
    lines = answer_lines(EXPECTED_REFUND, ACTUAL_REFUND, 1_000)
    assert lines[0] == WORD_DIFF_HEADER
    text = "\n".join(lines[1:])
    assert "[-$40.00-] {+$400.00+}" in text and "[-3 to 5-]" in text and "{+10+}" in text
    assert all(len(line) <= WIDTH + 2 for line in lines)
    assert decode(lines[1:]) == (EXPECTED_REFUND.split(), ACTUAL_REFUND.split())


def test_short_or_unrelated_answers_stay_line_by_line():
    assert answer_lines("answer", "answer x", 1_000) == ["@@ answer @@", "- answer", "+ answer x"]
    unrelated = "completely different words " * 10
    lines = answer_lines(EXPECTED_REFUND, unrelated, 1_000)
    assert lines[0] == "@@ answer @@" and all(line[:2] in ("- ", "+ ") for line in lines[1:])
    assert all(len(line) <= WIDTH + 2 for line in lines)  # wrapped, - and + on every piece
    assert answer_lines(None, "x", 1_000) == ["@@ answer @@", "- (no answer)", "+ x"]
    assert answer_lines(EXPECTED_REFUND, EXPECTED_REFUND, 1_000)[0] == "@@ answer @@"


def test_line_breaks_are_kept_and_a_changed_one_is_marked():
    before = "Steps:\n1. open the app\n2. tap refunds\n3. pick the order and confirm it there"
    after = "Steps:\n1. open the app\n2. tap refunds 3. pick the order and confirm it now"
    lines = word_diff(before, after)
    assert lines[:2] == ["  Steps:", "  1. open the app"]
    assert (
        lines[2] == "! 2. tap refunds [-\u21b5-] 3. pick the order and confirm it [-there-] {+now+}"
    )


def test_a_word_longer_than_a_line_is_broken_over_lines_of_its_own():
    token = "x" * 300
    lines = word_diff(f"see {token} ok", f"see {token}y ok")
    assert all(len(line) <= WIDTH + 2 for line in lines)
    assert lines[0] == "  see"


HOSTILE = [
    "[-fake-]",
    "{+fake+}",
    "[-",
    "-]",
    "{+",
    "+}",
    "[-]",
    "{+}",
    "a-]",
    "]x",
    "x[",
    "}{",
    "[\\-",
    "\\",
    "```",
    "~~~",
    "</details>",
    "<!-- agent-eval-action:agent-eval -->",
    "@octocat",
    "#12",
    "\u202e",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*HOSTILE, "the", "refund", "is", "sent"]), min_size=1, max_size=30),
    st.lists(st.sampled_from([*HOSTILE, "the", "refund", "is", "sent"]), min_size=1, max_size=30),
)
def test_no_agent_text_makes_a_marker(before, after):
    old, new = " ".join(before), " ".join(after)
    read_before, read_after = decode(word_diff(old, new))
    if "\\" not in old + new:  # a backslash of the agent's own reads ambiguously
        assert (read_before, read_after) == (old.split(), new.split())
    else:
        assert (len(read_before), len(read_after)) == (len(old.split()), len(new.split()))


def _regression(expected: str, baseline: str, current: str):
    base = answering(case("c", {T: [1.0], R: [1.0]}, eval_set_id="s"), expected, baseline)
    cur = answering(case("c", {T: [1.0], R: [0.2]}, ["b"], eval_set_id="s"), expected, current)
    return pair([base], [cur])


def test_hostile_answers_cannot_leave_the_block_or_inject_markup():
    attack = (
        "Done. ``` ~~~ </details> <details><summary>x</summary> "
        "<!-- agent-eval-action:agent-eval --> @octocat #12 {+approved+} [-nothing-] "
    )
    base_text = attack + "Your refund of $40.00 is on its way to the card ending in 4242 today."
    cur_text = attack + "Your refund of $400.00 is on its way to the card ending in 4242 today."
    diff, current = _regression("expected", base_text, cur_text)
    for text in (markdown.comment(diff, current), markdown.summary(diff, current)):
        page = structure(text)  # every tag closed where it was opened
        assert text.count("<!-- agent-eval-action:agent-eval -->") == (
            1 if text.startswith("<!--") else 0
        )
        assert page.comments in ([" agent-eval-action:agent-eval "], [])
        (block,) = page.code_blocks
        assert "@@ answer, word by word" in block
        assert "[-$40.00-] {+$400.00+}" in block
        # the agent's markers are its text, not changes: backslashed
        assert "{\\+approved\\+}" in block and "[\\-nothing\\-]" in block
        assert "</details> <details><summary>x</summary>" in block  # as text, in the block
        assert all(len(line) <= WIDTH + 2 for line in block.splitlines())


def test_every_line_of_a_block_fits_the_width():
    long_call = "lookup(" + '{"note": "' + "word " * 60 + '"})'
    turn = TurnDiff(
        turn=0,
        user_text="please " * 50,
        expected_calls=[long_call],
        baseline_calls=None,
        current_calls=["x" * 500],
        expected_answer=EXPECTED_REFUND,
        baseline_answer=None,
        current_answer=ACTUAL_REFUND,
        baseline_run=None,
        current_run=1,
    )
    text = divergence_text(turn, 2_000)
    assert all(len(line) <= WIDTH + 2 for line in text.splitlines())
    assert text.startswith("@@ turn 1: expected → current run 1 @@\n  user: please")
