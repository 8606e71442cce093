"""ROUGE-1 F-measure with the tokenization of ADK's `response_match_score`.

ADK 2.13 scores a final response with ``rouge_score``'s ROUGE-1 F-measure, the
expected text as the target and the actual text as the prediction, using a
Unicode-aware tokenizer with Porter stemming. This module reproduces that score
exactly (same tokens, same floating-point operations) and much faster, because it

* splits pure-ASCII text with one ``str.translate`` and ``str.split`` and skips
  Unicode normalisation, which cannot change ASCII text;
* splits other text with one precompiled regular expression whose character
  classes are derived, once, from this interpreter's Unicode database with the
  same predicates ADK applies character by character;
* stems each distinct ASCII word once (on a miss, ``rouge_score``'s own default
  tokenizer and NLTK's Porter stemmer do the work), and never stems numbers,
  which the Porter stemmer leaves unchanged;
* keeps the token counts of recently scored texts, so an expected answer scored
  against many actual answers is tokenized once.

Tokenization rules (what ADK's tokenizer does, restated):

1. NFKC-normalise, then lower-case.
2. CJK ideographs, kana and Hangul syllables (U+4E00-9FFF, U+3040-30FF,
   U+AC00-D7AF) are one token per character, whatever their category.
3. In Thai, Lao, Khmer and Myanmar (U+0E00-0EFF, U+1780-17FF, U+1000-109F) a
   character that is not a combining mark starts a new word, even when it is
   a digit or punctuation; a combining mark extends the current word.
4. Any other alphanumeric character or combining mark (category M*, e.g. an
   emoji variation selector) extends the current word; every other character
   (punctuation, symbols, emoji, whitespace, ``_``) ends it.
5. A word made only of ASCII characters goes through ``rouge_score``'s default
   tokenizer (Porter stemming of words longer than three characters); any other
   word is kept verbatim, unstemmed.

The F-measure is computed from the token counts with the same arithmetic as
``rouge_score``, so scores are bit-identical to ADK's.
"""

from __future__ import annotations

import array
import importlib
import importlib.util
import os
import re
import string
import sys
import threading
import types
import unicodedata
from functools import lru_cache
from typing import Any

from rouge_score.tokenize import tokenize as rouge_tokenize  # light: re and six only

try:  # the C helper behind collections.Counter; ~2x faster than building a Counter
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - every CPython has it

    def _count_elements(mapping: dict[str, int], iterable: list[str]) -> None:
        for item in iterable:
            mapping[item] = mapping.get(item, 0) + 1


__all__ = [
    "cache_info",
    "clear_caches",
    "rouge1_fmeasure",
    "tokenize",
]

_STEM_CACHE_LIMIT = 1 << 18  # distinct ASCII words kept; the cache is emptied when full
_TEXT_CACHE_SIZE = 1 << 15  # texts whose token counts are kept (LRU)

# Code point ranges ADK splits into one token per character.
_CJK_RANGES = ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF))
# Scripts written without spaces, split into grapheme-like clusters.
_UNSPACED_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))

# ASCII text: lower-case letters, keep digits, every other character separates words.
_ASCII_TABLE = str.maketrans(
    {
        code: chr(code).lower() if chr(code) in string.ascii_letters + string.digits else " "
        for code in range(128)
    }
)


# --- classifying code points ----------------------------------------------------------

# What each code point does in a word.
_SEPARATOR, _WORD, _STARTER, _CJK = 0, 1, 2, 3


