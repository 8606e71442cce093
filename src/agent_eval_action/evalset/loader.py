"""Read one eval file: its cases, each with the line it starts on, in the EvalSet model
whatever form the file has (an EvalSet, or one of ADK's legacy forms).

Where ADK silently falls back to its legacy converter (and then fails with a
KeyError far from the cause), this loader says what is wrong, in one line that
names the file and the line. Which files, and the test_config.json beside each, make
the suite (pipeline/suite.py).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake
from pydantic_core import ErrorDetails

from ..errors import InputError
from ..files import decode, jsonpos, read_bytes, sha256
from .discovery import EvalTarget, display_path
from .legacy import LegacyConverter, is_row_list
from .models import EvalCase, EvalSet

INITIAL_SESSION_NAME = "initial.session.json"  # optional, beside a legacy .test.json

Form = Literal["evalset", "legacy_rows", "legacy_cases"]


class EvalFile(BaseModel):
    """One eval file's cases (those selected by FILE:id1,id2), and where each starts."""

    eval_set_id: str
    file: str
    file_sha256: str
    form: Form
    cases: list[EvalCase]
    case_lines: dict[str, int]


def load_eval_file(
    target: EvalTarget, warnings: list[str], initial_session: InitialSession | None = None
) -> EvalFile:
    """`initial_session`: the session named by --initial-session, for legacy row files
    (ADK's `initial_session_file`); without it, the initial.session.json beside such a file."""
    file = display_path(target.path)
    raw = read_bytes(target.path, file)
    located = jsonpos.parse(decode(raw, file), file)
    data = located.data
    if isinstance(data, dict):
        form: Form = "evalset"
        _refuse_initial_session(
            initial_session, "an EvalSet gives each case its session_input", file
        )
        eval_set = _EvalSetReader(located, file, warnings).read()
    elif isinstance(data, list) and data:
        converter = LegacyConverter(located, file, warnings)
        eval_set_id = target.legacy_id()
        if is_row_list(data):
            form = "legacy_rows"
            session = (
                initial_session.data
                if initial_session is not None
                else _session_beside(target.path, file, warnings)
            )
            eval_set = converter.from_rows(eval_set_id, Path(eval_set_id).name, session)
        else:
            form = "legacy_cases"
            _refuse_initial_session(
                initial_session, "its cases give their own initial_session", file
            )
            eval_set = converter.from_cases(eval_set_id)
    else:
        raise InputError(
            "not an ADK eval file: expected an EvalSet object "
            '({"eval_set_id": ..., "eval_cases": [...]}) or a non-empty list of legacy rows',
            file,
            1,
        )
    case_lines = _case_lines(eval_set, located, form, file)
    cases = _select(eval_set.eval_cases, target.ids, file)
    return EvalFile(
        eval_set_id=eval_set.eval_set_id,
        file=file,
        file_sha256=sha256(raw),
        form=form,
        cases=cases,
        case_lines=case_lines,
    )


class InitialSession(BaseModel):
    """A legacy file's initial session as ADK's `initial_session_file` holds it."""

    file: str
    data: dict[str, Any]


def load_initial_session(path: Path, warnings: list[str]) -> InitialSession:
    """An initial-session file (`app_name`, `user_id`, `state`), checked as ADK's converter
    reads it; InputError naming the file and line."""
    display = display_path(path)
    located = jsonpos.parse(decode(read_bytes(path, display), display), display)
    LegacyConverter(located, display, warnings).check_session(located.data, ())
    return InitialSession(file=display, data=located.data)


def _session_beside(eval_path: Path, file: str, warnings: list[str]) -> dict[str, Any] | None:
    """The initial.session.json beside a legacy row file, said aloud: ADK's AgentEvaluator
    reads it only when a test passes it as `initial_session_file`."""
    path = eval_path.parent / INITIAL_SESSION_NAME
    if not path.is_file():
        return None
    session = load_initial_session(path, warnings)
    warnings.append(
        f"{file}:1: warning: its session (app_name, user_id, state) comes from "
        f"{session.file} beside it; ADK's AgentEvaluator uses that file only when given "
        "initial_session_file (--initial-session FILE names it explicitly)"
    )
    return session.data


