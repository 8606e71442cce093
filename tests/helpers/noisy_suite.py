"""The six-case order suite the noisy agent (tests/workers/noisy_agent.py) answers like an LLM
at a temperature: cases order0-order2 reword their answer now and then, order3 takes another
tool path now and then, order4 and order5 do the same every run."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.paths import WORKERS

NOISY_AGENT = WORKERS / "noisy_agent.py"


def order_suite(folder: Path) -> Path:
    """The suite's eval folder, written under `folder`: each case expects `lookup` of its
    order and "Order <n> ships on Monday."."""
    cases = [
        {
            "eval_id": f"order{n}",
            "conversation": [
                {
                    "user_content": {
                        "role": "user",
                        "parts": [{"text": f"When does order {n} ship?"}],
                    },
                    "final_response": {
                        "role": "model",
                        "parts": [{"text": f"Order {n} ships on Monday."}],
                    },
                    "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"id": n}}]},
                }
            ],
        }
        for n in range(6)
    ]
    evals = folder / "evals"
    evals.mkdir(exist_ok=True)
    (evals / "orders.evalset.json").write_text(
        json.dumps({"eval_set_id": "orders", "eval_cases": cases})
    )
    return evals
