"""The one-question order suite that confirmation, shard and paired tests drive through the
table agent (tests/workers/table_agent.py): what the agent answers per case and run comes
from a JSON table, so a test decides exactly which runs regress."""

from __future__ import annotations

from helpers.paths import WORKERS

TABLE_AGENT = WORKERS / "table_agent.py"
RIGHT = {"text": "Your order ships today.", "tools": [["track", {}]]}
SKIPS_THE_TOOL = {"text": "Your order ships today.", "tools": []}


def order_case(eval_id: str) -> dict:
    """An eval case that expects the `track` tool and RIGHT's answer."""
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": "Where is my order?"}]},
                "final_response": {"role": "model", "parts": [{"text": RIGHT["text"]}]},
                "intermediate_data": {"tool_uses": [{"name": "track", "args": {}}]},
            }
        ],
    }
