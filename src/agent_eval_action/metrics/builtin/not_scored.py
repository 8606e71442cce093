"""ADK's metrics that this tool knows by name but does not compute: naming one in criteria
is an error that says why (ADK would fail later, or need what this tool does not have)."""

from ..registry import NotScored, register

# ADK's efficiency metrics: informational, and ADK adds them to every result itself
# (naming one in criteria is an error there too).
for _name in (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
):
    register(NotScored(name=_name, kind="informational"))
