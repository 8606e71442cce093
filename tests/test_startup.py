"""What the command line and ROUGE import: `--help` stays fast, stemming needs no NLTK package.

Each check runs in a fresh interpreter, since this test process has imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = [
    "pydantic",
    "numpy",
    "nltk",
    "scipy",
    "google.genai",
    "google.adk",
    "agent_eval_action.results",
    "agent_eval_action.runners",
    "agent_eval_action.metrics",
    "agent_eval_action.compare",
    "agent_eval_action.report",
]


def imported_after(code: str) -> list[str]:
    """The HEAVY modules a fresh interpreter has imported after running `code`."""
    probe = f"""
import contextlib, io, json, sys
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
{chr(10).join("    " + line for line in code.strip().splitlines())}
print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["run", "--help"], ["compare", "--help"], ["merge", "--help"], ["--version"], []],
)
def test_the_cli_starts_without_heavy_imports(argv):
    code = f"""
from agent_eval_action.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
"""
    assert imported_after(code) == []


def test_the_probe_sees_heavy_imports():
    # The check above would pass vacuously if the probe could not see an import.
    assert "pydantic" in imported_after("import agent_eval_action.evalset.models")
    assert "agent_eval_action.results" in imported_after("import agent_eval_action.results")


_WORD_TEXT = (
    "running runs ran runner caresses ponies ties caress cats feed agreed disabled matting "
    "mating meeting milling messing meetings happy happiness sky skies dying lying tying news "
    "innings inning outing cannings canning generously generous relational conditional "
    "rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli "
    "vietnamization predication operator feudalism decisiveness hopefulness callousness "
    "formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical "
    "hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible "
    "irritant replacement adjustment dependent adoption homologou communism activate "
    "angulariti homologous effective bowdlerize probate rate cease controlling rolling "
    "refunded refunds shipping shipped tracking orders ordered policy policies the a an"
)
WORDS = _WORD_TEXT.split()


def test_stemming_needs_no_nltk_package_and_equals_rouge_score():
    code = f"""
from agent_eval_action.metrics import rouge
stems = [rouge.tokenize(w) for w in {WORDS!r}]
import sys
light = [m for m in ("nltk", "scipy") if m in sys.modules]
from rouge_score import tokenizers
default = tokenizers.DefaultTokenizer(use_stemmer=True)
expected = [default.tokenize(w) for w in {WORDS!r}]
print(repr((light, stems == expected, "nltk" in sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    light, equal, nltk_after = eval(done.stdout.strip())
    assert light == []  # scoring ROUGE did not import the nltk package (nor scipy)
    assert equal  # and stemmed exactly as rouge_score's own tokenizer does
    assert nltk_after  # which then imported the real nltk package: nothing stale was left
