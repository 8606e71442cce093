"""A metric's change is decided by a rule, recorded as a value (`MetricDiff.rule`), and no
decision reads the words of `reason`: every phrase of them (compare/wording.py) replaced by
nonsense gives the same Diff but for those words, over a corpus that reaches every rule; and
no code of the package parses a reason or a run's `confirms` (but where words are made)."""

from __future__ import annotations

import ast
import json
import random
import typing
from typing import Any

import pytest
from helpers.decision_corpus import compare_all, plain
from helpers.paths import ROOT

from agent_eval_action.compare import wording
from agent_eval_action.compare.model import NOISE_RULES, Diff, Rule
from agent_eval_action.report.labels import HEADLINE_SAYS, headline_parts, unsaid_reasons

# words a decision reading prefixes would trip on, among plain nonsense
TRAPS = ["within noise: ", "not reproduced: ", "confirmed in 1/1 re-runs", "beyond noise", ""]


def _decisions(diff: Diff) -> Any:
    """The Diff but for its words: every field but `reason`, `notes` and the time it was made."""
    return plain(diff, ("reason", "notes", "created_at"))


def test_the_corpus_reaches_every_rule_and_case_fact():
    diffs = compare_all()
    seen = {m.rule for diff in diffs for c in diff.cases for m in c.metrics}
    assert seen == set(Rule)
    cases = [c for diff in diffs for c in diff.cases]
    assert {c.errored_side for c in cases} == {None, "current", "baseline"}
    assert any(c.expectation_changed for c in cases) and any(c.no_longer_scored for c in cases)
    assert any(c.renamed_from for c in cases)


def test_scrambled_wording_changes_no_decision(monkeypatch: pytest.MonkeyPatch):
    today = compare_all()
    rng = random.Random(3)

    def nonsense(*_: Any, **__: Any) -> str:
        return rng.choice(TRAPS) + "".join(rng.choice("xyzq ;:") for _ in range(rng.randint(0, 12)))

    phrases = [
        n
        for n, v in vars(wording).items()
        if callable(v) and getattr(v, "__module__", "") == wording.__name__
    ]
    assert {"moved", "within_noise", "confirmed_in", "not_reproduced", "untellable"} <= set(phrases)
    for name in phrases:
        many = typing.get_type_hints(getattr(wording, name)).get("return") is not str
        monkeypatch.setattr(wording, name, (lambda *a, **k: (nonsense(),)) if many else nonsense)
    for name in ("NEW_METRIC", "NO_BASELINE_SCORE"):
        monkeypatch.setattr(wording, name, nonsense())
    scrambled = compare_all()
    assert [m.reason for d in scrambled for c in d.cases for m in c.metrics] != [
        m.reason for d in today for c in d.cases for m in c.metrics
    ]
    for one, two in zip(today, scrambled, strict=True):
        a, b = _decisions(one), _decisions(two)
        for key in a:
            assert a[key] == b[key], key


def test_a_diff_written_before_the_case_facts_reads_them_from_its_notes():
    facts = ("errored_side", "error", "expectation_changed", "no_longer_scored")
    for diff in compare_all():
        data = json.loads(diff.dump_json())
        for c in data["cases"]:
            for name in facts:
                c.pop(name, None)  # as a version before them wrote it
        old = Diff.from_json(json.dumps(data))
        for then, now in zip(old.cases, diff.cases, strict=True):
            assert [getattr(then, f) for f in facts] == [getattr(now, f) for f in facts]
            assert then.notes == now.notes


def test_the_gates_reasons_are_its_words_and_the_headline_states_those_it_says():
    for diff in compare_all():
        verdict = diff.verdict
        assert [r.text for r in verdict.why] == verdict.reasons
        parts = [p.replace(",", "") for p in headline_parts(diff)]
        for reason in verdict.why:
            said = reason.code in HEADLINE_SAYS
            if reason.code == "regressions":
                assert said and reason.text in parts
            elif reason.code == "errored":
                assert said and any(p.split(":")[0].endswith(" errored") for p in parts)
            else:
                assert not said and reason.text in unsaid_reasons(diff)


def test_a_case_is_likely_noise_when_and_only_when_a_rule_of_noise_decided_a_metric():
    for diff in compare_all():
        for c in diff.cases:
            by_rule = any(m.rule in NOISE_RULES for m in c.metrics)
            assert c.likely_noise == by_rule, (c.eval_id, [(m.rule, m.reason) for m in c.metrics])


# --- no code parses the words ----------------------------------------------------------------

PACKAGE = ROOT / "src" / "agent_eval_action"
PARSED = {"reason", "confirms", "notes"}
ADDING = {"append", "extend", "insert"}  # what writes a list of notes
# where words are made, or read once at the edge (results.kind_of: Results before `kind`)
EDGES = {"compare/wording.py", "results.py"}


def parses(source: str) -> list[tuple[int, str]]:
    """(line, what) of each place a `reason`, `confirms` or `notes` attribute is taken apart or
    compared: a method called on it (but adding to a list), an index or slice of it, or an
    operand of a comparison (but `is`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        taken: ast.expr | None = None
        if isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr not in ADDING
        ):
            taken = node.value
        elif isinstance(node, ast.Compare) and not all(
            isinstance(op, ast.Is | ast.IsNot) for op in node.ops
        ):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Attribute) and operand.attr in PARSED:
                    found.append((node.lineno, f"compares .{operand.attr}"))
        if isinstance(taken, ast.Attribute) and taken.attr in PARSED:
            found.append((node.lineno, f"takes .{taken.attr} apart"))
    return found


def test_no_decision_parses_a_reason_or_the_words_of_a_run():
    where = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in EDGES:
            continue
        where += [
            f"{name}:{line}: {what}" for line, what in parses(path.read_text(encoding="utf-8"))
        ]
    assert not where, (
        "decide with the values (MetricDiff.rule, RunRecord.purpose()):\n" + "\n".join(where)
    )


@pytest.mark.parametrize(
    "source",
    [
        "noisy = m.reason.startswith('within noise')",
        "first = m.reason.split('; ')[0]",
        "x = run.confirms[:5]",
        "same = m.reason == 'x'",
        "kept = 'sampling' in run.confirms",
        "first = diff.notes[0]",
        "said = any(n for n in case.notes.copy())",
    ],
)
def test_the_check_catches_each_way_of_parsing(source):
    assert parses(source)


def test_the_check_lets_words_be_shown():
    shown = "line = f'{m.metric}: {m.reason}'\nshown = bool(m.reason)\nm.reason = 'x'"
    assert not parses(shown + "\nverdict.notes.append('x')\nlisted = list(diff.notes)")
