"""ADK's pytest route, through agent-eval-action: `AgentEvaluator.evaluate(...)` as ADK's
docs write it, with only the import changed (docs/running.md, "From ADK's pytest helper").

    PYTHONPATH=examples python -m pytest examples/customer_support/test_with_pytest.py

The first test passes; the second runs the whole folder, whose `gold_damaged_refund` fails
on purpose, and shows the table a failure prints (it is marked as an expected failure).
"""

from pathlib import Path

import pytest

from agent_eval_action.testing import AgentEvaluator

EVALS = Path(__file__).parent / "evals"


def test_refunds_for_verified_customers():
    AgentEvaluator.evaluate_sync(
        "customer_support",
        f"{EVALS / 'refund_flow.evalset.json'}:damaged_item_refund,unverified_customer",
        num_runs=1,
    )


@pytest.mark.xfail(raises=AssertionError, strict=True, reason="gold_damaged_refund, on purpose")
def test_every_case():
    AgentEvaluator.evaluate_sync("customer_support", str(EVALS), num_runs=1)
