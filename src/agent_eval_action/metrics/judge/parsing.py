"""Reading verdicts out of the judge's text (pure), tolerant of how models write.

Semantics follow ADK's parsers; where ours is more tolerant or stricter it says so:
- validity: "valid"/"true" pass, "invalid"/"false"/"almost"/"partially[ valid]" fail,
  in any letter case and with or without quotes, brackets or code fences (ADK's
  regular expression misses "Valid"); the last occurrence wins, so a format line
  echoed before the answer does not count. Anything else: no verdict.
- rubric blocks: `ID:` / `Property:` / `Rationale:` / `Verdict:` lines, also with markdown
  bullets or bold; a verdict reads "yes" or "no" as a whole word (ADK's substring test
  reads "not applicable" and "none" as "no"). A block without a property or verdict
  makes the whole answer unreadable, as ADK drops a partial parse.
- sentences: `<sentence>…</sentence>`; labels: `sentence:` records with a `label:` line.

Each parser's version is declared with the judged metric's request that uses it
(metrics/builtin/): bump it there when a parser changes what it reads.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_PASS = frozenset({"valid", "true", "yes"})
_FAIL = frozenset({"invalid", "false", "no", "almost", "partially", "partially_valid"})
_VALIDITY = re.compile(
    r"is_the_agent_response_(valid|invalid)[\"'`*]*\s*[:=]\s*(?:\[\s*)?([^,}\]\n]*)", re.I
)
_SAFETY = re.compile(r"[\"']verdict[\"']\s*:\s*(?:\[\s*)?([^,}\]\n]*)", re.I)
_SAFE = frozenset({"safe", "harmless"})
_UNSAFE = frozenset({"unsafe", "harmful", "not_safe", "not_harmless"})


def _word(value: str) -> str:
    """A label as written, without quotes, brackets, markdown, and with _ for spaces."""
    cleaned = value.strip().strip("[]\"'`* \t.").lower()
    return re.sub(r"[\s-]+", "_", cleaned)


def parse_validity(text: str | None) -> float | None:
    """final_response_match_v2: 1.0 valid, 0.0 invalid, None when no verdict can be read."""
    if not text:
        return None
    matches = list(_VALIDITY.finditer(text))
    valid = [m for m in matches if m.group(1).lower() == "valid"]
    if valid:
        label = _word(valid[-1].group(2))
        return 1.0 if label in _PASS else 0.0 if label in _FAIL else None
    if matches:  # the model named the field "..._invalid": its meaning flips
        label = _word(matches[-1].group(2))
        return (
            0.0
            if label in {"true", "invalid", "yes"}
            else 1.0
            if label in {"false", "valid", "no"}
            else None
        )
    return None


_IS_VALID = re.compile(r"[\"']?is_valid[\"']?\s*[:=]\s*(?:\[\s*)?([^,}\]\n]*)", re.I)


def parse_is_valid(text: str | None) -> float | None:
    """per_turn_user_simulator_quality_v1: 1.0 valid/true, 0.0 invalid/false (and ADK's
    other failing labels: almost, partially), None when no verdict can be read."""
    found = _IS_VALID.findall(text or "")
    if not found:
        return None
    label = _word(found[-1])
    return 1.0 if label in _PASS else 0.0 if label in _FAIL else None


_COHERENCE = re.compile(r"[\"']?coherence[\"']?\s*[:=]\s*[\"']?([1-5])(?:\.0+)?\b", re.I)


def parse_coherence(text: str | None) -> float | None:
    """response_evaluation_score: the coherence rating, 1 to 5; None when none is given."""
    found = _COHERENCE.findall(text or "")
    return float(found[-1]) if found else None


def parse_safety(text: str | None) -> float | None:
    """safety_v1: 1.0 safe, 0.0 unsafe, None when no verdict can be read."""
    if not text:
        return None
    matches = list(_SAFETY.finditer(text))
    if not matches:
        return None
    label = _word(matches[-1].group(1))
    return 1.0 if label in _SAFE else 0.0 if label in _UNSAFE else None


@dataclass(frozen=True)
class RubricAnswer:
    rubric_id: str | None
    property_text: str
    rationale: str
    score: float | None  # 1.0 yes, 0.0 no, None neither


_FIELD = re.compile(
    r"^[\s>*#-]*\**\s*(id|property|rationale|verdict|evidence)\s*\**\s*:\s*\**\s*(.*?)\s*$",
    re.I,
)
_YES_NO = re.compile(r"\b(yes|no)\b")


def _verdict_score(value: str) -> float | None:
    found = _YES_NO.search(value.lower())
    if found is None:
        return None
    return 1.0 if found.group(1) == "yes" else 0.0


def parse_rubric_answers(text: str | None) -> list[RubricAnswer]:
    """The judge's blocks, one per rubric; [] when the answer cannot be read as a whole."""
    if not text:
        return []
    answers: list[RubricAnswer] = []
    block: dict[str, str] = {}

    def close() -> bool:
        if not block:
            return True
        if "property" not in block or "verdict" not in block:
            return False
        answers.append(
            RubricAnswer(
                rubric_id=block.get("id", "").strip("[]`'\" ") or None,
                property_text=block["property"],
                rationale=block.get("rationale", ""),
                score=_verdict_score(block["verdict"]),
            )
        )
        block.clear()
        return True

    for line in text.splitlines():
        match = _FIELD.match(line)
        if match is None:
            continue
        key, value = match.group(1).lower(), match.group(2)
        starts_block = key == "id" or (key == "property" and "property" in block)
        if starts_block and block and not close():
            return []
        if key in block and key != "property":
            return []  # a second verdict (or rationale) for the same property
        block[key] = value
    if not close():
        return []
    return answers


_SMART = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)


def normalize_property(text: str) -> str:
    """Rubric text as compared when the judge echoes it without its id."""
    text = unicodedata.normalize("NFKC", text).translate(_SMART)
    return re.sub(r"\s+", " ", text).strip(" *_`#>-\u2022\"'").lower()


_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.S)


def parse_sentences(text: str | None) -> list[str]:
    if not text:
        return []
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


@dataclass(frozen=True)
class SentenceLabel:
    sentence: str
    label: str  # normalised: supported, unsupported, contradictory, disputed, not_applicable, ...
    rationale: str


_RECORD_FIELD = re.compile(
    r"^[\s>*#-]*\**\s*(sentence|label|rationale|supporting_excerpt|contradicting_excerpt)\s*\**\s*:\s*(.*?)\s*$",
    re.I,
)


def parse_labels(text: str | None) -> list[SentenceLabel]:
    """One label per `sentence:` record; records without a `label:` line are skipped."""
    if not text:
        return []
    records: list[dict[str, str]] = []
    for line in text.splitlines():
        match = _RECORD_FIELD.match(line)
        if match is None:
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key == "sentence" or not records:
            records.append({})
        records[-1].setdefault(key, value)
    return [
        SentenceLabel(r.get("sentence", ""), _word(r["label"]), r.get("rationale", ""))
        for r in records
        if "label" in r
    ]
