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
from .patch import Region, applied, unified
from .plan import Accepted, Expectation, NotAccepted, pair

BOM = b"\xef\xbb\xbf"


@dataclass
class Edited:
    """One eval file: its text before, the lines edited in it, and the cases accepted."""

    file: str
    path: Path
    bom: bytes
    before: str
    regions: list[Region]
    cases: list[Accepted]

    @property
    def after(self) -> str:
        return applied(self.before, self.regions)

    def diff(self) -> str:
        """The change as a unified diff that `git apply` takes."""
        return unified(self.file, self.before, self.regions)

    def write(self) -> None:
        with replacing(self.path) as out:
            out.write(self.bom + self.after.encode("utf-8"))


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
    return Edited(file, path, bom, text, _regions(text, data, entry.form, cases), cases)


def _regions(text: str, data: Any, form: str, cases: list[Accepted]) -> list[Region]:
    """The lines the accepted cases' edits change: for each run of cases whose lines meet
    (one case, mostly; a whole file written on one line), the lines around them, edited
    from its last case back."""
    style = splice.Style.of(text)
    if form == "legacy_rows":  # one case: the whole file
        doc = splice.Doc(text, style)
        for acceptance in cases:
            _rows(doc, (), data, acceptance.turns)
        return [Region(0, len(text), doc.text)] if doc.text != text else []
    key, ids = _case_ids(data, form)
    places: dict[str, int] = {}
    for index, eval_id in enumerate(ids):
        if isinstance(eval_id, str):
            places.setdefault(eval_id, index)
    wanted: dict[int, list[Accepted]] = defaultdict(list)
    for acceptance in cases:
        found = places.get(acceptance.case.eval_id)
        if found is None:
            what = "case" if form == "evalset" else "legacy case named"
            raise _Refusal(f'no {what} "{acceptance.case.eval_id}"')
        wanted[found].append(acceptance)
    spans = splice.item_spans(text, key)
    blocks: list[tuple[int, int, list[int]]] = []
    for index in sorted(wanted):
        start, end = spans[index]
        first = text.rfind("\n", 0, start) + 1
        last = text.find("\n", end)
        last = len(text) if last < 0 else last + 1
        if blocks and first < blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(last, blocks[-1][1]), [*blocks[-1][2], index])
        else:
            blocks.append((first, last, [index]))
    regions = []
    for first, last, indexes in blocks:
        marks = {(*key, index): spans[index][0] - first for index in indexes}
        doc = splice.Doc(text[first:last], style, marks)
        for index in reversed(indexes):
            for acceptance in wanted[index]:
                if form == "evalset":
                    _evalset(doc, data, index, acceptance.case.eval_id, acceptance.turns)
                else:
                    _rows(doc, (index, "data"), data[index]["data"], acceptance.turns)
        if doc.text != text[first:last]:
            regions.append(Region(first, last, doc.text))
    return regions


def _case_ids(data: Any, form: str) -> tuple[splice.Path, list[Any]]:
    """Where the cases are, and each case's id (a legacy case's name)."""
    if form == "evalset":
        name: Callable[[str], str] = to_camel if "evalCases" in data else str
        cases = data[name("eval_cases")]
        return (name("eval_cases"),), [c.get(name("eval_id"), c.get("eval_id")) for c in cases]
    return (), [c.get("name") if isinstance(c, dict) else None for c in data]


def _beneath(root: Path, file: str) -> Path:
    top = root.resolve()
    path = (top / file).resolve()
    if not path.is_relative_to(top):
        raise _Refusal(f"not below {root} once its links are followed")
    if not path.is_file():
        raise _Refusal(f"no such file below {root}")
    return path


def _evalset(
    doc: splice.Doc, data: dict[str, Any], index: int, eval_id: str, turns: list[Expectation]
) -> None:
    name: Callable[[str], str] = to_camel if "evalCases" in data else str
    conversation = data[name("eval_cases")][index].get("conversation") or []
    if len(conversation) != len(turns):
        raise _Refusal(f'case "{eval_id}" has {len(conversation)} turns, the run {len(turns)}')
    for number, (written, turn) in enumerate(zip(conversation, turns, strict=True)):
        at: splice.Path = (name("eval_cases"), index, "conversation", number)
        if turn.final_response is not None:
            _put(doc, at, written, name("final_response"), turn.final_response)
        if turn.tool_uses is not None:
            _tool_uses(doc, at, written, name, turn)


def _tool_uses(
    doc: splice.Doc,
    at: splice.Path,
    written: dict[str, Any],
    name: Callable[[str], str],
    turn: Expectation,
) -> None:
    """The turn's expected calls (and their responses) rewritten in the form it has."""
    assert turn.tool_uses is not None
    present = _present(written, "intermediate_data")
    data = written[present] if present is not None else None
    if not isinstance(data, dict):  # none written (or null): the whole of it, with the calls
        whole: dict[str, Any] = {name("tool_uses"): turn.tool_uses}
        responses = _kept_responses(turn, [], [])
        if responses:
            whole[name("tool_responses")] = responses
        return _put(doc, at, written, name("intermediate_data"), whole)
    assert present is not None
    here = (*at, present)
    events = _present(data, "invocation_events")
    if events is not None:
        return _events(doc, (*here, events), data[events], name, turn)
    calls, said = _listed(data, "tool_uses"), _listed(data, "tool_responses")
    changed = not _same(calls, turn.tool_uses)
    _put(doc, here, data, name("tool_uses"), turn.tool_uses)
    if changed or turn.tool_responses is not None:
        responses = _kept_responses(turn, calls, said)
        if responses or said:
            _put(doc, here, data, name("tool_responses"), responses, exact=True)


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
    doc: splice.Doc,
    at: splice.Path,
    events: Any,
    name: Callable[[str], str],
    turn: Expectation,
) -> None:
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
        return
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
    if rewritten != events:
        doc.replace(at, rewritten)


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


def _rows(doc: splice.Doc, at: splice.Path, rows: list[Any], turns: list[Expectation]) -> None:
    if len(rows) != len(turns):
        raise _Refusal(f"{len(rows)} rows, the run {len(turns)} turns")
    for number, (row, turn) in enumerate(zip(rows, turns, strict=True)):
        here = (*at, number)
        if turn.tool_uses is not None:
            calls = _legacy_calls(row, turn)
            exact = turn.tool_responses is not None  # the same calls may get new outputs
            _put(doc, here, row, "expected_tool_use", calls, exact=exact)
        if turn.final_response is not None:
            answer = "\n".join(p["text"] for p in turn.final_response["parts"])
            _put(doc, here, row, "reference", answer)


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
    doc: splice.Doc,
    at: splice.Path,
    written: dict[str, Any],
    key: str,
    value: Any,
    *,
    exact: bool = False,
) -> None:
    """`key` of the object at `at` set to `value`: replaced where it is (in either casing,
    its keys in the order written, left as it is when it already says the same, to the
    metrics, or to the byte with `exact`), else added as `key`."""
    present = _present(written, key)
    if present is None:
        return doc.add(at, key, value)
    old = written[present]
    if old == value or (not exact and _same(old, value)):
        return
    if isinstance(old, dict) and isinstance(value, dict):
        order = [k for k in old if k in value] + [k for k in value if k not in old]
        value = {k: value[k] for k in order}
    doc.replace((*at, present), value)


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
