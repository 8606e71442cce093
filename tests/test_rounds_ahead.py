"""pipeline/ahead.py: how many later re-runs a round's stage starts on idle slots, and
which round takes each. The routes' own tests (test_confirm.py, test_action_confirm.py)
show the Results equal those of one re-run a round; these pin the limits."""

from __future__ import annotations

from agent_eval_action.core import CaseKey, Purpose, RunKey
from agent_eval_action.pipeline.ahead import Ahead, Limits, Rounds, Stages

WHY = Purpose("confirmation", "regressed")
A, B = CaseKey("shop", "a"), CaseKey("shop", "b")


def _ahead(concurrency: int = 4, runs: int = 3, limit: int = 300) -> Ahead[str]:
    return Ahead(concurrency, runs, limit)


def test_a_round_starts_what_later_rounds_may_ask_for_on_its_idle_slots():
    assert _ahead().extent([(A, WHY)], 1, scenario=False) == 2  # rounds 2 and 3
    assert _ahead().extent([(A, WHY)], 3, scenario=False) == 0  # the last round
    assert _ahead(concurrency=4).extent([(A, WHY), (B, WHY)], 1, scenario=False) == 1
    assert _ahead(concurrency=2).extent([(A, WHY), (B, WHY)], 1, scenario=False) == 0
    assert _ahead(limit=2).extent([(A, WHY)], 1, scenario=False) == 1  # within confirm-limit


def test_scenario_cases_and_other_rounds_never_run_ahead():
    """A scenario case's user simulator spends the judge's key: its re-runs are made one a
    round, as the key budget plans them."""
    assert _ahead().extent([(A, WHY)], 1, scenario=True) == 0
    suite = Purpose("suite_round", "the suite-level test")
    assert _ahead().extent([(A, suite)], 1, scenario=False) == 0


def test_each_round_takes_its_own_run_and_what_none_took_is_discarded(capsys):
    made: list[tuple[list[CaseKey], int, int]] = []
    recorded: list[list[tuple[CaseKey, int, str]]] = []

    def run(need, number, ahead):
        made.append(([key for key, _ in need], number, ahead))
        return {RunKey(*key, number + n): f"stage{number}" for n in range(ahead + 1) for key, _ in need}  # fmt: skip

    def record(taken, number, wanted):
        recorded.append([(key, number, held) for key, _, held in taken])
        return None

    rounds = Rounds(Stages(run, record, lambda key: False), Limits(1, 4, 3, 300, 10))
    rounds.round([(A, WHY)], 1)
    rounds.round([(A, WHY)], 2)
    rounds.ahead.finish()  # round 3 never asked for: the re-run started for it goes
    assert made == [([A], 2, 2)]  # one agent stage: runs 2, 3 and 4
    assert recorded == [[(A, 2, "stage2")], [(A, 3, "stage2")]]
    assert "re-runs: 2 used of 3 made" in capsys.readouterr().err
    assert rounds.ahead.waiting == {}


def test_re_runs_started_ahead_count_against_the_confirm_limit(monkeypatch):
    """Two cases regress; one's first re-run clears it, the other's three re-runs were
    started at once; then the suite-level test asks for a suite round. The stages start at
    most `confirm_limit` extra case-runs, the discarded ones counted (a hostile review saw
    8 of a limit of 6 when only the runs taken counted)."""
    from agent_eval_action.pipeline import confirm as pipeline_confirm

    a, b = CaseKey("s", "a"), CaseKey("s", "b")
    confirming = Purpose("confirmation", "x")
    script = iter([[(a, confirming), (b, confirming)], [(b, confirming)], [(b, confirming)], []])
    monkeypatch.setattr(pipeline_confirm, "to_confirm", lambda *_: next(script))
    suite = iter([[(a, Purpose("suite_round", "y")), (b, Purpose("suite_round", "y"))], []])
    monkeypatch.setattr(pipeline_confirm, "suite_round", lambda *_: next(suite))
    started: list[int] = []

    def run(need, run, ahead):
        made = {RunKey(*key, run + n): f"stage{run}" for n in range(ahead + 1) for key, _ in need}
        started.append(len(made))
        return made

    limit = 6
    rounds = Rounds(Stages(run, lambda *_: object(), lambda _: False), Limits(1, 8, 3, limit, 1))
    warnings = rounds.confirm(
        object(), object(), known=lambda: object(), compare=lambda _: object()
    )
    assert sum(started) <= limit, started
    assert started == [6]  # round 1: both cases and their later re-runs; nothing more fits
    assert any("suite" in w for w in warnings), warnings  # the suite round did not fit: said
