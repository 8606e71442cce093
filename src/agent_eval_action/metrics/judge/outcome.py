"""What the judge stage hands to the pure scoring stage: per case, per judged metric and
run, the score (per turn and overall), the verdicts used, and the judge's usage."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...results import JudgeRecord, JudgeSample, JudgeVerdict, Usage
from ..registry import RunScore


@dataclass
class JudgedRun:
    score: RunScore
    verdicts: list[JudgeVerdict] = field(default_factory=list)  # by turn, step and request
    rubric_scores: dict[str, float | None] | None = None
    outage: bool = False  # a request failed because Gemini was unreachable after retries
    no_key: int = 0  # requests that needed a call but had no API key
    usage: Usage = field(default_factory=lambda: Usage(cost_usd=0.0))


@dataclass
class CaseJudgement:
    headers: dict[str, JudgeRecord] = field(default_factory=dict)  # metric -> how it is judged
    runs: dict[tuple[str, int], JudgedRun] = field(default_factory=dict)  # (metric, run)
    usage: Usage = field(default_factory=lambda: Usage(cost_usd=0.0))

    def run_score(self, metric: str, run: int) -> RunScore | None:
        judged = self.runs.get((metric, run))
        return judged.score if judged is not None else None

    def record(self, metric: str) -> JudgeRecord | None:
        header = self.headers.get(metric)
        if header is None:
            return None
        runs = sorted((run, judged) for (name, run), judged in self.runs.items() if name == metric)
        return header.replace(
            verdicts=[v for _, judged in runs for v in judged.verdicts],
            rubric_scores=[
                judged.rubric_scores for _, judged in runs if judged.rubric_scores is not None
            ],
        )

    @property
    def outage(self) -> bool:
        return any(judged.outage for judged in self.runs.values())


@dataclass
class JudgeResults:
    cases: dict[tuple[str, str], CaseJudgement] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    reused_from: Counter[str] = field(default_factory=Counter)  # baseline, cache, repeat
    no_key: int = 0  # judge requests that needed a call and had no API key
    warnings: list[str] = field(default_factory=list)

    def merge(self, other: JudgeResults) -> None:
        """Add the verdicts of another judging of other runs (confirmation re-runs)."""
        for key, judged in other.cases.items():
            mine = self.cases.setdefault(key, CaseJudgement(headers=dict(judged.headers)))
            mine.runs.update(judged.runs)
            mine.usage.add(judged.usage)
        self.usage.add(other.usage)
        self.reused_from.update(other.reused_from)
        self.no_key += other.no_key
        self.warnings.extend(w for w in other.warnings if w not in self.warnings)

    def verdicts(self) -> dict[str, list[JudgeSample]]:
        """Every verdict given so far in this run, by key (those that gave one): a later
        round's question with the same key is answered from them, never asked again."""
        found: dict[str, list[JudgeSample]] = {}
        for case in self.cases.values():
            for judged in case.runs.values():
                for verdict in judged.verdicts:
                    if verdict.error is None and verdict.samples:
                        found.setdefault(verdict.key, verdict.samples)
        return found

    def case(self, eval_set_id: str, eval_id: str) -> CaseJudgement | None:
        return self.cases.get((eval_set_id, eval_id))

    @property
    def outage_cases(self) -> set[tuple[str, str]]:
        return {key for key, case in self.cases.items() if case.outage}