def _refuse_initial_session(session: InitialSession | None, why: str, file: str) -> None:
    """--initial-session is for legacy row files only, as ADK's AgentEvaluator refuses an
    explicit initial session for an EvalSet."""
    if session is not None:
        raise InputError(
            f"--initial-session {session.file} applies to legacy .test.json row files only; {why}",
            file,
            1,
        )


def _case_lines(
    eval_set: EvalSet, located: jsonpos.Located, form: Form, file: str
) -> dict[str, int]:
    lines: dict[str, int] = {}
    for index, case in enumerate(eval_set.eval_cases):
        if form == "evalset":
            key = "eval_cases" if "eval_cases" in located.data else "evalCases"
            line = located.line((key, index))
        else:  # legacy: a case per list entry, or the whole file for rows
            line = located.line((index,)) if form == "legacy_cases" else 1
        if case.eval_id in lines:
            raise InputError(
                f'duplicate eval_id "{case.eval_id}" (first at line {lines[case.eval_id]})',
                file,
                line,
            )
        lines[case.eval_id] = line
    return lines


def _select(cases: list[EvalCase], ids: list[str] | None, file: str) -> list[EvalCase]:
    if ids is None:
        return cases
    by_id = {case.eval_id: case for case in cases}
    missing = [i for i in ids if i not in by_id]
    if missing:
        close = difflib.get_close_matches(missing[0], list(by_id), n=1)
        hint = (
            f' (did you mean "{close[0]}"?)'
            if close
            else f"; its cases: {', '.join(list(by_id)[:10])}{' …' if len(by_id) > 10 else ''}"
        )
        raise InputError(f"no case with eval_id {', '.join(repr(i) for i in missing)}{hint}", file)
    return [by_id[i] for i in dict.fromkeys(ids)]


