"""Write accepted expectations into the eval files, in place (accept/splice.py).

Each file is the one the Results name, below `root` (never through a link out of it), and
only when its bytes are still those the run read (`eval_sets[].file_sha256`): an eval file
edited since is refused, not merged. Per form, where a turn keeps what is rewritten:

- an EvalSet (snake_case or camelCase keys): `conversation[i].final_response`, and
  `conversation[i].intermediate_data` as written: `tool_uses` (with `tool_responses`), or
  `invocation_events` (ADK's recorded form: its call and response parts); a missing key
  added in the file's casing;
- legacy rows (`.test.json`, one case) and legacy cases (`data` rows): each row's
  `expected_tool_use` (`tool_name`, `tool_input`, `mock_tool_output`) and `reference` (the
  answer's text).

A tool response the file gave a call it still expects is kept; with `--with-tool-responses`
the run's are written instead.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel, to_snake

from ..files import read_bytes, replacing, sha256
from ..results import Results
from . import splice
from .plan import Accepted, Expectation, NotAccepted, pair

BOM = b"\xef\xbb\xbf"


@dataclass
class Edited:
    """One eval file: its text before and after, and the cases accepted in it."""

    file: str
    path: Path
    bom: bytes
    before: str
    after: str
    cases: list[Accepted]

    def diff(self) -> str:
        """The change as a unified diff that `git apply` takes."""
        lines = difflib.unified_diff(
            _patch_lines(self.before), _patch_lines(self.after), f"a/{self.file}", f"b/{self.file}"
        )
        return "".join(lines)

    def write(self) -> None:
        with replacing(self.path) as out:
            out.write(self.bom + self.after.encode("utf-8"))


NO_NEWLINE = "\n\\ No newline at end of file\n"


def _patch_lines(text: str) -> list[str]:
    """`text` as a patch's lines: split at "\n" alone (U+2028 or U+0085 inside a JSON string
    is no line break to git), a last line without one marked as git marks it."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if lines[-1]:
        lines[-1] += NO_NEWLINE
    else:
        lines.pop()
    return lines


def edit(
    results: Results, accepted: Sequence[Accepted], root: Path
) -> tuple[list[Edited], list[NotAccepted]]:
    """The eval files with the accepted cases' expectations rewritten (not yet written)."""
    by_file: dict[str, list[Accepted]] = defaultdict(list)
    for acceptance in accepted:
        by_file[acceptance.case.file].append(acceptance)
    edited, refused = [], []
    for file, cases in by_file.items():
        try:
            edited.append(_edit_file(results, file, cases, root))
        except _Refusal as why:
            refused += [NotAccepted(a.case.key, f"{file}: {why}") for a in cases]
    return edited, refused


class _Refusal(Exception):
    pass


def _edit_file(results: Results, file: str, cases: list[Accepted], root: Path) -> Edited:
    path = _beneath(root, file)
    entry = next(
        (
            e
            for e in results.eval_sets
            if e.file == file and e.eval_set_id == cases[0].case.eval_set_id
        ),
        None,
    )
    if entry is None:
        raise _Refusal("the Results name no eval set of this file")
    raw = read_bytes(path, file)
    if sha256(raw) != entry.file_sha256:
        raise _Refusal("changed since the run that the Results record: run the suite again")
    bom = BOM if raw.startswith(BOM) else b""
    text = raw[len(bom) :].decode("utf-8")
    data = json.loads(text)
    style = splice.Style.of(text)
    after = text
    for acceptance in cases:
        after = _edit_case(after, data, entry.form, acceptance, style)
    return Edited(file, path, bom, text, after, cases)


def _beneath(root: Path, file: str) -> Path:
    top = root.resolve()
    path = (top / file).resolve()
    if not path.is_relative_to(top):
        raise _Refusal(f"not below {root} once its links are followed")
    if not path.is_file():
        raise _Refusal(f"no such file below {root}")
    return path


def _edit_case(text: str, data: Any, form: str, acceptance: Accepted, style: splice.Style) -> str:
    eval_id = acceptance.case.eval_id
    if form == "evalset":
        return _evalset(text, data, eval_id, acceptance.turns, style)
    if form == "legacy_rows":
        return _rows(text, (), data, acceptance.turns, style)
    index = next(
        (i for i, c in enumerate(data) if isinstance(c, dict) and c.get("name") == eval_id), None
    )
    if index is None:
        raise _Refusal(f'no legacy case named "{eval_id}"')
    return _rows(text, (index, "data"), data[index]["data"], acceptance.turns, style)