def _code_point_kinds() -> bytearray:
    """For every code point, its role in ADK's tokenizer (applied after NFKC + lower).

    * ``_STARTER``: a Thai/Lao/Khmer/Myanmar character that is not a mark; it
      begins a new word, which then continues like any other;
    * ``_WORD``: any other alphanumeric character or combining mark outside the
      CJK ranges; it extends the current word;
    * ``_CJK``: a word of its own;
    * ``_SEPARATOR``: ends the current word and is dropped.

    Classifying the 1.1M code points one by one in Python takes seconds, so the
    work is done on one string holding every code point, with C-level helpers:
    ``[^\\W_]`` matches exactly the characters for which ``str.isalnum()`` is
    true, and the first letters of the characters' categories mark the M* ones.
    """
    size = sys.maxunicode + 1
    every_char = array.array("I", range(size)).tobytes().decode("utf-32-le", "surrogatepass")
    major_category = "".join(map(unicodedata.category, every_char))[0::2]

    kinds = bytearray(size)
    for found in re.finditer(r"[^\W_]+", every_char):
        kinds[found.start() : found.end()] = bytes([_WORD]) * (found.end() - found.start())
    for found in re.finditer("M+", major_category):
        kinds[found.start() : found.end()] = bytes([_WORD]) * (found.end() - found.start())
    for low, high in _UNSPACED_RANGES:
        for code in range(low, high + 1):
            kinds[code] = _WORD if major_category[code] == "M" else _STARTER
    for low, high in _CJK_RANGES:
        kinds[low : high + 1] = bytes([_CJK]) * (high + 1 - low)
    return kinds


def _char_class(runs: list[tuple[int, int]]) -> str:
    """A regex character class matching the given half-open code point runs."""
    body = "".join(
        f"\\U{low:08x}" if high - low == 1 else f"\\U{low:08x}-\\U{high - 1:08x}"
        for low, high in runs
    )
    return f"[{body}]"


class _Patterns:
    """The compiled word patterns, built on first use (about a third of a second)."""

    def __init__(self) -> None:
        kinds = _code_point_kinds()

        def runs(kind: int, low: int, high: int) -> list[tuple[int, int]]:
            return [
                (max(m.start(), low), min(m.end(), high))
                for m in re.finditer(b"%c+" % kind, kinds)
                if m.start() < high and m.end() > low
            ]

        bmp, end = 0x10000, sys.maxunicode + 1
        starter = _char_class(runs(_STARTER, 0, end))
        cjk = _char_class(runs(_CJK, 0, end))
        if runs(_STARTER, bmp, end) or runs(_CJK, bmp, end):  # pragma: no cover
            raise AssertionError("CJK and unspaced-script ranges lie in the BMP")
        bmp_word = _char_class(runs(_WORD, 0, bmp))
        astral_word = _char_class(runs(_WORD, bmp, end))
        # Python's re tests a class's non-BMP ranges one by one, for every
        # character; so text without such characters gets a pattern without them,
        # and the full pattern only consults them for non-BMP characters.
        self.bmp = re.compile(f"{starter}{bmp_word}*|{bmp_word}+|{cjk}")
        word = f"(?:{bmp_word}|(?=[\\U00010000-\\U{end - 1:08x}]){astral_word})"
        self.full = re.compile(f"{starter}{word}*|{word}+|{cjk}")
        self.astral = re.compile(f"[\\U00010000-\\U{end - 1:08x}]")


_patterns: _Patterns | None = None
_patterns_lock = threading.Lock()


def _get_patterns() -> _Patterns:
    global _patterns
    if _patterns is None:
        with _patterns_lock:
            if _patterns is None:
                _patterns = _Patterns()
    return _patterns


# --- stemming -------------------------------------------------------------------------

_stemmer: Any = None
_stemmer_lock = threading.Lock()


def _porter_stemmer() -> Any:
    """NLTK's Porter stemmer, as rouge_score's DefaultTokenizer builds it, without importing
    the `nltk` package: its __init__ imports nearly all of NLTK (and scipy, scikit-learn and
    pandas when they are installed: seconds), while the stemmer needs three small modules.

    They are loaded from NLTK's own files under placeholder `nltk` / `nltk.stem` packages,
    which are then removed again, so a later `import nltk` elsewhere gets the real package.
    """
    if "nltk" in sys.modules:  # already imported by someone: nothing to save
        from nltk.stem.porter import PorterStemmer

        return PorterStemmer()
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("NLTK is not installed (rouge-score needs it)")
    roots = list(spec.submodule_search_locations)
    for name, path in (("nltk", roots), ("nltk.stem", [os.path.join(r, "stem") for r in roots])):
        package = types.ModuleType(name)
        package.__path__ = path
        sys.modules[name] = package
    try:
        return importlib.import_module("nltk.stem.porter").PorterStemmer()
    except ImportError:
        pass  # a porter.py that needs more of NLTK: import it whole below
    finally:
        for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
            del sys.modules[name]
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def _stem_word(word: str) -> str:
    """rouge_score's default tokenizer (with stemming) on one ASCII word; "" if it drops it."""
    global _stemmer
    if _stemmer is None:
        with _stemmer_lock:
            if _stemmer is None:
                _stemmer = _porter_stemmer()
    # What rouge_score's DefaultTokenizer(use_stemmer=True).tokenize does, with its stemmer.
    tokens = rouge_tokenize(word, _stemmer)
    # A lower-case [a-z0-9]+ word yields at most one token.
    return tokens[0] if tokens else ""


