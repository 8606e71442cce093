"""The drill-down report (report.html): escaping, links, filters' classes, runs, turns, the
judge's words, each case's history on main; `--html` on the command line; and the job
summary's pass-rate chart (report/chart.py)."""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
import sys
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.factory import NOW, case, results
from report_diffs import REPO, mixed

from agent_eval_action.cli import main
from agent_eval_action.compare import compare
from agent_eval_action.compare.record import MainRecord, Past
from agent_eval_action.core import Purpose
from agent_eval_action.report import chart, html
from agent_eval_action.report.drilldown import FILTERS
from agent_eval_action.report.model import Options
from agent_eval_action.results import (
    SUITE_ROUND,
    Content,
    FunctionCall,
    JudgeRecord,
    JudgeSample,
    JudgeVerdict,
    Results,
    Source,
    purpose_fields,
)

T, R = "tool_trajectory_avg_score", "response_match_score"
HOSTILE = (
    "<script>alert(1)</script><img src=x onerror=alert(2)> \"quoted\" 'single' "
    "**bold** [link](https://evil.example/x) @someone #12 \u202eevil\u202c"
)


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]

    def urls(self) -> list[str]:
        return [
            value or ""
            for _, attrs in self.tags
            for name, value in attrs.items()
            if name in ("src", "href", "action", "srcset", "poster", "data")
        ]


def _at(res: Results, hours: int, sha: str, run_id: str = "1") -> Results:
    return res.replace(
        created_at=NOW - timedelta(hours=hours),
        source=Source(repo=REPO, sha=sha, ref="refs/heads/main", run_id=run_id),
    )


def hostile_case():
    """A failing case whose agent, tool and eval file wrote markup, links and mentions."""
    res = case("bad", {T: [0.0], R: [0.2]}, ["x"], line=3)
    (turn,) = res.runs[0].turns()
    turn.user_content = Content.from_text(HOSTILE, "user")
    turn.expected.final_response = Content.from_text("expected " + HOSTILE, "model")
    assert turn.actual is not None
    turn.actual.final_response = Content.from_text("actual " + HOSTILE, "model")
    turn.actual.tool_uses = [FunctionCall(name="lookup", args={"q": HOSTILE})]
    res.metrics[R].judge = JudgeRecord(
        model="gemini-2.5-flash",
        prompt_version="1",
        parser_version="1",
        num_samples=1,
        verdicts=[
            JudgeVerdict(
                key="k",
                run=1,
                turn=0,
                request="verdict",
                samples=[JudgeSample(text="The answer is wrong because " + HOSTILE)],
                score=0.0,
            )
        ],
    )
    return res


def hostile_page() -> str:
    base = _at(results(case("bad", {T: [1.0], R: [1.0]}, line=3)), 5, "1" * 40)
    cur = _at(results(hostile_case()), 0, "2" * 40, "202")
    return html.render(compare(cur, base), cur, baseline=base)


def test_everything_the_agent_wrote_is_escaped_and_no_script_of_its_runs():
    page = hostile_page()
    parsed = Tags(page)
    # one <script>: ours; no <img>; no attribute the agent's text opened
    assert len(parsed.named("script")) == 1
    assert parsed.named("img") == []
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;quoted&#34;" in page and "&#39;single&#39;" in page
    # markdown stays text: no link to the host it names, in any attribute
    assert not any("evil.example" in url for url in parsed.urls())
    assert "**bold** [link](https://evil.example/x)" in "".join(parsed.text)
    # what reorders text is shown, not obeyed
    assert "\u202e" not in page and "\ufffdevil\ufffd" in page
    # the judge's own words are shown, escaped too
    assert "The answer is wrong because &lt;script&gt;" in page


