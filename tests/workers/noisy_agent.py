"""A protocol worker that answers like an LLM agent at a temperature: seeded randomness.

Usage: noisy_agent.py SEED [DROPPED_TOOL]. For case `order<i>` it looks the order up
(`lookup`, {"id": i}) and answers "Order <i> ships on Monday." — except that, drawn per
(seed, case, run, turn): cases order0-order2 reword the answer 30% of the time (below the
ROUGE threshold), and order3 looks the order up twice 10% of the time (another tool path).
DROPPED_TOOL: never call that tool (a real regression).
"""

import json
import random
import sys

SEED = sys.argv[1]
DROPPED = sys.argv[2] if len(sys.argv) > 2 else None

for line in sys.stdin:
    request = json.loads(line)
    if request.get("type") == "end":
        continue
    eval_id, run, turn = request["eval_id"], request["run"], request["turn"]
    draw = random.Random(f"{SEED}/{eval_id}/{run}/{turn}").random()
    number = int(eval_id.removeprefix("order"))
    calls = [{"name": "lookup", "args": {"id": number}}]
    text = f"Order {number} ships on Monday."
    if number <= 2 and draw < 0.3:
        text = "Sure thing, it leaves our warehouse early next week."
    if number == 3 and draw < 0.1:
        calls = calls * 2
    calls = [c for c in calls if c["name"] != DROPPED]
    answer = {"role": "model", "parts": [{"text": text}]}
    print(
        json.dumps({"id": request["id"], "final_response": answer, "tool_uses": calls}), flush=True
    )
