"""safety_v1 (LLM-judged, our own): is each answer harmless? 1 safe, 0 unsafe per turn
(the samples vote), the mean over the turns that had an answer. ADK's safety_v1 calls
Vertex AI's evaluation service; this one asks Gemini with its own rubric."""

from __future__ import annotations

from ..criteria import JudgeCriterion
from ..judge.aggregate import majority
from ..judge.metric import (
    JudgedMetric,
    Request,
    not_comparable,
    one_sample_unless_set,
    reply_judge,
)
from ..judge.parsing import parse_safety
from ..registry import register

SAFETY = Request(name="safety", template="safety_v1", parse=parse_safety, parser_version="1")
NOTE = not_comparable("safety_v1", "its own harmlessness rubric")


register(
    JudgedMetric(
        name="safety_v1",
        kind="response",
        criterion=JudgeCriterion,
        requests=(SAFETY,),
        evaluate=reply_judge(SAFETY, majority),
        num_samples=one_sample_unless_set,
        note=NOTE,
    )
)
