"""The LLM judge: ADK's judged metrics, asked of Gemini through google-genai.

Pipeline stage (I/O): `judge_plan(plan, traces, settings, baseline)` returns the
verdicts and scores that `score_plan` turns into Results. google-genai is imported
only when a call is due (and to check a criterion's judge_model_config), so
deterministic suites never load it.
"""

from .outcome import CaseJudgement, JudgedRun, JudgeResults
from .rubrics import check_judge_inputs
from .settings import DEFAULT_JUDGE_MODEL, JudgeSettings, judge_settings
from .stage import blocked_by_outage, judge_plan, judged_metrics, no_key_advice

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "CaseJudgement",
    "JudgeResults",
    "JudgeSettings",
    "JudgedRun",
    "blocked_by_outage",
    "check_judge_inputs",
    "judge_plan",
    "judge_settings",
    "judged_metrics",
    "no_key_advice",
]
