"""docs/reliability.md names the test behind each of its claims: every named test exists."""

from __future__ import annotations

import re

from helpers.paths import ROOT

DOC = ROOT / "docs" / "reliability.md"


def test_every_test_named_in_the_reliability_doc_exists():
    text = DOC.read_text(encoding="utf-8")
    named = []
    for cell in re.findall(r"`([^`]+)`", text):
        match = re.fullmatch(r"(test_\w+\.py)(?:::(\w+))?", cell)
        if match:
            named.append(match.groups())
        elif re.fullmatch(r"test_\w+", cell):
            named.append((None, cell))
    assert len(named) > 30
    files = {}
    for file, name in named:
        if file is not None:
            path = ROOT / "tests" / file
            assert path.is_file(), f"{file} named in docs/reliability.md does not exist"
            files[file] = path.read_text(encoding="utf-8")
        if name is not None:
            sources = files.values() if file is None else [files[file]]
            assert any(re.search(rf"def {name}\(", src) for src in sources), (
                f"{file or 'a test file'}::{name} named in docs/reliability.md does not exist"
            )
