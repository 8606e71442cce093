"""The markdown report: golden files, its structure as GitHub renders it, and the size budget.

Golden files: tests/golden/*.md. After an intended change of the report, regenerate them
with `UPDATE_GOLDEN=1 python -m pytest tests/test_report_markdown.py` and review the diff.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.factory import case, results
from report_diffs import DIFFS, REPO, huge, mixed, no_baseline, pair

from agent_eval_action.compare import compare
from agent_eval_action.report import budget, markdown, render, sections
from agent_eval_action.report.budget import (
    Cut,
    Detail,
    Listing,
    Meter,
    Note,
    Shortens,
    fit,
    size,
)
from agent_eval_action.report.cuts import (
    DIVERGENCES,
    EVAL_SETS,
    FAILING,
    NOTES,
    OTHERS,
    REGRESSION_ROWS,
    TEXT,
    WARNINGS,
    counted,
)

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm is in the dev extra")
from cmarkgfm.cmark import Options as CmarkOptions  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
OPTIONS = markdown.Options(baseline_relation="the PR's merge-base")
T = "tool_trajectory_avg_score"
R = "response_match_score"


def to_html(text: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(text, options=CmarkOptions.CMARK_OPT_UNSAFE)


class Structure(HTMLParser):
    """Counts of elements, table rows as cell lists, text by element, open tags at the end."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: dict[str, int] = {}
        self.rows: list[list[str]] = []
        self.headings: list[str] = []
        self.code_blocks: list[str] = []
        self.comments: list[str] = []
        self.links: list[str] = []
        self.stack: list[str] = []
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "tr":
            self.rows.append([])
        if tag == "a":
            self.links.append(dict(attrs).get("href", ""))
        if tag in ("td", "th", "h3", "h4", "pre"):
            self._text = []
        if tag not in ("br", "hr", "img", "input"):
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append("".join(self._text).strip())
        elif tag in ("h3", "h4"):
            self.headings.append("".join(self._text).strip())
        elif tag == "pre":
            self.code_blocks.append("".join(self._text))
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            raise AssertionError(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")

    def handle_data(self, data):
        self._text.append(data)

    def handle_comment(self, data):
        self.comments.append(data)


def structure(text: str) -> Structure:
    parsed = Structure()
    parsed.feed(to_html(text))
    parsed.close()
    assert parsed.stack == [], f"unclosed: {parsed.stack}"
    return parsed


@pytest.mark.parametrize("name", sorted(DIFFS))
@pytest.mark.parametrize("kind", ["comment", "summary"])
def test_golden(name, kind):
    diff, current = DIFFS[name]()
    text = getattr(markdown, kind)(diff, current, OPTIONS)
    path = GOLDEN / f"{name}.{kind}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing: run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (UPDATE_GOLDEN=1 to accept)"


def test_comment_structure_as_github_renders_it():
    diff, current = mixed()
    text = markdown.comment(diff, current, OPTIONS)
    assert text.startswith("<!-- agent-eval-action:agent-eval -->\n")
    page = structure(text)
    assert page.comments == [" agent-eval-action:agent-eval "]
    assert page.headings[:3] == [
        "❌ 1 case errored: RuntimeError at agent/tools.py:16 · 2 trajectory regressions"
        " · 2 response regressions · 1 improvement · 4 still failing · 1 added · 1 removed"
        " · 0 unchanged",
        "Trajectory regressions (2)",
        "Response regressions (2)",
    ]
    # 3 divergences (one per regressed case), 4 of the cases still failing (against their
    # eval file) + 5 collapsed sections (the suite-level test is its own)
    assert page.tags["details"] == 12 and page.tags["summary"] == 12
    assert len(page.code_blocks) == 7
    assert '- lookup({"id": "same"})\n+ lookup({"id": "skipped lookup"})' in page.code_blocks[0]
    assert page.code_blocks[3].startswith("@@ turn 1: expected → current run 1 @@")
    assert to_html(text).count('<pre lang="diff">') == 7
    # tables: every row has as many cells as its header
    assert page.tags["table"] == 8
    header_row = ["eval set", "cases", "passed (baseline → now)", "regressed", "improved"]
    assert page.rows[0][:5] == header_row
    assert ["refunds", "3", "3 → 0", "3", "", "", ""] in page.rows
    regression_rows = [r for r in page.rows if r and r[0].startswith("refunds / lucky")]
    assert regression_rows == [
        [
            "refunds / lucky\nnew failure · lucky answer".replace("\n", ""),
            T,
            "1.000 → 0.000",
            "\u22121.000\xa0🟥🟥🟥🟥",
        ]
    ]
    assert f"https://github.com/{REPO}/commit/{'1' * 40}" in page.links
    assert f"https://github.com/{REPO}/actions/runs/101" in page.links
    assert "(the PR's merge-base), recorded 5 hours before this run" in text


def test_summary_expands_what_the_comment_collapses():
    diff, current = mixed()
    comment, summary = markdown.comment(diff, current), markdown.summary(diff, current)
    assert "<!--" not in summary
    assert structure(summary).tags["details"] == 7  # only the divergent turns
    assert "### ✅ Improvements (1)" in summary and "<summary>✅ Improvements" in comment


def test_regressions_come_before_everything_else():
    diff, current = mixed()
    text = markdown.comment(diff, current)
    order = [
        text.index(s)
        for s in (
            "Trajectory regressions",
            "Response regressions",
            "Improvements",
            "Still failing",
            "Flaky",
            "Usage",
        )
    ]
    assert order == sorted(order)


def test_without_a_baseline_says_so_first():
    diff, current = no_baseline()
    text = markdown.comment(diff, current)
    lines = text.splitlines()
    assert lines[1] == "### ❌ no baseline · 1 of 3 cases passed"
    assert lines[3].startswith("> ⚠️ **No baseline:** the baseline artifact has expired")
    assert "Baseline:" not in text and "(baseline → now)" not in text


def test_the_relation_slot_renders_nothing_when_absent():
    diff, current = mixed()
    text = markdown.comment(diff, current)
    assert "on <code>main</code>, recorded 5 hours" in text and "()" not in text


def test_links_only_from_values_github_would_give():
    diff, current = pair([case("c", {T: [1.0]})], [case("c", {T: [1.0]})])
    diff.baseline.source.repo = "evil/x)[y](https://phish.example"
    diff.current.run_id = "1) [x](https://phish.example"
    options = markdown.Options(server_url="javascript:alert(1)")
    text = markdown.comment(diff, current, options)
    assert "phish" not in text and "javascript" not in text
    text = markdown.comment(diff, current, markdown.Options(server_url="https://ghe.example.com/"))
    assert "https://ghe.example.com/octo-org/shop-agent/commit/" in text


def test_check_name_is_in_the_marker_and_cannot_break_it():
    diff, current = mixed()
    text = markdown.comment(diff, current, markdown.Options(check_name="evals --> <b>x"))
    assert text.splitlines()[0] == "<!-- agent-eval-action:evals --- -b-x -->"
    assert text.count("-->") == 1 and text.count("<!--") == 1


# ---- the budget ------------------------------------------------------------------------


ITEMS = Cut("items", drop=0, one="item")


def listing_of_100(detail: Detail, meter: Meter) -> str:
    """A one-section report the way templates print it: 100 items of 10 bytes, then how
    many were left out."""
    items = Listing.of(ITEMS, range(100), detail)

    def section() -> str:
        text = "".join(meter.item(items, i, caller=lambda: "x" * 10) for i in items.items)
        return text + meter.more(items, caller=lambda left: f" ({left} left out)")

    return meter.section((ITEMS,), section, lambda: (size(" (100 left out)"), {ITEMS: 100}))


def test_fit_returns_the_most_detail_that_fits():
    assert fit(listing_of_100, 10_000, Detail(), [ITEMS]) == "x" * 1000
    text = fit(listing_of_100, 500, Detail(), [ITEMS])
    assert size(text) <= 500 and text.startswith("x" * 480) and text.endswith("(52 left out)")
    assert fit(listing_of_100, 20, Detail(), [ITEMS]) == " (100 left out)"


def test_fit_renders_only_the_items_a_plan_can_show():
    """1,000 items of 10 bytes in 500: the first render stops once the items it measured
    are over the limit (no plan can show more), and the result is the one a full first
    render plans: the first 48 items and how many were left out."""
    rendered = [0]

    def render(detail: Detail, meter: Meter) -> str:
        items = Listing.of(ITEMS, range(1_000), detail)

        def item() -> str:
            rendered[0] += 1
            return "x" * 10

        def section() -> str:
            text = "".join(meter.item(items, i, caller=item) for i in items.items)
            return text + meter.more(items, caller=lambda left: f" ({left} left out)")

        return meter.section((ITEMS,), section, lambda: (size(" (1000 left out)"), {ITEMS: 1_000}))

    assert fit(render, 500, Detail(), [ITEMS]) == "x" * 480 + " (952 left out)"
    assert rendered[0] == 51 + 48  # 51 items weighed (510 bytes > 500), 48 shown


class Text(Shortens):
    """An item whose text the budget can shorten: `chars` bytes of it."""

    def text_bytes(self, chars: int) -> int:
        return chars


def test_fit_weighs_every_item_whose_text_could_shrink_enough():
    """100 items of 1,000-character texts in 15,000 bytes: each could shrink to nothing, so
    none may be left unweighed; texts are shortened first (cut first), every item stays."""
    text_cut = Cut("text", drop=0, chars=True)
    texts = [Text() for _ in range(100)]

    def render(detail: Detail, meter: Meter) -> str:
        items = Listing.of(ITEMS, texts, detail)

        def section() -> str:
            shown = (
                meter.item(items, t, caller=lambda: "x" * detail.text_chars) for t in items.items
            )
            return "".join(shown) + meter.more(items, caller=lambda left: f" ({left} left out)")

        return meter.section((ITEMS, text_cut), section, lambda: (0, {ITEMS: 100}))

    text = fit(render, 15_000, Detail(text_chars=1_000), [text_cut, ITEMS])
    assert text == "x" * 15_000  # 100 items of 150 characters


LIMITS = (3_000, 8_000, 20_000, markdown.COMMENT_LIMIT, 150_000, 300_000, 700_000)


def reports(diff, current) -> list[str]:
    return [
        *(markdown.comment(diff, current, limit=limit) for limit in LIMITS),
        *(markdown.summary(diff, current, limit=limit) for limit in LIMITS),
        *markdown.check_parts(diff, current),
    ]


def test_a_report_weighed_in_part_is_the_report_weighed_in_full(big, monkeypatch):
    """The first render's early stop changes nothing: each report of a 5,000-case diff, at
    limits from 3 KB to 700 KB, is the one planned from a render that weighed every item."""
    diff, current = big
    meters: list[Meter] = []

    def kept(*args: object) -> Meter:
        meters.append(Meter(*args))  # type: ignore[arg-type]
        return meters[-1]

    monkeypatch.setattr(budget, "Meter", kept)
    made = reports(diff, current)
    first = meters[0].sections  # the comment's first render at 3 KB: it stopped early
    assert any(len(m.items[c]) < m.totals[c] for m in first for c in m.items)
    # the rows of the other cases are cut first: with the regression rows alone over the
    # limit, none of them is rendered to be weighed
    others = [m.items[OTHERS] for m in first if OTHERS in m.items]
    assert others and not any(others)
    monkeypatch.setattr(budget, "Meter", lambda *args: Meter())  # no limit: weigh all
    assert made == reports(diff, current)


def test_leaving_out_rows_never_brings_in_a_later_block():
    """With `fail-on: threshold`, the failing cases are cut after the other cases: a plan
    that leaves out the improvements (and their first divergent turns) keeps the still
    failing cases' blocks at the count it planned, never more (it once took the places of
    the improvements' blocks, and the report came out over the limit)."""
    before, after = [], []
    long = "a fairly long agent answer that goes on " * 5
    for i in range(120):  # improved trajectories, answers failing on both sides
        name = f"better_{i:03d}"
        before.append(case(name, {T: [0.0], R: [0.1]}, [f"old {i}"], eval_set_id="a", line=i))
        after.append(case(name, {T: [1.0], R: [0.1]}, [f"{long}{i}"], eval_set_id="a", line=i))
    for i in range(120):
        name = f"failing_{i:03d}"
        before.append(case(name, {T: [0.0]}, [f"old {i}"], eval_set_id="b", line=i))
        after.append(case(name, {T: [0.0]}, [f"{long}x{i}"], eval_set_id="b", line=i))
    diff, current = pair(before, after, fail_on=("regression", "threshold"))
    assert size(markdown.summary(diff, current)) > 200_000
    for limit in range(47_385, 51_500, 211):  # seven of these came out over the limit
        for kind in ("comment", "summary"):
            text = getattr(markdown, kind)(diff, current, limit=limit)
            assert size(text) <= limit


class Sized(Shortens):
    """A listed item with a text the budget can shorten: `fixed` bytes and a text of
    `chars` characters."""

    def __init__(self, name: str, fixed: int, chars: int) -> None:
        self.name, self.fixed, self.chars = name, fixed, chars
        self.renders = 0

    def text_bytes(self, chars: int) -> int:
        return min(chars, self.chars)

    def render(self, chars: int) -> str:
        self.renders += 1
        return f"[{self.name}{'.' * self.fixed}{'t' * min(chars, self.chars)}]"


def sized_section(meter: Meter, rows: Listing[Sized], blocks: Listing[Sized], chars: int) -> str:
    """A section of random_report: its rows, then the blocks of those listed."""
    out = [f"<{rows.cut.name}>"]
    out += (meter.item(rows, row, caller=partial(row.render, 9)) for row in rows.items)
    out.append(meter.more(rows, caller=lambda left: f"({left} more)"))
    out += (meter.item(blocks, b, caller=partial(b.render, chars)) for b in blocks.items)
    out.append(meter.more(blocks, caller=lambda left: f"({left} blocks)"))
    return "".join(out)


def empty_section(cut: Cut, total: int) -> tuple[int, dict[Cut, int]]:
    """A section of random_report that shows no row: its bytes and what it leaves out."""
    line = f"<{cut.name}>({total} more)" if total else f"<{cut.name}>"
    return size(line), {cut: total}


ROWS = [Cut(f"rows{d}", drop=d, one="row") for d in (0, 2, 7)]
BLOCKS = Cut("blocks", drop=5, one="block", across=True)
SHORTER = Cut("text", drop=4, chars=True)
STEPS = sorted({*ROWS, BLOCKS, SHORTER}, key=lambda cut: cut.drop)

Plan = list[tuple[Cut, list[Sized], bool]]  # per section: its rows' cut, its rows, blocks?


def random_report(seed: int) -> Plan:
    """A report of a few sections, as the real one is built: rows of cuts dropped at
    different steps, and blocks that belong to rows (counted `across` the sections): a
    row left out takes its block along."""
    rng = random.Random(seed)
    plan = []
    for s in range(rng.randint(1, 5)):
        cut = rng.choice(ROWS)
        items = [
            Sized(f"{s}.{i}", rng.randint(0, 60), rng.choice((0, 5, 300)))
            for i in range(rng.randint(0, 40))
        ]
        plan.append((cut, items, rng.random() < 0.5))
    return plan


def sized_report(plan: Plan) -> Callable[[Detail, Meter], str]:
    """The render of a report of these sections."""
    blocks, text = BLOCKS, SHORTER

    def render(detail: Detail, meter: Meter) -> str:
        done = 0  # the blocks of the sections before, in the full report
        texts = []
        for cut, items, with_blocks in plan:
            listed = Listing.of(cut, items, detail)
            limit = detail.limit(blocks)
            # a block per listed row, counted in the full report's order (report/view.py)
            numbered = list(enumerate(listed.items, start=done)) if with_blocks else []
            owned = tuple(b for n, b in numbered if limit is None or n < limit)
            block_list = Listing(blocks, owned, len(numbered))
            done += len(items) if with_blocks else 0
            texts.append(
                meter.section(
                    (cut, blocks, text),
                    partial(sized_section, meter, listed, block_list, detail.text_chars),
                    partial(empty_section, cut, len(items)),
                )
            )
        note = Note(omitted={}, minimal=detail.minimal, hint="")
        return "".join(texts) + meter.note(note, caller=lambda omitted: "✂️" * 4)

    return render


def fitted_both_ways(plan: Plan, limits: list[int], monkeypatch) -> tuple[list[str], list[str]]:
    """The reports fitted at these limits, weighed in part as `fit` does, and weighed in
    full (a Meter without a limit measures every item)."""
    render = sized_report(plan)

    def each() -> list[str]:
        made = []
        for limit in limits:
            try:
                made.append(fit(render, limit, Detail(text_chars=300), STEPS))
            except (ValueError, RuntimeError) as err:  # ValueError: even the minimal is over
                made.append(repr(err))
        return made

    in_part = each()
    monkeypatch.setattr(budget, "Meter", lambda *args: Meter())
    return in_part, each()


@pytest.mark.parametrize("seed", range(40))
def test_fit_weighs_in_part_and_plans_as_if_it_had_weighed_all(seed, monkeypatch):
    """On random reports at random limits, the first render's early stop (by each list's
    own items, the items of cuts dropped later, and `across` counts) changes no plan."""
    rng = random.Random(seed)
    limits = [rng.randint(20, 3_000) for _ in range(12)]
    in_part, in_full = fitted_both_ways(random_report(seed), limits, monkeypatch)
    assert in_part == in_full
    assert not any("RuntimeError" in made for made in in_part)


def test_the_rows_a_plan_drops_later_stop_the_weighing_of_others(monkeypatch):
    """The first section's rows are dropped last and alone over the limit, so no plan shows
    a row of the second (dropped first): none of those is rendered to be weighed, and the
    report is the one a render that weighs everything plans."""
    first = [Sized(f"a{i:02d}", 10, 0) for i in range(20)]  # 15 bytes each: 300 in all
    second = [Sized(f"b{i:02d}", 10, 0) for i in range(20)]
    plan = [(ROWS[2], first, False), (ROWS[0], second, False)]
    in_part, in_full = fitted_both_ways(plan, [250], monkeypatch)
    assert in_part == in_full and size(in_part[0]) <= 250
    assert in_part[0].count("[a") > 0 and "[b" not in in_part[0]
    assert [row.renders for row in second] == [1] * 20  # by the render that weighs all


def test_fit_falls_back_to_the_minimal_report():
    def render(detail: Detail, meter: Meter) -> str:
        return "short" if detail.minimal else "x" * 1000

    assert fit(render, 100, Detail(), [ITEMS]) == "short"
    with pytest.raises(ValueError, match="even the minimal report is 5 bytes"):
        fit(render, 4, Detail(), [ITEMS])


def test_fit_catches_a_line_printed_outside_the_meter():
    def render(detail: Detail, meter: Meter) -> str:
        items = Listing.of(ITEMS, range(100), detail)
        text = meter.section(
            (ITEMS,),
            lambda: "".join(meter.item(items, i, caller=lambda: "x" * 10) for i in items.items),
            lambda: (0, {}),
        )
        return text + (f" ({items.left} left out)" if items.left else "")  # not measured

    with pytest.raises(RuntimeError, match="outside `budget`"):
        fit(render, 500, Detail(), [ITEMS])


def test_the_sections_give_the_order_the_steps_and_the_note():
    assert [s.name for s in sections.SECTIONS] == [
        "head",
        "eval_sets",
        "trajectory",
        "response",
        "accept",
        "improvements",
        "still_failing",
        "not_comparable",
        "flaky",
        "suite_level",
        "efficiency",
        "hermetic",
        "notes",
        "warnings",
        "legend",
        "detects",
        "scoring",
        "usage",
    ]
    assert sections.steps(sections.SECTIONS) == [
        OTHERS,
        WARNINGS,
        NOTES,
        EVAL_SETS,
        TEXT,
        DIVERGENCES,
        FAILING,
        REGRESSION_ROWS,
    ]
    assert sections.steps(sections.of(["head"])) == [EVAL_SETS]
    templates = Path(markdown.__file__).parent / "templates"
    assert all((templates / s.template).is_file() for s in sections.SECTIONS)
    # the ✂️ note names what was left out, most important first
    assert counted({NOTES: 1, OTHERS: 0, REGRESSION_ROWS: 1_200}) == "1,200 regression rows, 1 note"
    assert counted({}) == "details"


@pytest.fixture
def renders(monkeypatch):
    """How many times the report is rendered."""
    count = [0]
    page = render.page

    def counted(*args, **kwargs):
        count[0] += 1
        return page(*args, **kwargs)

    monkeypatch.setattr(render, "page", counted)
    return count


def test_the_budget_renders_at_most_twice_and_the_result_fits(renders):
    diff, current = mixed()
    full = size(markdown.summary(diff, current))
    for limit in range(1_900, full + 100, 97):  # the minimal comment: 1,841 bytes
        for kind in ("comment", "summary"):
            renders[0] = 0
            text = getattr(markdown, kind)(diff, current, limit=limit)
            assert size(text) <= limit and renders[0] <= 2
            assert ("✂️" in text) == (renders[0] == 2)
            structure(text)


@pytest.fixture(scope="module")
def big():
    return huge()


def test_a_5000_case_diff_fits_the_comment(big, renders):
    diff, current = big
    assert len(diff.cases) == 5_000 and diff.verdict.trajectory_regressions == 1_000
    text = markdown.comment(diff, current)
    assert size(text) <= markdown.COMMENT_LIMIT and renders[0] == 2
    assert text.count("<!-- agent-eval-action:agent-eval -->") == 1
    assert "✂️ **Shortened to fit GitHub's size limit:**" in text
    assert "the full report is in the job summary" in text
    # regressions are cut last: some are shown, and the rest are counted
    page = structure(text)
    shown = sum(1 for r in page.rows if len(r) == 4 and r[0].startswith("set_") and r[1] == T)
    left = re.search(r"… and ([\d,]+) more trajectory regressions not shown", text)
    assert shown > 0 and left and shown + int(left.group(1).replace(",", "")) == 1_000


def test_a_5000_case_diff_fits_a_smaller_budget_and_the_summary(big):
    diff, current = big
    small = markdown.comment(diff, current, limit=8_000)
    assert (
        size(small) <= 8_000
        and "Trajectory regressions (1,000)" in small
        and "Response regressions (1,000)" in small
    )
    summary = markdown.summary(diff, current)
    assert size(summary) <= markdown.SUMMARY_LIMIT and summary.count("\n") > 1_000
    head, body = markdown.check_parts(diff, current)
    assert size(head) <= markdown.CHECK_LIMIT and size(body) <= markdown.CHECK_LIMIT


def test_long_answers_are_shortened_not_cut_mid_markup():
    long = "word " * 20_000 + "```"
    diff, current = pair(
        [case("c", {T: [1.0]}, eval_set_id="s")], [case("c", {T: [0.0]}, [long], eval_set_id="s")]
    )
    text = markdown.comment(diff, current)
    assert "more characters)" in text
    assert structure(text).tags["pre"] == 1


def test_long_answers_go_before_whole_cases():
    before = [case(f"c{i}", {T: [1.0], R: [1.0]}, eval_set_id="s") for i in range(6)]
    after = [
        case(f"c{i}", {T: [0.0], R: [0.1]}, ["word " * 1000], eval_set_id="s") for i in range(6)
    ]
    diff, current = pair(before, after)
    full = markdown.comment(diff, current)
    limit = size(full) - 2_000
    text = markdown.comment(diff, current, limit=limit)
    assert limit - 100 < size(text) <= limit  # no more is cut than needed
    assert "1 eval set row not shown" in text and "regressions not shown" not in text
    assert structure(text).tags["pre"] == 6  # every first divergent turn, shorter
    left = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) more characters\)", text)]
    assert min(left) > max(
        int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) more characters\)", full)
    )


def test_zero_cases():
    current = results()
    text = markdown.comment(compare(current, current), current)
    assert "**Gate failed** (fail-on <code>regression</code>): no case was evaluated" in text


def test_the_runs_warnings_are_listed_collapsed_and_not_said_twice():
    diff, current = mixed()
    current.warnings[:] = [
        "evals/orders.evalset.json:3: warning: unknown key 'foo'",
        "the judge model answered 2 requests only after retries",
        "confirmation re-runs stopped at the limit of 300 extra case-runs",
    ]
    # the action says what a run could not do at the top of the report too
    diff.verdict.notes.append("⚠️ Confirmation re-runs stopped at the limit of 300 extra case-runs.")
    text = markdown.comment(diff, current, OPTIONS)
    page = structure(text)
    assert "⚠️ 2 warnings from this run" in text
    assert "unknown key 'foo'" in text and "only after retries" in text
    assert text.lower().count("stopped at the limit") == 1
    assert page.tags["details"] == 13  # one more collapsed section
    # under the size budget they go right after the other cases, and the ✂️ note counts them
    assert sections.steps(sections.SECTIONS)[:2] == [OTHERS, WARNINGS]
    assert counted({WARNINGS: 2, NOTES: 1}) == "1 note, 2 warnings"
