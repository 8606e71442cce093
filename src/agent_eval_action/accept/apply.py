"""Write accepted expectations into the eval files, in place (accept/splice.py).

Each file is the one the Results name, below `root` (never through a link out of it), and
only when its bytes are still those the run read (`eval_sets[].file_sha256`): an eval file
edited since is refused, not merged. Per form, where a turn keeps what is rewritten:

- an EvalSet (snake_case or camelCase keys): `conversation[i].intermediate_data.tool_uses`
  and `conversation[i].final_response`, a missing key added in the file's casing;
- legacy rows (`.test.json`, one case) and legacy cases (`data` rows): each row's
  `expected_tool_use` (`tool_name`, `tool_input`) and `reference` (the answer's text).
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
from .plan import Accepted, Expectation, NotAccepted

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
            text = _tool_uses(text, at, written, name, turn.tool_uses, style)
    return text


def _tool_uses(
    text: str,
    at: splice.Path,
    written: dict[str, Any],
    name: Callable[[str], str],
    tool_uses: list[dict[str, Any]],
    style: splice.Style,
) -> str:
    present = _present(written, "intermediate_data")
    data = written[present] if present is not None else None
    if not isinstance(data, dict):  # none written (or null): the whole of it, with the calls
        whole = {name("tool_uses"): tool_uses}
        return _put(text, at, written, name("intermediate_data"), whole, style)
    if _present(data, "invocation_events") is not None:
        raise _Refusal(
            "its expected turns are invocation_events; accept rewrites tool_uses only (yet)"
        )
    assert present is not None
    return _put(text, (*at, present), data, name("tool_uses"), tool_uses, style)


def _rows(
    text: str, at: splice.Path, rows: list[Any], turns: list[Expectation], style: splice.Style
) -> str:
    if len(rows) != len(turns):
        raise _Refusal(f"{len(rows)} rows, the run {len(turns)} turns")
    for number, (row, turn) in enumerate(zip(rows, turns, strict=True)):
        here = (*at, number)
        if turn.tool_uses is not None:
            calls = [{"tool_name": c["name"], "tool_input": c["args"]} for c in turn.tool_uses]
            text = _put(text, here, row, "expected_tool_use", calls, style)
        if turn.final_response is not None:
            answer = "\n".join(p["text"] for p in turn.final_response["parts"])
            text = _put(text, here, row, "reference", answer, style)
    return text


def _put(
    text: str, at: splice.Path, written: dict[str, Any], key: str, value: Any, style: splice.Style
) -> str:
    """`key` of the object at `at` set to `value`: replaced where it is (in either casing,
    its keys in the order written, left as it is when it already says the same), else added
    as `key`."""
    present = _present(written, key)
    if present is None:
        return splice.add(text, at, key, value, style)
    old = written[present]
    if _same(old, value):
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