class _StemCache(dict):
    """Lower-case ASCII word -> its token, filled on demand, with lookup counters."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0
        self.misses = 0
        self.numbers = 0  # all-digit words: returned as they are, not cached
        self.dropped = False  # whether some word tokenized to nothing

    def __missing__(self, word: str) -> str:
        if word.isdigit():
            # Every Porter rule needs a letter, so a number is its own stem; not
            # caching numbers keeps one-off ids and amounts out of the cache.
            self.numbers += 1
            return word
        self.misses += 1
        token = _stem_word(word)
        if not token:
            self.dropped = True
        if len(self) >= _STEM_CACHE_LIMIT:
            self.clear()
        self[word] = token
        return token

    def reset(self) -> None:
        self.clear()
        self.lookups = self.misses = self.numbers = 0
        self.dropped = False


_stems = _StemCache()


# --- tokenization ---------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    stems = _stems
    if text.isascii():
        words = text.translate(_ASCII_TABLE).split()
        stems.lookups += len(words)
        tokens = list(map(stems.__getitem__, words))
    else:
        text = unicodedata.normalize("NFKC", text).lower()
        patterns = _patterns or _get_patterns()
        pattern = patterns.full if patterns.astral.search(text) else patterns.bmp
        words = pattern.findall(text)
        tokens = [stems[word] if word.isascii() else word for word in words]
        stems.lookups += sum(map(str.isascii, words))
    if stems.dropped:
        return [token for token in tokens if token]
    return tokens


def tokenize(text: str) -> list[str]:
    """The tokens ADK's ROUGE tokenizer (with stemming) produces for ``text``."""
    return _tokens(text)


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _profile(text: str) -> tuple[dict[str, int], int]:
    """A text's token counts and number of tokens."""
    tokens = _tokens(text)
    counts: dict[str, int] = {}
    _count_elements(counts, tokens)
    return counts, len(tokens)


# --- scoring --------------------------------------------------------------------------


def rouge1_fmeasure(reference: str, candidate: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``, as ADK computes it.

    0.0 when either text has no tokens (including ``""`` against ``""``).
    """
    ref_counts, ref_total = _profile(reference)
    cand_counts, cand_total = _profile(candidate)
    if not ref_total or not cand_total:
        return 0.0
    overlap = 0
    cand_get = cand_counts.get
    for token, ref_n in ref_counts.items():
        cand_n = cand_get(token)
        if cand_n:
            overlap += ref_n if ref_n < cand_n else cand_n
    if not overlap:
        return 0.0
    # The same operations, in the same order, as rouge_score's _score_ngrams and
    # scoring.fmeasure, so the result is bit-identical.
    precision = overlap / cand_total
    recall = overlap / ref_total
    return 2 * precision * recall / (precision + recall)


# --- cache management -----------------------------------------------------------------


def cache_info() -> dict[str, int]:
    """Counters and sizes of the text cache and of the stem cache.

    ``stem_hits``/``stem_misses`` count ASCII-word lookups; all-digit words are
    counted apart in ``stem_numbers`` (they never need stemming nor caching).
    """
    texts = _profile.cache_info()
    stems = _stems
    return {
        "text_hits": texts.hits,
        "text_misses": texts.misses,
        "text_size": texts.currsize,
        "stem_hits": stems.lookups - stems.misses - stems.numbers,
        "stem_misses": stems.misses,
        "stem_numbers": stems.numbers,
        "stem_size": len(stems),
    }


def clear_caches() -> None:
    """Empties both caches and zeroes their counters (the compiled patterns stay)."""
    _profile.cache_clear()
    _stems.reset()
