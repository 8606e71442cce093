"""multi_turn_task_success_v1 (LLM-judged, response): did the agent get the user's tasks done over the conversation? This tool's own stand-in for ADK's
Vertex AI metric (docs/adk-differences.md, "Vertex AI metrics"): the whole conversation
judged at once on the last turn (metrics/judge/conversation.py) against the fixed
rubrics its prompt lists; the run scores the share of rubrics met; one sample unless
judge_model_options.num_samples is set. Not comparable with ADK's Vertex score.
"""

from ..judge.conversation import fixed_rubric_metric
from ..registry import register

register(fixed_rubric_metric("multi_turn_task_success_v1", "response"))
