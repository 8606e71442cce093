"""Issue 33's judged pull request, for each route's "each question is judged once" test:
20 order cases scored by `final_response_match_v2` with `num_samples` 3. Main's agent answers
every case the same way; the pull request's changes one answer (and skips the tool there: a
regression that each of its 3 confirmation re-runs shows again, with that same answer).
There is no history, only the baseline.

Each question is judged once per run: the changed answer costs NUM_SAMPLES calls, the 19
unchanged answers reuse the baseline's verdicts, and the re-runs reuse the run's own. Each
case asks its own question (its user message names it), so no two cases share a verdict.

The agent comes in two forms with one table of answers: the table agent for `--command`
(the CLI and the action) and an ADK package with a scripted model (the pytest route).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from agent_eval_action.pipeline.options import DEFAULTS
from helpers.table_suite import RIGHT

CASES = [f"c{n:02d}" for n in range(20)]
CHANGED = CASES[0]
NUM_SAMPLES = 3
CONFIRM_RUNS = DEFAULTS.run.confirm_runs  # 3: the test relies on the default
CRITERIA = {
    "tool_trajectory_avg_score": 1.0,
    "final_response_match_v2": {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": NUM_SAMPLES},
    },
}
MAIN = {case: {"text": "It ships today.", "tools": [["track", {}]]} for case in CASES}
PR = {**MAIN, CHANGED: {"text": RIGHT["text"], "tools": []}}  # another answer, and no tool
CALLS = NUM_SAMPLES  # the changed answer, judged once
REUSED = (len(CASES) - 1) * NUM_SAMPLES + CONFIRM_RUNS * NUM_SAMPLES  # main's, then the run's


def write_judged_suite(folder: Path) -> Path:
    """The suite's eval folder under `folder`, with its test_config.json."""
    cases = [
        {
            "eval_id": case,
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": f"{case}: Where is it?"}]},
                    "final_response": {"role": "model", "parts": [{"text": RIGHT["text"]}]},
                    "intermediate_data": {"tool_uses": [{"name": "track", "args": {}}]},
                }
            ],
        }
        for case in CASES
    ]
    evals = folder / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    suite = {"eval_set_id": "shop", "eval_cases": cases}
    (evals / "shop.evalset.json").write_text(json.dumps(suite, indent=2))
    (evals / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}, indent=2))
    return evals


ADK_AGENT = """
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

TABLE = {table!r}


def _says(parts):
    return LlmResponse(content=types.Content(role="model", parts=parts))


class Scripted(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        first = llm_request.contents[0]
        case = " ".join(p.text or "" for p in first.parts or []).split(":")[0]
        entry = TABLE[case]
        last = llm_request.contents[-1]
        if entry["tools"] and not any(p.function_response for p in last.parts or []):
            calls = [types.FunctionCall(name=name, args=args) for name, args in entry["tools"]]
            yield _says([types.Part(function_call=call) for call in calls])
            return
        yield _says([types.Part(text=entry["text"])])


def track() -> dict:
    return {{"status": "shipped"}}


root_agent = LlmAgent(name="shop", model=Scripted(), tools=[track])
"""


def write_adk_agent(folder: Path, name: str, table: dict) -> Path:
    """An ADK agent package `folder`/`name` whose model answers each case from `table`."""
    package = folder / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(textwrap.dedent(ADK_AGENT.format(table=table)))
    return package
