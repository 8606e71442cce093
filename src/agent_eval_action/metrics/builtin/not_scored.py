"""ADK's metrics that this tool knows by name but does not compute: naming one in criteria
is an error that says why (ADK would fail later, or need what this tool does not have)."""

from ..registry import NotScored, register

# ADK's efficiency metrics are computed for every case and declared, with the error for
# naming one in criteria, in metrics/efficiency.py.

_MULTI_TURN = "multi-turn judged metrics are not supported yet"
register(
    NotScored(
        name="response_evaluation_score",
        kind="response",
        reason="it needs Vertex AI's evaluation service",
    )
)
register(
    NotScored(
        name="per_turn_user_simulator_quality_v1",
        kind="informational",
        reason="conversation scenarios are not supported yet",
    )
)
register(NotScored(name="multi_turn_task_success_v1", kind="response", reason=_MULTI_TURN))
register(NotScored(name="multi_turn_trajectory_quality_v1", kind="trajectory", reason=_MULTI_TURN))
register(NotScored(name="multi_turn_tool_use_quality_v1", kind="trajectory", reason=_MULTI_TURN))
register(
    NotScored(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        kind="trajectory",
        reason=_MULTI_TURN,
    )
)
