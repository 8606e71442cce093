"""Throughput of our deterministic scorers against ADK's own evaluators.

Run from the repository root:

    python bench/bench_scoring.py            # default corpus size
    python bench/bench_scoring.py --n 5000   # smaller or larger corpus

See bench/README.md for what each timing covers.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from agent_eval_action.evalset.models import Content, FunctionCall
from agent_eval_action.metrics import rouge, trajectory

TOLERANCE = 1e-9


def words(text: str) -> list[str]:
    return text.split()


# Our own small vocabulary; inflected forms exercise the Porter stemmer.
ENGLISH = words(
    """
account address agent answer april arrive available balance bank booking budget cancel
card change charge check city claim close confirm contact cost country customer date
day delay delivery deliver delivered delivering department detail discount document
email error estimate event exchange expire fee file flight form fund guest help hotel
hour invoice issue item july june kitchen language late limit list loan location lost
manager march meeting message minute month morning night note number offer office open
order ordered ordering package paid passenger password payment pending phone plan policy
price process processing product provide purchase query quote rate receipt record refund
refunded refunds register reminder rental report request reserve reservation return
review room route schedule scheduled search seat send service shipping shipped size
status store subscription summary support table task ticket time today tomorrow total
track transfer travel trip update updated user valid warranty weather week weekly window
"""
)
GLUE = words("a an the to for of in on at with and or but is are was be has have it this that")
UNICODE_WORDS = [
    "café",
    "naïve",
    "Zürich",
    "São",
    "Ålesund",
    "niño",
    "Straße",
    "Привет",
    "заказ",
    "доставка",
    "مرحبا",
    "الطلب",
    "東京",
    "注文",
    "配送",
    "ありがとう",
    "예약",
    "สวัสดีครับ",
    "การจอง",
    "ສະບາຍດີ",
    "ⅷ",
    "ﬁle",
    "👍",
    "✈️",
    "1️⃣",
]
PUNCT = [",", ".", "!", "?", ";", ":", " -", " (ok)", "'s", "..."]


def make_sentence(rng: random.Random, unicode_share: float) -> list[str]:
    words: list[str] = []
    for _ in range(rng.randint(3, 24)):
        roll = rng.random()
        if roll < unicode_share:
            words.append(rng.choice(UNICODE_WORDS))
        elif roll < 0.35:
            words.append(rng.choice(GLUE))
        elif roll < 0.40:
            words.append(str(rng.randint(0, 99999)))
        else:
            words.append(rng.choice(ENGLISH))
    return words


def vary(rng: random.Random, words: list[str]) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(0, 5)):
        op = rng.randrange(5)
        index = rng.randrange(len(out))
        if op == 0 and len(out) > 2:
            del out[index]
        elif op == 1:
            out.insert(index, rng.choice(ENGLISH + GLUE))
        elif op == 2:
            out[index] = rng.choice(ENGLISH)
        elif op == 3:
            other = rng.randrange(len(out))
            out[index], out[other] = out[other], out[index]
        else:
            out[index] = out[index].upper()
    return out


def render(rng: random.Random, words: list[str]) -> str:
    text = " ".join(w + rng.choice(PUNCT) if rng.random() < 0.15 else w for w in words)
    return text[0].upper() + text[1:]


def text_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """n (reference, candidate) pairs; all 2n texts are distinct."""
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n:
        unicode_share = 0.15 if rng.random() < 0.2 else 0.0
        words = make_sentence(rng, unicode_share)
        reference = render(rng, words)
        candidate = render(rng, vary(rng, words))
        if reference in seen or candidate in seen or reference == candidate:
            continue
        seen.update((reference, candidate))
        pairs.append((reference, candidate))
    return pairs


TOOLS = ["search", "get_order", "refund", "send_email", "lookup_user", "book", "cancel"]


def random_call(rng: random.Random) -> FunctionCall:
    args: dict[str, Any] = {}
    for key in rng.sample(["id", "query", "limit", "filters", "amount"], rng.randint(0, 3)):
        args[key] = rng.choice(
            [rng.randint(0, 3), "x", "y", 1.0, {"nested": [1, 2]}, [1, {"k": "v"}], None]
        )
    return FunctionCall(name=rng.choice(TOOLS), args=args if args or rng.random() < 0.5 else None)


def call_pairs(n: int, seed: int) -> list[tuple[list[FunctionCall], list[FunctionCall]]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        expected = [random_call(rng) for _ in range(rng.randint(0, 5))]
        actual = [c.model_copy(deep=True) for c in expected]
        for _ in range(rng.randint(0, 2)):
            op = rng.randrange(4)
            if op == 0 and actual:
                del actual[rng.randrange(len(actual))]
            elif op == 1:
                actual.insert(rng.randint(0, len(actual)), random_call(rng))
            elif op == 2 and len(actual) > 1:
                rng.shuffle(actual)
            elif actual:
                actual[rng.randrange(len(actual))] = random_call(rng)
        pairs.append((actual, expected))
    return pairs


# --- ADK side -------------------------------------------------------------------------


def adk_modules() -> Any:
    from google.adk.evaluation import (
        eval_case,
        eval_metrics,
        final_response_match_v1,
        trajectory_evaluator,
    )

    return eval_case, eval_metrics, final_response_match_v1, trajectory_evaluator


def run_adk(evaluator: Any, actual: list[Any], expected: list[Any]) -> Any:
    result = evaluator.evaluate_invocations(actual, expected)
    if inspect.isawaitable(result):  # async in some ADK versions
        import asyncio

        result = asyncio.run(result)
    return result


def adk_text_invocations(pairs: list[tuple[str, str]]) -> tuple[list[Any], list[Any]]:
    from google.genai import types

    eval_case = adk_modules()[0]
    user = types.Content(role="user", parts=[types.Part(text="q")])

    def inv(text: str) -> Any:
        return eval_case.Invocation(
            user_content=user,
            final_response=types.Content(role="model", parts=[types.Part(text=text)]),
        )

    return [inv(c) for _, c in pairs], [inv(r) for r, _ in pairs]


def adk_call_invocations(
    pairs: list[tuple[list[FunctionCall], list[FunctionCall]]],
) -> tuple[list[Any], list[Any]]:
    from google.genai import types

    eval_case = adk_modules()[0]
    user = types.Content(role="user", parts=[types.Part(text="q")])

    def inv(calls: list[FunctionCall]) -> Any:
        uses = [types.FunctionCall(name=c.name, args=c.args) for c in calls]
        return eval_case.Invocation(
            user_content=user, intermediate_data=eval_case.IntermediateData(tool_uses=uses)
        )

    return [inv(a) for a, _ in pairs], [inv(e) for _, e in pairs]


def timed(fn: Callable[[], Any], repeat: int, before: Callable[[], Any] = lambda: None):
    """(best wall time of `repeat` runs, result of the last run); `before` runs untimed."""
    best = float("inf")
    value = None
    for _ in range(repeat):
        before()
        gc.collect()  # start each run without garbage left by the previous ones
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}"


def all_close(ours: list[float], theirs: list[float]) -> bool:
    return len(ours) == len(theirs) and all(
        abs(a - b) <= TOLERANCE for a, b in zip(ours, theirs, strict=True)
    )


def measure(n: int, repeat: int = 1, seed: int = 20260101) -> dict[str, Any]:
    """Time our scorers and ADK's on a corpus of `n` invocations per metric.

    Returns {"rows": [{"metric", "ours_s", "ours_ex_s"?, "adk_s", "equal", "note"}], and the
    corpus figures "unicode_pairs", "mean_chars"}; google-adk must be installed.
    """
    _, eval_metrics, final_response_match_v1, trajectory_evaluator = adk_modules()
    rows: list[dict[str, Any]] = []

    # --- response_match_score -------------------------------------------------------
    pairs = text_pairs(n, seed)
    unicode_pairs = sum(not (r + c).isascii() for r, c in pairs)
    mean_chars = sum(len(r) + len(c) for r, c in pairs) / (2 * n)
    contents = [(Content.from_text(r, "model"), Content.from_text(c, "model")) for r, c in pairs]
    adk_actual, adk_expected = adk_text_invocations(pairs)
    rouge.tokenize("warm up")  # imports the stemmer and builds the patterns outside the timing
    rouge.tokenize("warm up ü")
    rouge_evaluator = final_response_match_v1.RougeEvaluator(
        eval_metrics.EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    run_adk(rouge_evaluator, adk_actual[:10], adk_expected[:10])  # warm up

    ours_s, ours_scores = timed(
        lambda: [rouge.rouge1_fmeasure(r, c) for r, c in pairs], repeat, rouge.clear_caches
    )
    info = rouge.cache_info()
    ours_ex_s, ours_ex_scores = timed(
        lambda: [rouge.rouge1_fmeasure(r.text(), c.text()) for r, c in contents],
        repeat,
        rouge.clear_caches,
    )
    adk_s, adk_result = timed(lambda: run_adk(rouge_evaluator, adk_actual, adk_expected), repeat)
    adk_scores = [r.score for r in adk_result.per_invocation_results]
    equal = all_close(ours_scores, adk_scores) and ours_ex_scores == ours_scores
    stem_lookups = info["stem_hits"] + info["stem_misses"]
    text_lookups = info["text_hits"] + info["text_misses"]
    hits = (
        f"stems {info['stem_hits'] / max(stem_lookups, 1):.2%} of {stem_lookups:,}, "
        f"texts {info['text_hits'] / max(text_lookups, 1):.2%} of {text_lookups:,}"
    )
    for label, seconds, note in (
        ("response_match_score", ours_s, hits),
        ("  same, incl. Content.text()", ours_ex_s, "(same as above)"),
    ):
        rows.append(
            {"metric": label, "ours_s": seconds, "adk_s": adk_s, "equal": equal, "note": note}
        )

    del adk_result, adk_actual, adk_expected

    # --- tool_trajectory_avg_score --------------------------------------------------
    cpairs = call_pairs(n, seed + 1)
    adk_actual, adk_expected = adk_call_invocations(cpairs)
    criterion_cls = eval_metrics.ToolTrajectoryCriterion
    for match_type in trajectory.MatchType:
        for ignore_args in (False, True):
            metric = eval_metrics.EvalMetric(
                metric_name="tool_trajectory_avg_score",
                criterion=criterion_cls(
                    threshold=1.0,
                    match_type=criterion_cls.MatchType[match_type.name],
                    ignore_args=ignore_args,
                ),
            )
            evaluator = trajectory_evaluator.TrajectoryEvaluator(eval_metric=metric)
            ours_s, ours_scores = timed(
                lambda mt=match_type, ia=ignore_args: [
                    trajectory.invocation_score(a, e, mt, ia) for a, e in cpairs
                ],
                repeat,
            )
            adk_s, adk_result = timed(
                lambda ev=evaluator: run_adk(ev, adk_actual, adk_expected), repeat
            )
            adk_scores = [r.score for r in adk_result.per_invocation_results]
            label = f"tool_trajectory {match_type.name}" + (" ignore_args" if ignore_args else "")
            rows.append(
                {
                    "metric": label,
                    "ours_s": ours_s,
                    "adk_s": adk_s,
                    "equal": all_close(ours_scores, adk_scores),
                    "note": "n/a (no cache)",
                }
            )
    return {"rows": rows, "unicode_pairs": unicode_pairs, "mean_chars": mean_chars}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="invocations per metric")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs, each side")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    n, repeat = args.n, args.repeat

    try:
        adk_modules()
    except ImportError:
        print("google-adk is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2

    print(
        f"Python {platform.python_version()}, {n:,} invocations per metric, "
        f"best of {repeat} run(s), seed {args.seed}"
    )
    figures = measure(n, repeat, args.seed)
    unicode_pairs, mean_chars = figures["unicode_pairs"], figures["mean_chars"]
    rows = [
        [
            row["metric"],
            rate(n, row["ours_s"]),
            rate(n, row["adk_s"]),
            f"{row['adk_s'] / row['ours_s']:.1f}x",
            "yes" if row["equal"] else "NO",
            row["note"],
        ]
        for row in figures["rows"]
    ]

    print(
        tabulate(
            rows,
            headers=[
                "metric",
                "ours inv/s",
                "ADK inv/s",
                "ratio",
                "scores equal",
                "our cache hits",
            ],
            colalign=("left", "right", "right", "right", "center", "left"),
        )
    )
    print(
        f"""
Corpus: {n:,} reference/candidate text pairs, all {2 * n:,} texts distinct, {mean_chars:.0f}
characters on average, {unicode_pairs:,} pairs with non-ASCII text; and {n:,} random
actual/expected tool-call lists. "scores equal": every per-invocation score within
{TOLERANCE:g} of ADK's.
ours:  wall time of rouge1_fmeasure(reference, candidate) over the corpus's already extracted
       strings, caches emptied before each run (stemmer imported and patterns built beforehand);
       the "incl. Content.text()" row also extracts the strings from our Content models.
       Trajectory: invocation_score(actual, expected, match_type, ignore_args) over already
       extracted FunctionCall lists.
ADK:   wall time of one RougeEvaluator / TrajectoryEvaluator .evaluate_invocations() call over
       the whole corpus, as ADK runs it: text / tool-call extraction, scoring,
       PerInvocationResult and EvaluationResult construction. Invocation objects are built
       beforehand, outside the timing.
ratio: ADK time / our time."""
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
