"""A customer-support agent for a refund flow, built with Google ADK (see README.md)."""

from . import agent  # noqa: F401  (adk eval, adk api_server and agent-eval-action look here)
