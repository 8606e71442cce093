"""The LLM judge: ADK's judged metrics, asked of Gemini through google-genai.

A judged metric is declared in metrics/builtin/ as a JudgedMetric (metric.py). The judge
stage itself (pipeline/judge.py) runs its evaluator on every finished case-run and
returns the verdicts that the score stage turns into Results. google-genai is imported
only when a call is due (and to check a criterion's judge_model_config), so
deterministic suites never load it.
"""

from ..criteria import DEFAULT_JUDGE_MODEL
from .metric import Evaluation, JudgedMetric, Request, check_judge_inputs, judge_header
from .outcome import CaseJudgement, JudgedRun, JudgeResults
from .settings import JudgeSettings, judge_settings

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "CaseJudgement",
    "Evaluation",
    "JudgeResults",
    "JudgeSettings",
    "JudgedMetric",
    "JudgedRun",
    "Request",
    "check_judge_inputs",
    "judge_header",
    "judge_settings",
]
