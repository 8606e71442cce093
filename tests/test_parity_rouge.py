"""Our ROUGE-1 `response_match_score` against ADK 2.13's own RougeEvaluator."""

from __future__ import annotations

import inspect
import random
import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval_action.evalset.models import Content, Part
from agent_eval_action.metrics import rouge

final_response_match_v1 = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
eval_case = pytest.importorskip("google.adk.evaluation.eval_case")
eval_metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
genai_types = pytest.importorskip("google.genai.types")

pytestmark = pytest.mark.adk

TOLERANCE = 1e-9
# A response: the texts of its parts (None for a part without text).
Response = list[str | None]


def as_parts(response: str | Response) -> Response:
    return [response] if isinstance(response, str) else response


# --- running ADK ----------------------------------------------------------------------


def adk_invocation(response: str | Response | None) -> Any:
    user = genai_types.Content(role="user", parts=[genai_types.Part(text="q")])
    if response is None:
        return eval_case.Invocation(user_content=user)
    parts = [genai_types.Part(text=t) for t in as_parts(response)]
    return eval_case.Invocation(
        user_content=user, final_response=genai_types.Content(role="model", parts=parts)
    )


def adk_scores(pairs: list[tuple[Any, Any]]) -> tuple[list[float], float | None]:
    """(per-invocation scores, overall score) from ADK for (reference, candidate) pairs."""
    evaluator = final_response_match_v1.RougeEvaluator(
        eval_metrics.EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    actual = [adk_invocation(candidate) for _, candidate in pairs]
    expected = [adk_invocation(reference) for reference, _ in pairs]
    result = evaluator.evaluate_invocations(actual, expected)
    if inspect.isawaitable(result):
        import asyncio

        result = asyncio.run(result)
    return [r.score for r in result.per_invocation_results], result.overall_score


def our_text(response: str | Response | None) -> str:
    if response is None:
        return ""
    return Content(role="model", parts=[Part(text=t) for t in as_parts(response)]).text()


def our_scores(pairs: list[tuple[Any, Any]]) -> tuple[list[float], float | None]:
    scores = [rouge.rouge1_fmeasure(our_text(r), our_text(c)) for r, c in pairs]
    if not scores:
        return scores, None
    total = 0.0
    for score in scores:  # ADK accumulates one by one (not math.fsum / 3.12's sum)
        total += score
    return scores, total / len(scores)


def assert_parity(pairs: list[tuple[Any, Any]]) -> None:
    ours, our_overall = our_scores(pairs)
    theirs, their_overall = adk_scores(pairs)
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert abs(a - b) <= TOLERANCE, (index, pairs[index], a, b)
    if their_overall is None:
        assert our_overall is None
    else:
        assert our_overall is not None
        assert abs(our_overall - their_overall) <= TOLERANCE


def adk_tokenizer() -> Any:
    tokenizer_class = getattr(final_response_match_v1, "_UnicodeAwareTokenizer", None)
    if tokenizer_class is None:
        pytest.skip("this ADK version has no _UnicodeAwareTokenizer")
    return tokenizer_class(use_stemmer=True)


# --- corpus ---------------------------------------------------------------------------

HAND_PICKED: list[tuple[Any, Any]] = [
    ("", ""),
    ("", "something"),
    ("something", ""),
    ("Hello, world!", "hello world"),
    ("The cat sat", "the cats sat on mat"),
    ("The weather in Paris is sunny.", "It is sunny in Paris today."),
    ("The weather in Paris is sunny.", "THE WEATHER IN PARIS IS SUNNY."),
    ("Your order has been shipped", "We have shipped your orders"),
    ("running runners ran", "run runner run"),
    ("caresses ponies ties", "caress poni tie"),
    ("dying lying skies", "die lie sky"),
    ("the the the", "the"),
    ("a a b", "a b b"),
    ("!!! ??? ...", "!!!"),
    ("...", "..."),
    ("-- __ ''", "hello"),
    ("snake_case_name", "snake case name"),
    ("don't can't won't", "dont cant wont"),
    ("e-mail e.mail email", "email"),
    ("12 345 6789 3.14", "12 345 6789 3 14"),
    ("1st 2nd 3rd 2024-01-05", "1st 2nd 3rd 2024 01 05"),
    ("Order #A1B2C3 costs $19.99", "order a1b2c3 costs 19 99 dollars"),
    ("Café naïve résumé", "cafe naive resume"),
    ("Café naïve résumé", "CAFÉ NAÏVE RÉSUMÉ"),
    ("Cafe\u0301 (decomposed)", "Café (composed)"),
    ("Zürich Straße São Paulo", "zurich strasse sao paulo"),
    ("İstanbul ıi", "istanbul II"),  # noqa: RUF001
    ("Привет, как дела?", "привет как дела"),
    ("Заказ отправлен", "заказ отправлен сегодня"),
    ("مرحبا بكم في المتجر", "مرحبا بالمتجر"),
    ("שלום עולם", "שלום"),
    ("नमस्ते दुनिया", "नमस्ते"),
    ("東京の天気は晴れです", "東京は晴れ"),
    ("你好世界", "世界你好"),
    ("ありがとうございます", "ありがとう"),
    ("カタカナ・テスト", "カタカナテスト"),
    ("안녕하세요 세계", "안녕 세계"),
    ("ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "fullwidth abc 123"),  # noqa: RUF001
    ("ﬁle ﬂow ½ ² ⅷ", "file flow 1 2 2 viii"),
    ("สวัสดีครับ ยินดีต้อนรับ", "สวัสดี ยินดี"),
    ("ສະບາຍດີ", "ສະບາຍ"),
    ("ជំរាបសួរ", "ជំរាប"),
    ("မင်္ဂလာပါ", "မင်္ဂလာ"),
    ("๑๒๓ ฿100", "๑๒๓ 100"),
    ("Thaiไทยmix and ไทยThai", "thai ไทย mix"),
    ("hello世界test", "hello 世界 test"),
    ("emoji 👍 ok 🎉🎉", "emoji ok"),
    ("thumbs 👍️ up ✈️ 1️⃣", "thumbs up"),
    ("family 👨‍👩‍👧 here", "family here"),
    ("skin 👍🏽 tone", "skin tone"),
    ("e\u0301\u0301 a\u0308", "é ä"),
    ("\u0301 lone mark", "lone mark"),
    ("tab\tseparated\nlines\r\nand\u00a0nbsp\u2003em", "tab separated lines and nbsp em"),
    ("zero\u200bwidth join\u200dhere", "zero width join here"),
    ("line one\nline two", "line one line two"),
    (["Part one.", "Part two."], "part one part two"),
    (["Part one.", None, "", "Part two."], "Part one.\nPart two."),
    ([None], "anything"),
    ([], "anything"),
    (None, "anything"),
    ("anything", None),
    (None, None),
]

WORDS = str.split(
    "order ship shipped shipping deliver delivery refund refunded account balance flight "
    "booking booked cancel cancelled cancellation weather sunny rain tomorrow today price "
    "prices total payment paid the a an is are was for to of in on and or not your our"
)
EXOTIC = [
    "café", "naïve", "Straße", "Привет", "заказ", "مرحبا", "東京", "注文", "ありがとう",
    "예약", "สวัสดี", "การจอง", "👍", "✈️", "1️⃣", "½", "ﬁ", "İ", "e\u0301", "#42", "3.5",
    "—", "...", "!", "'s", "(ok)", "don't", "x_y",
]  # fmt: skip


def random_pairs(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)

    def sentence() -> list[str]:
        pool = WORDS + (EXOTIC if rng.random() < 0.4 else [])
        return [rng.choice(pool) for _ in range(rng.randint(0, 15))]

    def vary(words: list[str]) -> list[str]:
        out = list(words)
        for _ in range(rng.randint(0, 4)):
            op = rng.randrange(4)
            if op == 0 and out:
                del out[rng.randrange(len(out))]
            elif op == 1:
                out.insert(rng.randint(0, len(out)), rng.choice(WORDS + EXOTIC))
            elif op == 2 and out:
                index = rng.randrange(len(out))
                out[index] = out[index].upper()
            else:
                rng.shuffle(out)
        return out

    def render(words: list[str]) -> str:
        return "".join(w + rng.choice([" ", " ", " ", ", ", ". ", "", "\n"]) for w in words)

    pairs = []
    for _ in range(n):
        words = sentence()
        pairs.append((render(words), render(vary(words))))
    return pairs


# --- parity ---------------------------------------------------------------------------


def test_hand_picked_cases_match_adk() -> None:
    assert_parity(HAND_PICKED)


def test_hand_picked_cases_one_per_case_match_adk() -> None:
    for pair in HAND_PICKED:
        assert_parity([pair])


def test_random_corpus_matches_adk() -> None:
    assert_parity(random_pairs(seed=7, n=3000))


def test_scores_are_bit_identical_to_adk() -> None:
    pairs = random_pairs(seed=8, n=1000) + [p for p in HAND_PICKED if isinstance(p[0], str)]
    pairs = [(r, c) for r, c in pairs if isinstance(c, str)]
    calculate = final_response_match_v1._calculate_rouge_1_scores
    for reference, candidate in pairs:
        assert rouge.rouge1_fmeasure(reference, candidate) == (
            calculate(candidate, reference).fmeasure
        ), (reference, candidate)


def test_no_invocations_gives_no_overall_score() -> None:
    assert our_scores([]) == ([], None)
    assert adk_scores([]) == ([], None)


def test_tokens_match_adk_tokenizer() -> None:
    tokenizer = adk_tokenizer()
    texts = [t for pair in HAND_PICKED for t in map(our_text, pair)]
    texts += [t for pair in random_pairs(seed=9, n=500) for t in pair]
    for text in texts:
        assert rouge.tokenize(text) == tokenizer.tokenize(text), text


def test_code_point_classes_match_adk_predicates() -> None:
    """Every code point is classified as ADK's per-character predicates say."""
    is_cjk = getattr(final_response_match_v1, "_is_cjk", None)
    is_unspaced = getattr(final_response_match_v1, "_is_non_spaced_script", None)
    is_word = getattr(final_response_match_v1, "_is_word_char", None)
    if not (is_cjk and is_unspaced and is_word):
        pytest.skip("this ADK version has other tokenizer helpers")
    kinds = rouge._code_point_kinds()
    mismatches = []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if is_cjk(char):
            expected = rouge._CJK
        elif is_unspaced(char):
            is_mark = unicodedata.category(char).startswith("M")
            expected = rouge._WORD if is_mark else rouge._STARTER
        elif is_word(char):
            expected = rouge._WORD
        else:
            expected = rouge._SEPARATOR
        if kinds[code] != expected:
            mismatches.append(hex(code))
    assert not mismatches[:20]


def test_every_character_in_context_tokenizes_like_adk() -> None:
    """Each character between word, cluster and astral neighbours (sampled beyond U+3000)."""
    tokenizer = adk_tokenizer()
    rng = random.Random(3)
    codes = list(range(0x3000)) + rng.sample(range(0x3000, sys.maxunicode + 1), 20_000)
    for code in codes:
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        for text in (f"ab{char}cd", f"ก{char}x😀", f"é{char}{char}"):
            assert rouge.tokenize(text) == tokenizer.tokenize(text), (hex(code), text)


def test_numbers_are_their_own_stems() -> None:
    """The shortcut that skips stemming all-digit words agrees with rouge_score."""
    from rouge_score import tokenizers

    default = tokenizers.DefaultTokenizer(use_stemmer=True)
    rng = random.Random(5)
    numbers = [str(n) for n in range(10_000)] + [str(rng.randrange(10**12)) for _ in range(2000)]
    numbers += ["0000", "00012", "1" * 40]
    for number in numbers:
        assert default.tokenize(number) == [number]
        assert rouge.tokenize(number) == [number]


UNICODE_TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]),
    max_size=40,
)
MIXED_TEXT = st.lists(
    st.one_of(
        st.sampled_from(WORDS + EXOTIC),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=9),
        st.text(alphabet="กขคงจัิีึุู่้็ 一二三あいアイ가나éèüñжщ😀👍\u0301\ufe0f.,!-_ ", max_size=6),
    ),
    max_size=12,
).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reference=UNICODE_TEXT, candidate=UNICODE_TEXT)
def test_random_unicode_text_matches_adk(reference: str, candidate: str) -> None:
    assert_parity([(reference, candidate), (candidate, reference), (reference, reference)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reference=MIXED_TEXT, candidate=MIXED_TEXT)
def test_random_mixed_script_text_matches_adk(reference: str, candidate: str) -> None:
    assert_parity([(reference, candidate)])
    assert rouge.tokenize(candidate) == adk_tokenizer().tokenize(candidate)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.none() | MIXED_TEXT, max_size=4), candidate=MIXED_TEXT)
