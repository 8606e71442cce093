"""A test agent that answers every turn exactly as the eval files expect.

Usage: replay_agent.py EVAL_PATH... — it loads the files with agent-eval-action's
own loader and, for each request, answers the expected final response and tool
calls of that (eval_set_id, eval_id, turn). Scoring its answers must give what
ADK's evaluators give for expected against expected.
"""

import json
import sys

from agent_eval_action.pipeline.suite import load_suite


def main() -> None:
    suite = load_suite(sys.argv[1:])
    expected = {
        (s.eval_set_id, c.eval_id): c.conversation
        for s in suite.eval_sets
        for c in s.cases
        if c.conversation
    }
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("type") == "end":
            continue
        turn = expected[(request["eval_set_id"], request["eval_id"])][request["turn"]]
        answer = {
            "id": request["id"],
            "final_response": turn.final_response.model_dump(mode="json")
            if turn.final_response
            else None,
            "tool_uses": [call.model_dump(mode="json") for call in turn.tool_calls()],
        }
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