class _EvalSetReader(jsonpos.FileReader):
    """Validates an EvalSet object, with friendly checks for the usual mistakes first."""

    def read(self) -> EvalSet:
        data = self.located.data
        if "query" in data:
            raise self.error(
                "this looks like one legacy row; a legacy .test.json file is a JSON list of rows",
                (),
            )
        camel = [k for k in ("evalSetId", "evalCases") if k in data]
        if camel:
            self.warn(
                f'"{camel[0]}": adk eval reads only snake_case keys at the top of an EvalSet',
                (camel[0],),
            )
        if self.located.may_have_key("tool_name", "tool_input", "query"):
            self._check_tool_calls(data)
        try:
            eval_set = EvalSet.model_validate(data)
        except ValidationError as err:
            raise self._explain(err) from None
        for key in eval_set.model_extra or {}:
            self._refuse_twin(data, key, ())
            self.warn(f'unknown key "{key}" is ignored', (key,))
        cases_key = "eval_cases" if "eval_cases" in data else "evalCases"
        if not eval_set.eval_cases:
            raise self.error("the eval set has no cases", (cases_key,))
        for index, case in enumerate(eval_set.eval_cases):
            for key in case.model_extra or {}:
                self._refuse_twin(data[cases_key][index], key, (cases_key, index))
                self.warn(
                    f'case "{case.eval_id}": unknown key "{key}" is ignored',
                    (cases_key, index, key),
                )
            if case.conversation is not None and not case.conversation:
                raise self.error(
                    f'case "{case.eval_id}" has an empty conversation', (cases_key, index)
                )
        return eval_set

    def _check_tool_calls(self, data: dict[str, Any]) -> None:
        """The legacy row keys inside an EvalSet: ADK would fail with a KeyError elsewhere."""
        cases = _get(data, "eval_cases")
        for ci, case in enumerate(cases if isinstance(cases, list) else []):
            turns = _get(case, "conversation") if isinstance(case, dict) else None
            for ti, turn in enumerate(turns if isinstance(turns, list) else []):
                inter = _get(turn, "intermediate_data") if isinstance(turn, dict) else None
                calls = _get(inter, "tool_uses") if isinstance(inter, dict) else None
                for i, call in enumerate(calls if isinstance(calls, list) else []):
                    if isinstance(call, dict) and ("tool_name" in call or "tool_input" in call):
                        path = self._resolve(
                            (
                                "eval_cases",
                                ci,
                                "conversation",
                                ti,
                                "intermediate_data",
                                "tool_uses",
                                i,
                            )
                        )[0]
                        raise self.error(
                            'tool call uses "tool_name"/"tool_input"; EvalSet tool calls are "name"/"args"',
                            path,
                        )
                if isinstance(turn, dict) and "query" in turn:
                    path = self._resolve(("eval_cases", ci, "conversation", ti))[0]
                    raise self.error(
                        'turn uses the legacy "query" key; EvalSet turns have "user_content"', path
                    )

    def _explain(self, err: ValidationError) -> InputError:
        """The most specific of pydantic's errors, as one line at the right place."""
        best: tuple[int, jsonpos.Path, ErrorDetails] | None = None
        for detail in err.errors():
            path, depth = self._resolve(detail["loc"])
            if best is None or depth > best[0]:
                best = (depth, path, detail)
        assert best is not None
        _, path, detail = best
        where = _dotted(path)
        kind, message = detail["type"], detail["msg"]
        if kind == "extra_forbidden":
            self._refuse_twin(_at(self.located.data, path[:-1]), str(detail["loc"][-1]), path[:-1])
            message = f'unknown key "{detail["loc"][-1]}"'
        elif kind == "missing":
            message = f'missing required key "{to_snake(str(detail["loc"][-1]))}"'
        elif kind == "value_error":
            message = message.removeprefix("Value error, ")
        return self.error(f"{where}: {message}" if where else message, path)

    def _refuse_twin(self, obj: Any, key: str, path: jsonpos.Path) -> None:
        """A key given in both spellings: pydantic (and ADK) silently keep the camelCase one."""
        twins = (
            [k for k in obj if k != key and to_snake(k) == to_snake(key)]
            if isinstance(obj, dict)
            else []
        )
        if twins:
            raise self.error(
                f'"{key}" and "{twins[0]}" are the same key (snake_case and camelCase); keep one',
                (*path, key),
            )

    def _resolve(self, loc: tuple) -> tuple[jsonpos.Path, int]:
        """Map a pydantic error location onto keys as written in the file."""
        node: Any = self.located.data
        path: list[str | int] = []
        for item in loc:
            if isinstance(item, int):
                if isinstance(node, list) and 0 <= item < len(node):
                    path.append(item)
                    node = node[item]
                continue
            if not isinstance(node, dict) or item[:1].isupper() or "[" in item:
                continue  # a union member's tag, not a key
            key = next((k for k in (item, to_snake(item), to_camel(item)) if k in node), None)
            if key is None:
                break
            path.append(key)
            node = node[key]
        return tuple(path), len(path)


def _at(data: Any, path: jsonpos.Path) -> Any:
    for item in path:
        data = data[item]
    return data


_CAMEL = {
    key: to_camel(key) for key in ("eval_cases", "conversation", "intermediate_data", "tool_uses")
}


def _get(obj: dict[str, Any], snake: str) -> Any:
    """The value under a snake_case key or its camelCase twin (as pydantic reads them)."""
    return obj[snake] if snake in obj else obj.get(_CAMEL[snake])


def _dotted(path: jsonpos.Path) -> str:
    out = ""
    for item in path:
        out += f"[{item}]" if isinstance(item, int) else (f".{item}" if out else item)
    return out