def _evalset(
    text: str, data: dict[str, Any], eval_id: str, turns: list[Expectation], style: splice.Style
) -> str:
    name: Callable[[str], str] = to_camel if "evalCases" in data else str
    cases = data[name("eval_cases")]
    index = next(
        (i for i, c in enumerate(cases) if c.get(name("eval_id"), c.get("eval_id")) == eval_id),
        None,
    )
    if index is None:
        raise _Refusal(f'no case "{eval_id}"')
    conversation = cases[index].get("conversation") or []
    if len(conversation) != len(turns):
        raise _Refusal(f'case "{eval_id}" has {len(conversation)} turns, the run {len(turns)}')
    for number, (written, turn) in enumerate(zip(conversation, turns, strict=True)):
        at: splice.Path = (name("eval_cases"), index, "conversation", number)
        if turn.final_response is not None:
            text = _put(text, at, written, name("final_response"), turn.final_response, style)
        if turn.tool_uses is not None:
            text = _tool_uses(text, at, written, name, turn, style)
    return text


def _tool_uses(
    text: str,
    at: splice.Path,
    written: dict[str, Any],
    name: Callable[[str], str],
    turn: Expectation,
    style: splice.Style,
) -> str:
    """The turn's expected calls (and their responses) rewritten in the form it has."""
    assert turn.tool_uses is not None
    present = _present(written, "intermediate_data")
    data = written[present] if present is not None else None
    if not isinstance(data, dict):  # none written (or null): the whole of it, with the calls
        whole: dict[str, Any] = {name("tool_uses"): turn.tool_uses}
        responses = _kept_responses(turn, [], [])
        if responses:
            whole[name("tool_responses")] = responses
        return _put(text, at, written, name("intermediate_data"), whole, style)
    assert present is not None
    here = (*at, present)
    events = _present(data, "invocation_events")
    if events is not None:
        return _events(text, (*here, events), data[events], name, turn, style)
    calls, said = _listed(data, "tool_uses"), _listed(data, "tool_responses")
    changed = not _same(calls, turn.tool_uses)
    text = _put(text, here, data, name("tool_uses"), turn.tool_uses, style)
    if changed or turn.tool_responses is not None:
        responses = _kept_responses(turn, calls, said)
        if responses or said:
            text = _put(text, here, data, name("tool_responses"), responses, style, exact=True)
    return text


def _listed(data: dict[str, Any], key: str) -> list[Any]:
    present = _present(data, key)
    value = data.get(present) if present is not None else None
    return value if isinstance(value, list) else []


def _kept_responses(
    turn: Expectation, old_calls: list[Any], old_responses: list[Any]
) -> list[dict[str, Any]]:
    """The responses to write for the turn's new calls, paired with them by position: the
    run's (`--with-tool-responses`), else those the file gave to a call it still expects
    (the same name and arguments); up to the first call left without one, so none is read
    as another call's."""
    assert turn.tool_uses is not None
    if turn.tool_responses is not None:
        chosen = list(turn.tool_responses)
    else:
        unused = [
            (_call(c), r)
            for c, r in zip(old_calls, pair(old_calls, old_responses), strict=True)
            if r is not None
        ]
        chosen = []
        for call in turn.tool_uses:
            match = next((u for u in unused if u[0] == _call(call)), None)
            if match is not None:
                unused.remove(match)
            chosen.append(_no_id(match[1]) if match is not None else None)
    kept: list[dict[str, Any]] = []
    for response in chosen:
        if response is None:
            break
        kept.append(response)
    return kept


def _no_id(response: Any) -> Any:
    if isinstance(response, dict):
        return {k: v for k, v in response.items() if k != "id"}
    return response


def _events(
    text: str,
    at: splice.Path,
    events: Any,
    name: Callable[[str], str],
    turn: Expectation,
    style: splice.Style,
) -> str:
    """`invocation_events` (ADK's recorded form) with its tool call and response parts
    replaced: one event per new call, then its response's, where the first call was, in the
    casing its parts are written in; events with other parts (an intermediate text) stay,
    without their call parts."""
    assert turn.tool_uses is not None
    if not isinstance(events, list):
        raise _Refusal("its invocation_events is not a list")
    casing = _parts_casing(events) or name
    call_key, response_key = casing("function_call"), casing("function_response")
    calls: list[Any] = []
    said: list[Any] = []
    author: str | None = None
    kept: list[Any] = []
    insert_at: int | None = None
    for event in events:
        parts = _parts(event)
        if parts is None:
            kept.append(event)
            continue
        ours = [
            p
            for p in parts
            if _part(p, "function_call") is not None or _part(p, "function_response") is not None
        ]
        for part in ours:
            call, response = _part(part, "function_call"), _part(part, "function_response")
            if call is not None:
                calls.append(call)
                author = author or event.get("author")
            else:
                said.append(response)
        if ours and insert_at is None:
            insert_at = len(kept) + (len(ours) < len(parts))
        if len(ours) < len(parts):
            content = _present(event, "content")
            assert content is not None
            others = [p for p in parts if p not in ours]
            kept.append({**event, content: {**event[content], "parts": others}})
        elif not ours:
            kept.append(event)
    if _same(calls, turn.tool_uses) and turn.tool_responses is None:
        return text
    author = author or next((e.get("author") for e in events if isinstance(e, dict)), None)
    if not isinstance(author, str):
        raise _Refusal(
            "its expected invocation_events name no author to write the calls under; "
            "write them as tool_uses"
        )
    responses = _kept_responses(turn, calls, said)
    new: list[Any] = []
    for index, call in enumerate(turn.tool_uses):
        new.append(_event(author, "model", call_key, call))
        if index < len(responses):
            new.append(_event(author, "user", response_key, responses[index]))
    where = len(kept) if insert_at is None else insert_at
    rewritten = kept[:where] + new + kept[where:]
    if rewritten == events:
        return text
    return splice.replace(text, at, rewritten, style)


