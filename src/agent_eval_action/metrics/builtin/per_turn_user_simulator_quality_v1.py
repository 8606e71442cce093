"""per_turn_user_simulator_quality_v1 (LLM-judged, informational): did the user simulator
follow the scenario? It grades the simulator, not the agent, so it is on no axis: recorded
and shown, never part of the case's status or of a regression. ADK 2.13's semantics
(PerTurnUserSimulatorQualityV1):

- turn 1 scores 1 when its user text, stripped, equals the starting prompt (no call);
- every later turn asks the judge whether that user message suits the plan, given the
  conversation before it; the samples vote (a tie fails);
- then one more request with the whole conversation and the stop signal as the "next
  message": if it fails, it replaces the last turn's result (the conversation did not end
  as it should have);
- a turn counts 1 when it passed (score >= threshold), else 0; the run scores the passing
  turns over all turns.

Unlike ADK (which counts such a turn as 0), a turn whose judging failed leaves the run
without a score (not_evaluated), as for every judged metric here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...evalset.models import ConversationScenario, Invocation, UserPersona
from ...traces import ActualTurn
from ..criteria import SimulatorQualityCriterion
from ..judge.aggregate import majority
from ..judge.inputs import content_text
from ..judge.metric import Evaluation, JudgedMetric, Request
from ..judge.outcome import JudgedRun
from ..judge.parsing import parse_is_valid
from ..judge.service import Answer
from ..registry import register
from ..simulation.config import sandbox

VERDICT = Request(
    name="user_turn",
    template="per_turn_user_simulator_quality_v1",
    parse=parse_is_valid,
    parser_version="1",
)
NO_SCENARIO = "per_turn_user_simulator_quality_v1 grades a conversation_scenario case's simulated user; this case has fixed turns"


def history(expected: Sequence[Invocation], turns: Sequence[ActualTurn]) -> str:
    """The conversation before a turn: user and agent texts (ADK's role: text lines)."""
    lines: list[str] = []
    for want, got in zip(expected, turns, strict=True):
        if user := content_text(want.user_content):
            lines.append(f"user: {user}")
        if got.final_response is not None:
            lines.append(
                f"{got.final_response.role or 'model'}: {content_text(got.final_response)}"
            )
    return "\n\n".join(lines)


def persona_rules(persona: UserPersona | str | None, stop_signal: str) -> str:
    """The persona's behaviours and what breaks them, ADK's {{ stop_signal }} filled in."""
    if not isinstance(persona, UserPersona):
        return ""

    def fill(text: str) -> str:
        return sandbox().from_string(text).render(stop_signal=stop_signal)

    lines = ["", "The simulated user also plays this persona; the message is bad if it breaks it:"]
    for behavior in persona.behaviors:
        lines.append(f"- {fill(behavior.description)}")
        lines.extend(f"  * bad if: {fill(rule)}" for rule in behavior.violation_rubrics)
    return "\n".join(lines)


def passed(score: float | None, threshold: float) -> float | None:
    """ADK's count of a turn: its score when it passed, 0 when it failed."""
    if score is None:
        return None
    return score if score >= threshold else 0.0


async def evaluate(ev: Evaluation) -> JudgedRun:
    scenario = ev.case.conversation_scenario
    if scenario is None:
        return ev.result(None, [], nothing=NO_SCENARIO)
    criterion = ev.criterion
    assert isinstance(criterion, SimulatorQualityCriterion)
    stop = criterion.stop_signal

    def prompt(before: int, message: str) -> str:
        return VERDICT.render(
            stop_signal=stop,
            persona=persona_rules(scenario.user_persona, stop),
            conversation_plan=scenario.conversation_plan,
            conversation_history=history(ev.expected[:before], ev.turns[:before]),
            generated_user_response=message,
        )

    def read(answer: Answer) -> float | None:
        return majority(VERDICT.parse(s.text) for s in answer.samples)

    async def turn(index: int, want: Invocation, got: ActualTurn) -> float | None:
        if index == 0:
            return first_turn(scenario, want)
        _, score = await ev.judge(
            VERDICT, prompt(index, content_text(want.user_content)), index, read
        )
        return score

    scores = await ev.each_turn(turn)
    last = len(scores) - 1
    _, ending = await ev.judge(VERDICT, prompt(len(scores), stop), last, read, step=1)
    if ending is not None and ending < criterion.threshold:
        scores[last] = ending  # the conversation did not end as it should have
    counted = [passed(score, criterion.threshold) for score in scores]
    known = [c for c in counted if c is not None]
    overall = sum(known) / len(counted) if counted and len(known) == len(counted) else None
    return ev.result(overall, counted)


def first_turn(scenario: ConversationScenario, want: Invocation) -> float:
    return float(content_text(want.user_content).strip() == scenario.starting_prompt.strip())


register(
    JudgedMetric(
        name="per_turn_user_simulator_quality_v1",
        kind="informational",
        criterion=SimulatorQualityCriterion,
        requests=(VERDICT,),
        evaluate=evaluate,
    )
)
