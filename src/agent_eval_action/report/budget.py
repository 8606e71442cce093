"""Fit a report into a byte budget by showing less, never by cutting text mid-markup.

A report is rendered from a `Detail`: how many items of each `Cut` its lists show (each
list a `Listing`), and how many characters of each agent text. `fit` renders at most
twice. The first render is in full, measured by a `Meter`: each section's bytes, each
listed item's, and how to print the lines that appear only when items are left out (a
list's "… and N more", the ✂️ note); "in full" up to what any plan could show: a list's
items past those that alone exceed the limit are not rendered. Templates print those
inside a {% call %} of the meter (`budget.item`, `budget.more`, `budget.note`). When the
first render is over the limit, `fit` plans a Detail from the measurements and renders
once more.

The plan takes the steps (cuts, least important first) in order: a cut that leaves the
report too big even at zero is set to zero and the next step is weighed; otherwise it
gets the largest count (or text length) that fits, and the plan is done. When every
step is at zero and it still does not fit, the minimal report is the last resort.

A plan's size is predicted as the full size, less the items it drops, plus the lines
that say so (the meter prints them again with the new counts); a section left with no
item at all is rendered alone to be weighed. The prediction is exact, or a few bytes
high where dropping an item hides others that the ✂️ note then does not count (the first
divergent turns of dropped regression rows); never low, so `fit` raises RuntimeError if
the planned report is over the limit all the same: a template printed a listed item or
a cut line outside the meter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Generic, TypeVar

T = TypeVar("T")

TEXT_FLOOR = 500  # texts this short are not shortened: whole items go first


def size(text: str) -> int:
    """What GitHub measures: UTF-8 bytes."""
    return len(text.encode("utf-8"))


@dataclass(frozen=True)
class Cut:
    """Something the budget can show less of: the items of some lists, or texts."""

    name: str
    drop: int  # the order of the budget's steps: 0 is cut first
    one: str = ""  # the ✂️ note counts dropped items as `one` (plural: + "s")
    across: bool = False  # one count over all sections together, in their order
    chars: bool = False  # the characters of each text (Detail.text_chars), not items


@dataclass(frozen=True)
class Detail:
    """How much of the report to show."""

    collapse_rest: bool = False  # non-regression sections inside <details>
    text_chars: int = 2_000  # per agent answer, tool call or user text
    limits: Mapping[Cut, int] = field(default_factory=dict)  # items shown; absent: all
    minimal: bool = False  # no item of any list: the last resort

    def limit(self, cut: Cut) -> int | None:
        return 0 if self.minimal else self.limits.get(cut)

    def at(self, cut: Cut, count: int) -> Detail:
        if cut.chars:
            return replace(self, text_chars=count)
        return replace(self, limits={**self.limits, cut: count})


@dataclass(frozen=True)
class Listing(Generic[T]):
    """The items of one list that a Detail lets through, out of `total`."""

    cut: Cut
    items: tuple[T, ...]
    total: int

    @property
    def left(self) -> int:
        return self.total - len(self.items)

    @classmethod
    def of(cls, cut: Cut, items: Sequence[T], detail: Detail) -> Listing[T]:
        limit = detail.limit(cut)
        return cls(cut, tuple(items if limit is None else items[:limit]), len(items))


class Shortens(ABC):
    """An item holding agent text: its bytes depend on Detail.text_chars. A base class, not
    a Protocol: the budget asks each item it weighs whether it is one, and isinstance of a
    runtime-checkable Protocol took 6 µs (0.6 s over a 100,000-case job's reports)."""

    @abstractmethod
    def text_bytes(self, chars: int) -> int:
        """The bytes of its text as printed when shortened to `chars` characters."""


@dataclass(frozen=True)
class Note:
    """What a render leaves out, for the ✂️ note (shown when anything is)."""

    omitted: Mapping[Cut, int]
    minimal: bool
    hint: str  # where the rest is, e.g. "the full report is in the job summary"

    @property
    def shown(self) -> bool:
        return self.minimal or any(self.omitted.values())


# A section's bytes, and the items it leaves out, when it shows none (rendered on demand).
Empty = Callable[[], tuple[int, Mapping[Cut, int]]]


@dataclass
class Measured:
    """One section as rendered: its bytes, its items' per cut (the first ones: see
    Meter), how many items each cut lists in all, its cut lines."""

    cuts: tuple[Cut, ...]
    empty: Empty
    size: int = 0
    items: dict[Cut, list[tuple[int, Shortens | None]]] = field(default_factory=dict)
    totals: dict[Cut, int] = field(default_factory=dict)
    more: dict[Cut, Callable[[int], str]] = field(default_factory=dict)
    # per cut, the least its measured items can take together (each text at its shortest)
    floor: dict[Cut, int] = field(default_factory=dict)


Line = Callable[..., str]  # a template's {% call %} body


class Meter:
    """Measures a render; section templates call it as `budget` in {% call %} blocks.

    Given the `limit` a plan must fit and the `text_chars` the render starts from, it
    stops rendering a list's items (prints nothing for them) once the items it measured
    take more than the limit even with every text at its shortest: no plan can show
    another, so a 100,000-case report renders the few hundred that matter, not all. Those
    it measured of the cuts dropped later count too, and an `across` cut's items count
    over all sections together (`_beyond`).
    """

    def __init__(self, limit: int | None = None, text_chars: int | None = None) -> None:
        self.sections: list[Measured] = []
        self.note_line: Callable[[Mapping[Cut, int]], str] | None = None
        self.limit = limit
        self.text_chars = text_chars  # None: no plan shortens a text
        self.texts: dict[int, int] = {}  # bytes of each measured text at text_chars, by id
        self.floor: dict[Cut, int] = {}  # Measured.floor over all sections so far

    def section(self, cuts: tuple[Cut, ...], render: Callable[[], str], empty: Empty) -> str:
        """A section of the report as `render` renders it, measured, with the cuts it
        declares; `empty` weighs it should it show no item."""
        self.sections.append(Measured(cuts, empty))
        text = render()
        self.sections[-1].size = size(text)
        return text

    def _cut(self, cut: Cut) -> Cut:
        if cut not in self.sections[-1].cuts:
            raise ValueError(f"a template lists {cut.name!r}: its section does not cut it")
        return cut

    def item(self, listing: Listing[T], item: T, *, caller: Line) -> str:
        """One item of `listing`, as the {% call %} body renders it (or nothing, past what
        any plan can show)."""
        section, cut = self.sections[-1], self._cut(listing.cut)
        section.totals[cut] = listing.total
        measured = section.items.setdefault(cut, [])
        if self._beyond(cut, section):
            return ""
        text = caller()
        shortens = item if isinstance(item, Shortens) else None
        bytes_ = size(text)
        measured.append((bytes_, shortens))
        least = bytes_ - self._shortest(shortens)
        section.floor[cut] = section.floor.get(cut, 0) + least
        self.floor[cut] = self.floor.get(cut, 0) + least
        return text

    def _beyond(self, cut: Cut, section: Measured) -> bool:
        """Whether no plan can show another item of `cut` here. A plan shows a list's items
        in order (an `across` cut's over all sections), and the size `fit` predicts for a
        plan that shows any item of `cut` counts every measured item of the cuts it drops
        later (`_plan` cuts in order): the floors of those and of this list's items so far
        are the least it can predict, and a plan predicted over the limit is not taken."""
        if self.limit is None:
            return False
        least = (self.floor if cut.across else section.floor).get(cut, 0)
        least += sum(f for c, f in self.floor.items() if c.drop > cut.drop)
        return least > self.limit

    def _shortest(self, text: Shortens | None) -> int:
        """How many bytes an item's text can lose at most: from its bytes at text_chars
        to its fewest at any length up to that (the whole text when short, or a cut
        one at 0 characters, which says what it left out)."""
        if text is None or self.text_chars is None:
            return 0
        start = self.texts[id(text)] = text.text_bytes(self.text_chars)
        return start - min(start, text.text_bytes(0))

    def more(self, listing: Listing[T], *, caller: Line) -> str:
        """The line saying how many items of `listing` are left out: caller(left)."""
        self.sections[-1].more[self._cut(listing.cut)] = caller
        return caller(listing.left) if listing.left else ""

    def note(self, note: Note, *, caller: Line) -> str:
        """The ✂️ note: caller(omitted counts)."""
        self.note_line = caller
        return caller(note.omitted) if note.shown else ""


def fit(
    render: Callable[[Detail, Meter], str], limit: int, start: Detail, steps: Sequence[Cut]
) -> str:
    """The most detailed rendering within `limit` bytes, in at most two renders.

    `steps` are reduced in that order; when every step is at zero and it still does not
    fit, the minimal report is returned, or ValueError raised if even that is too big.
    """
    shortens = any(_shortens(cut, start) for cut in steps)
    meter = Meter(limit, start.text_chars if shortens else None)
    text = render(start, meter)
    if size(text) <= limit:
        return text
    plan = _plan(_Model(meter, size(text), start), limit, steps)
    text = render(plan, Meter())
    if size(text) > limit and plan.minimal:
        raise ValueError(f"even the minimal report is {size(text)} bytes, over {limit}")
    if size(text) > limit:
        raise RuntimeError(
            f"the report planned for {limit} bytes took {size(text)}: does a template "
            "print a listed item or a cut line outside `budget`?"
        )
    return text


def _shortens(cut: Cut, start: Detail) -> bool:
    """Whether a plan may take this step to shorten texts: a text cut, from texts longer
    than TEXT_FLOOR."""
    return cut.chars and start.text_chars > TEXT_FLOOR


def _plan(model: _Model, limit: int, steps: Sequence[Cut]) -> Detail:
    detail = model.start
    for cut in steps:
        if cut.chars and not _shortens(cut, model.start):
            continue
        if model.size(detail.at(cut, 0)) > limit:  # none of these is not enough: go on
            detail = detail.at(cut, 0)
            continue
        low, high = 0, model.most(cut)  # fits at low; at high it is what did not fit
        while high - low > 1:  # sizes grow with the count
            mid = (low + high) // 2
            low, high = (mid, high) if model.size(detail.at(cut, mid)) <= limit else (low, mid)
        return detail.at(cut, low)
    return replace(detail, minimal=True)


class _Model:
    """The size of the report at a Detail, predicted from what the full render measured."""

    def __init__(self, meter: Meter, full: int, start: Detail) -> None:
        self.start, self.sections, self.note = start, meter.sections, meter.note_line
        self.outer = full - sum(section.size for section in self.sections)
        # the bytes of each section's first n items, per cut
        self.sums = [
            {
                cut: list(accumulate((b for b, _ in items), initial=0))
                for cut, items in s.items.items()
            }
            for s in self.sections
        ]
        self.empty: dict[int, tuple[int, Mapping[Cut, int]]] = {}  # by section index
        self.texts = meter.texts  # bytes of each text at the start, by id

    def most(self, cut: Cut) -> int:
        if cut.chars:
            return self.start.text_chars
        counts = [len(s.items.get(cut, ())) for s in self.sections]
        return sum(counts) if cut.across else max(counts, default=0)

    def size(self, detail: Detail) -> int:
        total, omitted, earlier = self.outer, Counter[Cut](), Counter[Cut]()
        for index in range(len(self.sections)):
            bytes_, left_out = self._section(index, detail, earlier)
            total += bytes_
            omitted.update(left_out)
        if self.note is not None and any(omitted.values()):
            total += size(self.note(omitted))
        return total

    def _section(
        self, index: int, detail: Detail, earlier: Counter[Cut]
    ) -> tuple[int, Mapping[Cut, int]]:
        """A section's bytes at `detail`, and what it leaves out; `earlier` counts the
        items of `across` cuts in the sections before it (and is updated)."""
        section, sums = self.sections[index], self.sums[index]
        bytes_, omitted, shows = section.size, Counter[Cut](), False
        for cut, items in section.items.items():
            # the items measured, of `total`: any plan that fits shows none past them
            limit, total = detail.limit(cut), section.totals[cut]
            shown = len(items) if limit is None else limit - (earlier[cut] if cut.across else 0)
            shown = max(0, min(len(items), shown))
            earlier[cut] += total
            omitted[cut] = left = total - shown
            bytes_ -= sums[cut][-1] - sums[cut][shown]
            if left and cut in section.more:
                bytes_ += size(section.more[cut](left))
            if detail.text_chars != self.start.text_chars:
                bytes_ += sum(self._gain(text, detail.text_chars) for _, text in items[:shown])
            shows = shows or shown > 0
        if section.items and not shows:
            if index not in self.empty:
                self.empty[index] = section.empty()
            return self.empty[index]
        return bytes_, omitted

    def _gain(self, text: Shortens | None, chars: int) -> int:
        """How many bytes an item gains (negative: loses) with its text at `chars`."""
        if text is None:
            return 0
        if id(text) not in self.texts:
            self.texts[id(text)] = text.text_bytes(self.start.text_chars)
        return text.text_bytes(chars) - self.texts[id(text)]