def _parts_casing(events: list[Any]) -> Callable[[str], str] | None:
    """How the events' call and response parts spell their keys, or None when none has one."""
    for event in events:
        for part in _parts(event) or ():
            for key in part if isinstance(part, dict) else ():
                if key in ("functionCall", "functionResponse"):
                    return to_camel
                if key in ("function_call", "function_response"):
                    return str
    return None


def _parts(event: Any) -> list[Any] | None:
    if not isinstance(event, dict):
        return None
    content = _present(event, "content")
    value = event.get(content) if content is not None else None
    parts = value.get("parts") if isinstance(value, dict) else None
    return parts if isinstance(parts, list) else None


def _part(part: Any, key: str) -> Any:
    present = _present(part, key) if isinstance(part, dict) else None
    return part[present] if present is not None else None


def _event(author: str, role: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"author": author, "content": {"role": role, "parts": [{key: value}]}}


def _rows(
    text: str, at: splice.Path, rows: list[Any], turns: list[Expectation], style: splice.Style
) -> str:
    if len(rows) != len(turns):
        raise _Refusal(f"{len(rows)} rows, the run {len(turns)} turns")
    for number, (row, turn) in enumerate(zip(rows, turns, strict=True)):
        here = (*at, number)
        if turn.tool_uses is not None:
            calls = _legacy_calls(row, turn)
            exact = turn.tool_responses is not None  # the same calls may get new outputs
            text = _put(text, here, row, "expected_tool_use", calls, style, exact=exact)
        if turn.final_response is not None:
            answer = "\n".join(p["text"] for p in turn.final_response["parts"])
            text = _put(text, here, row, "reference", answer, style)
    return text


def _legacy_calls(row: dict[str, Any], turn: Expectation) -> list[dict[str, Any]]:
    """A legacy row's `expected_tool_use`: each call with the `mock_tool_output` the run's
    tool gave it (`--with-tool-responses`), else the one the row gave the same call."""
    assert turn.tool_uses is not None
    old = [c for c in row.get("expected_tool_use") or [] if isinstance(c, dict)]
    outputs = [(_call(c), c["mock_tool_output"]) for c in old if "mock_tool_output" in c]
    calls = []
    for index, call in enumerate(turn.tool_uses):
        entry: dict[str, Any] = {"tool_name": call["name"], "tool_input": call["args"]}
        if turn.tool_responses is not None:
            response = turn.tool_responses[index]
            if response is not None:
                entry["mock_tool_output"] = response["response"]
        else:
            match = next((o for o in outputs if o[0] == _call(call)), None)
            if match is not None:
                outputs.remove(match)
                entry["mock_tool_output"] = match[1]
        calls.append(entry)
    return calls


def _put(
    text: str,
    at: splice.Path,
    written: dict[str, Any],
    key: str,
    value: Any,
    style: splice.Style,
    *,
    exact: bool = False,
) -> str:
    """`key` of the object at `at` set to `value`: replaced where it is (in either casing,
    its keys in the order written, left as it is when it already says the same, to the
    metrics, or to the byte with `exact`), else added as `key`."""
    present = _present(written, key)
    if present is None:
        return splice.add(text, at, key, value, style)
    old = written[present]
    if old == value or (not exact and _same(old, value)):
        return text
    if isinstance(old, dict) and isinstance(value, dict):
        order = [k for k in old if k in value] + [k for k in value if k not in old]
        value = {k: value[k] for k in order}
    return splice.replace(text, (*at, present), value, style)


def _same(old: Any, new: Any) -> bool:
    """Whether a written expectation already says what `new` says, to the metrics that read
    it: the same calls (name and arguments), or the same answer text."""
    if isinstance(new, list):
        return isinstance(old, list) and [_call(c) for c in old] == [_call(c) for c in new]
    if isinstance(new, dict):
        return isinstance(old, dict) and _text(old) == _text(new)
    return old == new


def _call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    name = call.get("name", call.get("tool_name"))
    args = call.get("args", call.get("tool_input")) or {}
    return (name, json.dumps(args, sort_keys=True))


def _text(content: dict[str, Any]) -> str:
    parts = content.get("parts") or []
    return "\n".join(
        p["text"] for p in parts if isinstance(p, dict) and p.get("text") and not p.get("thought")
    )


def _present(written: dict[str, Any], key: str) -> str | None:
    """`key` as the object writes it, in its own casing or the other (ADK reads both), or
    None when it lacks it."""
    return next((k for k in (key, to_camel(key), to_snake(key)) if k in written), None)
