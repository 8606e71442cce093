"""The one-question order suite that confirmation, shard and paired tests drive through the
table agent (tests/workers/table_agent.py): what the agent answers per case and run comes
from a JSON table, so a test decides exactly which runs regress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def write_order_suite(folder: Path, ids: list[str], **dumps: Any) -> Path:
    """`folder`/evals/shop.evalset.json: one order case per id (json.dumps options `dumps`)."""
    evals = folder / "evals"
    evals.mkdir(exist_ok=True)
    path = evals / "shop.evalset.json"
    suite = {"eval_set_id": "shop", "eval_cases": [order_case(i) for i in ids]}
    path.write_text(json.dumps(suite, **dumps) + "\n")
    return path
