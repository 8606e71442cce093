"""Judging a whole conversation at once, as ADK's multi-turn metrics do: one request per
run, on the last turn, showing every turn (user messages, tool calls with their results,
the agent's replies) and every agent's instructions and tools; per rubric the samples vote
(a tie is "no"), the run scores the mean of its rubrics, and the turns before the last are
not evaluated by design (no score, and not "incomplete").

The rubrics are a criterion's and a case's (rubric_based_multi_turn_trajectory_quality_v1),
or a fixed list written in the metric's own prompt template, as `- [id: ID] text` lines
(this tool's stand-ins for ADK's Vertex AI multi-turn metrics).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...core import MetricKind
from ...traces import ActualTurn
from ..criteria import JudgeCriterion
from ..registry import mean
from .aggregate import rubric_means
from .inputs import (
    NO_INSTRUCTIONS,
    NO_TOOL_DECLARATIONS,
    content_text,
    developer_instructions,
    tool_declarations,
)
from .metric import (
    Evaluation,
    JudgedMetric,
    NoVerdict,
    Request,
    not_comparable,
    one_sample_unless_set,
)
from .outcome import JudgedRun
from .parsing import RubricAnswer, normalize_property, parse_rubric_answers
from .prompts import properties_text, template
from .rubrics import RubricJudge
from .service import Answer

_LISTED = re.compile(r"^- \[id: ([^\]]+)\] (.+)$", re.M)
Rubrics = Callable[[Evaluation], list[tuple[str, str]]]


def listed_rubrics(template_name: str) -> list[tuple[str, str]]:
    """The fixed rubrics a prompt template lists, as (id, text)."""
    return _LISTED.findall(template(template_name).text)


def _json(value: object) -> str:
    return json.dumps(value if value else {}, ensure_ascii=False, sort_keys=True)


def conversation(users: Sequence[str], turns: Sequence[ActualTurn]) -> str:
    """Every turn as ADK's dialogue lays it out: USER TURN n, the agent's texts, tool calls
    and tool outputs in order, then its reply."""
    lines: list[str] = []
    for number, (user, turn) in enumerate(zip(users, turns, strict=True), start=1):
        if user:
            lines.append(f"USER TURN {number}: {user}")
        agent = "agent"
        if turn.invocation_events:
            agent = turn.invocation_events[0].author
            for event in turn.invocation_events:
                role = "USER" if event.author.lower() == "user" else f"AGENT ({event.author})"
                parts = (event.content.parts or []) if event.content else []
                if texts := [p.text for p in parts if p.text]:
                    lines.append(f"{role} TURN {number}: {' '.join(texts)}")
                for part in parts:
                    if part.function_call is not None:
                        call = part.function_call
                        lines.append(
                            f"{role} TURN {number} (tool call): {call.name}({_json(call.args)})"
                        )
                    if part.function_response is not None:
                        out = part.function_response
                        lines.append(
                            f"{role} TURN {number} (tool output): {out.name} -> {_json(out.response)}"
                        )
        else:
            for call in turn.tool_uses:
                lines.append(
                    f"AGENT (agent) TURN {number} (tool call): {call.name}({_json(call.args)})"
                )
            for out in turn.tool_responses:
                lines.append(
                    f"AGENT (agent) TURN {number} (tool output): {out.name} -> {_json(out.response)}"
                )
        if reply := content_text(turn.final_response).replace("\n", " "):
            lines.append(f"AGENT ({agent}) TURN {number}: {reply}")
    return "\n".join(lines)


def _every(values: Sequence[str], none: str) -> str:
    """Each distinct value once, in order; `none` when every turn lacked it."""
    kept = list(dict.fromkeys(v for v in values if v != none))
    return "\n\n".join(kept) or none


@dataclass(frozen=True)
class ConversationJudge:
    """Judges a run's whole conversation with `request` on `rubrics(ev)`."""

    request: Request[list[RubricAnswer]]
    rubrics: Rubrics

    async def evaluate(self, ev: Evaluation) -> JudgedRun:
        last = len(ev.turns) - 1
        if last < 0:
            return ev.result(None, [])
        listed = self.rubrics(ev)
        ids = [rid for rid, _ in listed]
        by_text = {normalize_property(text): rid for rid, text in listed}
        prompt = self.request.render(
            developer_instructions=_every(
                [developer_instructions(t, every_agent=True) for t in ev.turns], NO_INSTRUCTIONS
            ),
            tool_declarations=_every(
                [tool_declarations(t) for t in ev.turns], NO_TOOL_DECLARATIONS
            ),
            conversation=conversation(
                [content_text(w.user_content) for w in ev.expected], ev.turns
            ),
            properties=properties_text(listed),
        )
        voter = RubricJudge("", self.request, final_answer=False)
        votes: dict[str, float | None] = {}

        def read(answer: Answer) -> float | None:
            votes.update(voter.votes(answer, ids, by_text))
            missing = [rid for rid, score in votes.items() if score is None]
            if missing and len(missing) < len(ids):  # stricter than ADK, which drops them
                raise NoVerdict(f"the judge gave no verdict for rubric {', '.join(missing)}")
            return None if missing else mean(list(votes.values()))

        _, score = await ev.judge(self.request, prompt, last, read)
        per_turn: list[float | None] = [*([None] * last), score]
        return ev.result(score, per_turn, rubric_means([votes]))


def fixed_rubric_metric(name: str, kind: MetricKind) -> JudgedMetric:
    """A stand-in for one of ADK's multi-turn Vertex AI metrics: the whole conversation
    judged once, on the last turn, against the fixed rubrics listed in the prompt template
    named after the metric; one sample unless judge_model_options.num_samples is set."""
    rubrics = Request(name="rubrics", template=name, parse=parse_rubric_answers, parser_version="1")
    return JudgedMetric(
        name=name,
        kind=kind,
        criterion=JudgeCriterion,
        requests=(rubrics,),
        evaluate=ConversationJudge(rubrics, lambda ev: listed_rubrics(name)).evaluate,
        num_samples=one_sample_unless_set,
        note=not_comparable(name, "fixed rubrics of its own over the whole conversation"),
    )