def test_random_multi_part_answers_match_adk(parts: Response, candidate: str) -> None:
    assert_parity([(parts, candidate), (candidate, parts)])


# --- known values and API -------------------------------------------------------------


def test_known_values() -> None:
    assert rouge.rouge1_fmeasure("", "") == 0.0
    assert rouge.rouge1_fmeasure("Hello, world!", "hello world") == 1.0
    assert rouge.rouge1_fmeasure("The cat sat", "the cats sat on mat") == pytest.approx(0.75)
    assert rouge.rouge1_fmeasure("...", "...") == 0.0
    assert rouge.rouge1_fmeasure("abc", "xyz") == 0.0
    assert rouge.tokenize("Hello, running World!") == ["hello", "run", "world"]
    assert rouge.tokenize("你好 café") == ["你", "好", "café"]
    assert rouge.tokenize("สวัสดี") == ["ส", "วั", "ส", "ดี"]
    assert rouge.tokenize("👍️") == ["\ufe0f"]  # the variation selector is a mark


def test_caches_count_and_clear() -> None:
    rouge.clear_caches()
    assert rouge.cache_info() == {
        "text_hits": 0,
        "text_misses": 0,
        "text_size": 0,
        "stem_hits": 0,
        "stem_misses": 0,
        "stem_numbers": 0,
        "stem_size": 0,
    }
    rouge.rouge1_fmeasure("running dogs 42", "running cats")
    info = rouge.cache_info()
    assert info["text_misses"] == 2 and info["text_hits"] == 0
    assert info["stem_misses"] == 3 and info["stem_hits"] == 1 and info["stem_numbers"] == 1
    rouge.rouge1_fmeasure("running dogs 42", "dogs")
    info = rouge.cache_info()
    assert info["text_hits"] == 1 and info["text_misses"] == 3
    assert info["stem_hits"] == 2
    rouge.clear_caches()
    assert rouge.cache_info()["text_size"] == 0 and rouge.cache_info()["stem_size"] == 0
    assert rouge.rouge1_fmeasure("running dogs 42", "running cats") == pytest.approx(0.4)
