"""ADK's older eval-file forms, converted to the EvalSet model as ADK converts them.

- A flat list of rows (`query`, `expected_tool_use` with `tool_name`/`tool_input`
  and optionally `mock_tool_output`, `reference`): all rows are the turns of ONE case replayed in one session, as
  ADK's AgentEvaluator runs a `*.test.json` file. Its ids come from the file's
  path (never a random id) so the case keeps its identity across runs.
- A list of cases (`name`, `data` rows, `initial_session`), what `adk eval`'s
  fallback converter reads.

Rows are checked here, before conversion, so each error names the line in the
file the user wrote rather than a path in the converted model.
"""

from __future__ import annotations

from typing import Any

from ..files import jsonpos
from .models import (
    Content,
    EvalCase,
    EvalSet,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    Part,
    SessionInput,
)

_ROW_KEYS = {"query", "expected_tool_use", "reference", "expected_intermediate_agent_responses"}
_TOOL_KEYS = {"tool_name", "tool_input", "mock_tool_output"}


def is_row_list(data: list[Any]) -> bool:
    return bool(data) and isinstance(data[0], dict) and "data" not in data[0]


class LegacyConverter(jsonpos.FileReader):
    def from_rows(
        self, eval_set_id: str, eval_id: str, initial_session: dict[str, Any] | None
    ) -> EvalSet:
        case = self._case(eval_id, self.located.data, (), initial_session)
        return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=[case])

    def from_cases(self, eval_set_id: str) -> EvalSet:
        cases = []
        for index, entry in enumerate(self.located.data):
            path = (index,)
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise self.error(
                    'a legacy case needs a "name" string and a "data" list of rows', path
                )
            rows = entry.get("data")
            if not isinstance(rows, list):
                raise self.error(f'legacy case "{entry["name"]}" needs a "data" list of rows', path)
            session = entry.get("initial_session")
            if session is not None:
                self.check_session(session, (*path, "initial_session"))
            cases.append(self._case(entry["name"], rows, (*path, "data"), session))
        return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=cases)

    def check_session(self, session: Any, path: jsonpos.Path) -> None:
        """An initial session as ADK's converter reads it: its names strings, its state an object."""
        if not isinstance(session, dict):
            raise self.error(
                'an initial session must be an object with "state", "app_name", "user_id"', path
            )
        for key in ("app_name", "user_id"):
            if not isinstance(session.get(key, ""), str):
                raise self.error(f'"{key}" must be a string', (*path, key))
        if not isinstance(session.get("state") or {}, dict):
            raise self.error('"state" must be an object', (*path, "state"))

    def _case(
        self, eval_id: str, rows: list[Any], path: jsonpos.Path, session: dict | None
    ) -> EvalCase:
        if not rows:
            raise self.error(f'case "{eval_id}" has no rows', path)
        conversation = [self._invocation(row, (*path, i)) for i, row in enumerate(rows)]
        session_input = None
        if session:  # ADK fills missing names with ""
            session_input = SessionInput(
                app_name=session.get("app_name", ""),
                user_id=session.get("user_id", ""),
                state=session.get("state") or {},
            )
        return EvalCase(eval_id=eval_id, conversation=conversation, session_input=session_input)

    def _invocation(self, row: Any, path: jsonpos.Path) -> Invocation:
        if not isinstance(row, dict):
            raise self.error('a legacy row must be an object with a "query"', path)
        if "user_content" in row or "eval_id" in row:
            raise self.error(
                "this row is in the EvalSet schema; a list of rows must use the legacy "
                '"query"/"expected_tool_use"/"reference" keys',
                path,
            )
        if not isinstance(row.get("query"), str):
            raise self.error('a legacy row needs a "query" string', path)
        for key in row:
            if key not in _ROW_KEYS:
                self.warn(f'unknown row key "{key}" is ignored', (*path, key))
        reference = row.get("reference", "")
        if reference is None:  # ADK reads it as a text-less part: that turn's response scores 0
            self.warn(
                '"reference": null is read as ADK reads it, an answer with no text '
                '(response_match_score gives that turn 0); write the expected answer, or ""',
                (*path, "reference"),
            )
        elif not isinstance(reference, str):
            raise self.error('"reference" must be a string (or null)', (*path, "reference"))
        tools = row.get("expected_tool_use", [])
        if not isinstance(tools, list):
            raise self.error('"expected_tool_use" must be a list', (*path, "expected_tool_use"))
        calls = [self._tool_call(t, (*path, "expected_tool_use", i)) for i, t in enumerate(tools)]
        mocked = mock_outputs(tools)
        intermediate = []
        responses = row.get("expected_intermediate_agent_responses") or []
        if not isinstance(responses, list):
            raise self.error(
                '"expected_intermediate_agent_responses" must be a list',
                (*path, "expected_intermediate_agent_responses"),
            )
        for i, item in enumerate(responses):
            if not (
                isinstance(item, dict)
                and isinstance(item.get("author"), str)
                and isinstance(item.get("text"), str)
            ):
                raise self.error(
                    'an intermediate response needs "author" and "text" strings',
                    (*path, "expected_intermediate_agent_responses", i),
                )
            intermediate.append((item["author"], [Part(text=item["text"])]))
        return Invocation(
            user_content=Content.from_text(row["query"], "user"),
            final_response=Content(parts=[Part()], role="model")
            if reference is None
            else Content.from_text(reference, "model"),
            intermediate_data=IntermediateData(
                tool_uses=calls,
                tool_responses=[
                    FunctionResponse(name=call.name, response=output)
                    for call, output in zip(calls, mocked, strict=False)
                ],
                intermediate_responses=intermediate,
            ),
        )

    def _tool_call(self, tool: Any, path: jsonpos.Path) -> FunctionCall:
        if not isinstance(tool, dict):
            raise self.error(
                'an expected tool use must be an object with "tool_name" and "tool_input"', path
            )
        if "tool_name" not in tool and ("name" in tool or "args" in tool):
            raise self.error(
                'tool call uses "name"/"args"; legacy .test.json rows use "tool_name"/"tool_input"',
                path,
            )
        if not isinstance(tool.get("tool_name"), str):
            raise self.error('an expected tool use needs a "tool_name" string', path)
        if "tool_input" not in tool:
            raise self.error(
                f'tool use "{tool["tool_name"]}" needs "tool_input" (use {{}} for none)', path
            )
        args = tool["tool_input"]
        if args is not None and not isinstance(args, dict):
            raise self.error('"tool_input" must be an object', (*path, "tool_input"))
        for key in tool:
            if key not in _TOOL_KEYS:
                raise self.error(f'unknown key "{key}" in an expected tool use', (*path, key))
        return FunctionCall(name=tool["tool_name"], args=args)


def mock_outputs(tools: list[Any]) -> list[dict[str, Any]]:
    """A row's `mock_tool_output`s as the calls' expected responses (ADK's converter drops
    them; `--tools-from-eval-file` answers with them), up to the first call without one, so
    that a response pairs with its call by position; a value that is not an object is
    wrapped as ADK wraps a tool's non-dict result, `{"result": value}`."""
    outputs = []
    for tool in tools:
        if "mock_tool_output" not in tool:
            break
        output = tool["mock_tool_output"]
        outputs.append(output if isinstance(output, dict) else {"result": output})
    return outputs
