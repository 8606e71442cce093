"""Turning the judge's samples into scores, with ADK's rules (pure).

- One verdict per sample (final_response_match_v2, safety_v1): majority vote of the
  samples that gave one; a tie counts as a fail; none gave one: no score.
- Rubrics: per rubric, majority vote of the samples' yes/no, a tie is "no"; the turn
  scores the mean of its rubrics; the run scores the mean of every rubric score of
  every turn, pooled (ADK's summariser), not the mean of the turn means.
- Hallucinations: (supported + not_applicable) / labelled sentences per answer text,
  unknown labels skipped; the turn is the mean of its texts, the run the mean of the
  turns that had a text to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..registry import mean

POSITIVE_LABELS = frozenset({"supported", "not_applicable"})
NEGATIVE_LABELS = frozenset({"unsupported", "contradictory", "disputed"})


def majority(scores: Iterable[float | None]) -> float | None:
    """1.0 if more samples said yes than no, 0.0 if not (ties fail), None if none said either."""
    yes = no = 0
    for score in scores:
        if score == 1.0:
            yes += 1
        elif score == 0.0:
            no += 1
    if yes == no == 0:
        return None
    return 1.0 if yes > no else 0.0


def vote_rubrics(
    rubric_ids: Sequence[str], samples: Sequence[dict[str, float | None]]
) -> dict[str, float | None]:
    """Each rubric's voted score over the samples (each sample: rubric id -> its score)."""
    return {rid: majority(sample.get(rid) for sample in samples) for rid in rubric_ids}


def pooled_rubric_score(turns: Sequence[dict[str, float | None]]) -> float | None:
    """The run's score: mean of all rubric scores of all turns, flattened (ADK)."""
    return mean([score for turn in turns for score in turn.values()])


def rubric_means(turns: Sequence[dict[str, float | None]]) -> dict[str, float | None]:
    """Each rubric's mean over the turns it was judged in (ADK's overall_rubric_scores)."""
    by_id: dict[str, list[float | None]] = {}
    for turn in turns:
        for rid, score in turn.items():
            by_id.setdefault(rid, []).append(score)
    return {rid: mean(scores) for rid, scores in by_id.items()}


def label_score(labels: Iterable[str]) -> float | None:
    good = bad = 0
    for label in labels:
        if label in POSITIVE_LABELS:
            good += 1
        elif label in NEGATIVE_LABELS:
            bad += 1
    return good / (good + bad) if good + bad else None
