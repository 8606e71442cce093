"""The LLM judge: ADK's judged metrics, asked of Gemini through google-genai.

The judge stage itself (pipeline/judge.py) asks these evaluators and returns the
verdicts that the score stage turns into Results. google-genai is imported
only when a call is due (and to check a criterion's judge_model_config), so
deterministic suites never load it.
"""

from .outcome import CaseJudgement, JudgedRun, JudgeResults
from .rubrics import check_judge_inputs
from .settings import DEFAULT_JUDGE_MODEL, JudgeSettings, judge_settings

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "CaseJudgement",
    "JudgeResults",
    "JudgeSettings",
    "JudgedRun",
    "check_judge_inputs",
    "judge_settings",
]