def test_a_page_names_no_host_but_the_server_and_loads_nothing():
    page = hostile_page()
    parsed = Tags(page)
    urls = parsed.urls()
    assert urls, "the commit and run links"
    assert all(re.match(rf"https://github\.com/{REPO}/(commit|actions/runs)/\w+$", u) for u in urls)
    assert not any(attrs.get("src") for _, attrs in parsed.tags)
    assert parsed.named("link") == [] and parsed.named("iframe") == []
    # the policy allows only the page's own style and script, by their hashes
    (policy,) = [
        attrs["content"]
        for attrs in parsed.named("meta")
        if attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy is not None and policy.startswith("default-src 'none';")
    for tag in ("style", "script"):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", page, re.S)
        assert body is not None
        digest = base64.b64encode(hashlib.sha256(body.group(1).encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in policy


def test_links_only_from_values_shaped_as_githubs():
    base = _at(results(case("c", {T: [1.0]})), 5, "1" * 40)
    cur = _at(results(case("c", {T: [1.0]})), 0, "2" * 40).replace(
        source=Source(repo="x/y", sha="javascript:alert(1)", run_id="1 onclick=alert(1)")
    )
    page = html.render(compare(cur, base), cur, Options(server_url="javascript:alert(1)//"))
    assert Tags(page).urls() == []
    page = html.render(compare(cur, base), cur, baseline=base)
    # the baseline's commit and run at the top, its commit in the case's history
    assert sorted(Tags(page).urls()) == [
        f"https://github.com/{REPO}/actions/runs/1",
        *[f"https://github.com/{REPO}/commit/{'1' * 40}"] * 2,
    ]


def _cases(page: str) -> dict[str, set[str]]:
    """Each case's name and its filter classes."""
    found = re.findall(
        r'<details class="case([^"]*)" id="case-\d+">\s*<summary><span class="name">([^<]*)<',
        page,
    )
    return {name: set(classes.split()) for classes, name in found}


def test_every_case_carries_the_classes_its_filters_select_it_by():
    diff, cur = mixed()
    page = html.render(diff, cur)
    cases = _cases(page)
    assert len(cases) == len(diff.cases)
    assert cases["refunds / lucky"] == {"regressed", "failing", "axis-trajectory"}
    assert cases["refunds / fumbled"] == {"regressed", "failing", "axis-response"}
    assert cases["refunds / both"] >= {"regressed", "axis-trajectory", "axis-response"}
    assert cases["orders / fixed"] == set()
    assert cases["orders / stuck"] == {"failing", "axis-trajectory"}
    assert {"flaky", "failing"} <= cases["faq / noisy0"]
    assert "regressed" not in cases["faq / noisy0"]
    # regressions first, then failing, flaky and the rest
    names = list(cases)
    assert names[:3] == ["refunds / lucky", "refunds / fumbled", "refunds / both"]
    assert names.index("orders / stuck") < names.index("orders / fixed")
    # each filter's count is the number of cases with its class
    for name in FILTERS:
        count = sum(name in classes for classes in cases.values())
        label = name.removeprefix("axis-")
        assert f'value="{name}"> {label} ({count})</label>' in page


def test_without_javascript_everything_is_shown_and_opens():
    diff, cur = mixed()
    parsed = Tags(html.render(diff, cur))
    nav = [attrs for attrs in parsed.named("nav") if attrs.get("id") == "filters"]
    assert nav == [{"id": "filters", "hidden": None}]  # shown by the script only
    cases = [a for a in parsed.named("details") if "case" in (a.get("class") or "").split()]
    assert len(cases) == len(diff.cases) and not any("hidden" in a for a in cases)
    assert len(parsed.named("summary")) >= len(cases)


def test_each_run_and_turn_side_by_side_with_scores():
    before = [case("c", {T: [1.0, 1.0], R: [0.9, 0.9]})]
    after = [case("c", {T: [1.0, 0.0], R: [0.9, 0.5]}, ["same", "other"])]
    base = _at(results(*before), 5, "1" * 40)
    cur = _at(results(*after), 0, "2" * 40)
    page = html.render(compare(cur, base), cur, baseline=base)
    runs = re.findall(r'<details class="run">\s*<summary>(.*?)</summary>', page, re.S)
    assert len(runs) == 2
    assert "Run 1" in runs[0] and f"<code>{T}</code> 1.000" in runs[0]
    assert "Run 2" in runs[1] and f"<code>{T}</code> 0.000" in runs[1]
    assert f"<code>{R}</code> 0.500" in runs[1]
    # expected and actual side by side; the departing side marked
    assert page.count("<h5>expected tool calls</h5>") == 2
    assert "<code>lookup({&#34;id&#34;: &#34;other&#34;})</code>" in page
    second = page[page.index("Run 2 ·") :]
    assert '<div class="differs"><h5>actual tool calls</h5>' in second
    assert "<pre>answer other</pre>" in second


def test_each_run_says_why_it_ran_by_its_kind_never_calling_another_kind_a_confirmation():
    """A suite round's run and a confirmation re-run in one case: each heading names its own
    kind (they were all "confirmation re-run" once)."""
    base = _at(results(case("c", {T: [1.0]})), 5, "1" * 40)
    cur = case("c", {T: [0.0, 0.0, 0.0]}, ["x", "x", "x"])
    kinds = [
        Purpose("suite_round", f"{SUITE_ROUND}: trajectory p = 0.05"),
        Purpose("confirmation", f"trajectory {T}: passed -> failed"),
    ]
    runs = [
        cur.runs[0],
        *(r.replace(**purpose_fields(k)) for r, k in zip(cur.runs[1:], kinds, strict=True)),
    ]
    current = _at(results(cur.replace(runs=runs), num_runs=1), 0, "2" * 40)
    page = html.render(compare(current, base), current, baseline=base)
    heads = re.findall(r'<details class="run">\s*<summary>(.*?)</summary>', page, re.S)
    assert len(heads) == 3
    assert "(" not in heads[0].split("·")[0]  # the suite's own run says nothing of why
    assert heads[1].startswith(f"Run 2 (suite round: {SUITE_ROUND}: trajectory p = 0.05)")
    assert heads[2].startswith(f"Run 3 (confirmation re-run: trajectory {T}: passed")
    assert "confirmation" not in heads[1]


def test_each_case_shows_its_history_on_main_oldest_first():
    older = [
        _at(results(case("c", {T: [1.0]})), 48, "a" * 40),
        _at(results(case("c", {T: [0.0]}, ["x"])), 24, "b" * 40),
        _at(results(case("other", {T: [1.0]})), 12, "c" * 40),  # c not in it
    ]
    base = _at(results(case("c", {T: [1.0]})), 5, "d" * 40)
    cur = _at(results(case("c", {T: [0.0]}, ["x"])), 0, "e" * 40)
    page = html.render(
        compare(cur, base), cur, baseline=base, history=MainRecord.of(reversed(older))
    )
    table = page[page.index('<table class="history">') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td>(.*?)</tr>", table)
    labels = [re.sub("<[^>]+>", "", r.split("</td>")[0]) for r in rows]
    assert labels == ["aaaaaaa", "bbbbbbb", "ccccccc", "ddddddd (baseline)", "eeeeeee (this run)"]
    statuses = [re.search(r'class="status-([^"]+)"', r).group(1) for r in rows]
    assert statuses == ["passed", "failed", "\u2013", "passed", "failed"]
    assert [r.count("1.000") for r in rows] == [1, 0, 0, 1, 0]


def test_a_long_text_is_cut_and_says_so():
    res = case("c", {R: [0.0]}, line=1)
    (turn,) = res.runs[0].turns()
    assert turn.actual is not None
    turn.actual.final_response = Content.from_text("y" * 30_000, "model")
    cur = results(res)
    page = html.render(compare(cur, None), cur)
    assert "y" * 20_000 + " … (10,000 more characters)" in page
    assert "y" * 20_001 not in page


def test_compare_writes_the_page_with_html(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("base.json").write_text(results(case("c", {T: [1.0]})).dump_json())
    Path("old.json").write_text(_at(results(case("c", {T: [1.0]})), 48, "a" * 40).dump_json())
    Path("cur.json").write_text(results(case("c", {T: [0.0]}, ["skip"])).dump_json())
    argv = ["compare", "--baseline", "base.json", "--current", "cur.json", "--history", "old.json"]
    assert main([*argv, "--html", "out/report.html"]) == 1
    page = Path("out/report.html").read_text(encoding="utf-8")
    assert "drill-down report: out/report.html" in capsys.readouterr().err
    assert _cases(page) == {"s / c": {"regressed", "failing", "axis-trajectory"}}
    assert "<code>aaaaaaa</code>" in page  # the --history baseline is in the case's history


def test_the_chart_draws_each_axis_over_mains_baselines_then_this_run():
    older = _at(
        results(case("a", {T: [1.0], R: [1.0]}), case("b", {T: [0.0], R: [1.0]})), 48, "a" * 40
    )
    base = _at(
        results(case("a", {T: [1.0], R: [1.0]}), case("b", {T: [1.0], R: [1.0]})), 5, "b" * 40
    )
    cur = _at(
        results(case("a", {T: [1.0], R: [0.5]}), case("b", {T: [0.0], R: [1.0]})), 0, "c" * 40
    )
    assert chart.mermaid([Past.header(base), Past.header(older)], cur) == (
        "#### Pass rate per axis\n\n"
        "```mermaid\n"
        "---\n"
        "config:\n"
        "  themeVariables:\n"
        "    xyChart:\n"
        '      plotColorPalette: "#2f81f7, #f4900c"\n'
        "---\n"
        "xychart-beta\n"
        '  x-axis ["aaaaaaa", "bbbbbbb", "this run"]\n'
        '  y-axis "cases passed (%)" 0 --> 100\n'
        "  line [50, 100, 50]\n"
        "  line [100, 100, 50]\n"
        "```\n\n"
        "🟦 trajectory · 🟧 response: the share of cases that passed every metric of the axis, "
        "on main's baselines (oldest first) and in this run.\n"
    )


def test_the_chart_takes_no_text_from_a_results_file():
    name = 'x"]\n  line [1]\n```\n<script>'
    base = _at(results(case(name, {T: [1.0]}, eval_set_id=name)), 5, "1" * 40)
    base = base.replace(source=Source(sha='zz"] ```'))
    cur = _at(results(case(name, {T: [0.0]}, eval_set_id=name)), 0, "2" * 40)
    text = chart.mermaid([Past.header(base)], cur)
    assert name not in text and "zz" not in text and "<script>" not in text
    assert '  x-axis ["#1", "this run"]' in text
    assert "  line [100, 0]" in text
    assert "response" not in text.split("```")[1]  # no response metric: no response line


@pytest.mark.parametrize(
    "history",
    [[], [results(case("a", {"custom_metric": [1.0]}))]],
    ids=["no baseline", "no axis at every point"],
)
def test_no_chart_without_a_line_to_draw(history):
    cur = results(case("a", {T: [1.0]}))
    assert chart.mermaid([Past.header(r) for r in history], cur) == ""


def test_the_chart_keeps_the_newest_points():
    history = [_at(results(case("a", {T: [1.0]})), 100 - i, f"{i:07x}" * 2) for i in range(40)]
    shown = chart.points([Past.header(r) for r in history], results(case("a", {T: [0.0]})))
    assert len(shown) == chart.MAX_POINTS
    assert shown[0].label == f"{40 - chart.MAX_POINTS + 1:07x}" and shown[-1].label == "this run"


@pytest.mark.parametrize(
    ("url", "line"),
    [
        (
            "https://github.com/o/r/actions/runs/5/artifacts/77",
            "**Every case, run and turn:** [`report.html`](https://github.com/o/r/actions/runs/5/artifacts/77)",
        ),
        (
            "https://github.com/o/r/actions/runs/5#artifacts",
            "**Every case, run and turn:** `report.html` in [the run's artifacts](https://github.com/o/r/actions/runs/5#artifacts)",
        ),
        ("javascript:alert(1)//actions/runs/5#artifacts", None),
        ("https://github.com/o/r/actions/runs/5#artifacts)[x](https://evil.example", None),
    ],
    ids=["the file", "the run's artifacts", "not a URL", "markdown in it"],
)
def test_the_comment_links_to_the_report_only_at_a_runs_address(url, line):
    from agent_eval_action.report import markdown

    diff, cur = mixed()
    text = markdown.comment(diff, cur, Options(report_url=url))
    found = [row for row in text.splitlines() if "Every case, run and turn" in row]
    assert found == ([line] if line else [])
    assert "evil.example" not in text
    current = next(row for row in text.splitlines() if row.startswith("**Current:**"))
    assert current.endswith("\\") == bool(line)  # the line break joins the two lines


def test_run_writes_the_page_with_and_without_a_baseline(tmp_path, capsys):
    from helpers.paths import ROOT

    agent = shlex.join([sys.executable, str(ROOT / "examples" / "agent" / "support_agent.py")])
    argv = ["run", str(ROOT / "examples" / "evals"), "--command", agent]
    first, second = tmp_path / "first.html", tmp_path / "second.html"
    main([*argv, "--out", str(tmp_path / "base.json"), "--html", str(first)])
    alone = _cases(first.read_text(encoding="utf-8"))
    assert len(alone) == 6 and alone["support / gold_express_refund"] >= {"failing"}
    base = ["--baseline", str(tmp_path / "base.json")]
    main([*argv, *base, "--out", str(tmp_path / "cur.json"), "--html", str(second)])
    page = second.read_text(encoding="utf-8")
    assert len(_cases(page)) == 6 and "(baseline)" in page
    err = capsys.readouterr().err
    assert f"drill-down report: {first}" in err and f"drill-down report: {second}" in err


def test_a_renamed_case_shows_its_history_under_its_old_name():
    old = case("refund", {T: [1.0]}, line=10)
    new = case("refund_v2", {T: [0.0]}, ["skipped lookup"], line=10)
    old.content_sha256 = new.content_sha256 = "refund-content"
    base = _at(results(old), 5, "b" * 40)
    cur = _at(results(new), 0, "c" * 40)
    page = html.render(compare(cur, base), cur, baseline=base)
    assert list(_cases(page)) == ["s / refund_v2"]
    table = page[page.index('<table class="history">') :]
    rows = re.findall(r"<tr><td>(.*?)</tr>", table[: table.index("</table>")])
    assert [re.search(r'class="status-([^"]+)"', r).group(1) for r in rows] == ["passed", "failed"]
