"""A column of numbers (or of times, as seconds): the digits of its numbers past the grid's two,
refined where the mass is (:func:`refine`, the charges it makes :func:`fine_charges`), its range
(the decades kept, where it starts and ends in them), and its codes: one per integer of its span
(:func:`whole_span`) or bins at quantiles of the noisy counts, point masses apart
(:func:`numeric_from`).  All but :func:`refine` is post-processing of noisy counts."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.stats import chi2

from ..columns import NumericColumn, held_decimals, json_value
from ..density import cut_density
from ..number_formats import decimals_of, shortest_text
from ..privacy import Budget
from ..table_io import as_float
from ..times import (CALENDAR_UNITS, NUMBER_UNITS, TIME_UNITS, calendar_edges, calendar_marks, coarsest_units,
                     finest_unit, on_calendar, time_units)
from .counts import Tally, chunks
from .ends import TAIL_SHARE, node_children, node_edges, node_width, outer_edge, range_ends, sure_bar, sure_parts
from .grid import BOUNDARIES, HOLDS_WHOLE, LEVELS, LOWER, N_CELLS, UPPER, ZERO_DECADE, cell_of
from .histogram import (DECADE_MISS, DECADE_Z, NOISE_Z, RANGE_MISS, RANGE_Z, TEXT_SHARE, Release, Unreleasable,
                        noise_bar, noisy_counts)

#: Digits a refined cell gains at most: its tenths, hundredths and thousandths.
FINE_DEPTH = 3
#: Nodes split at most per column and depth (the fullest, and the outermost at each end).
FINE_NODES = 64
#: The chance that a column whose numbers lie evenly in their bins is drawn by its parts' shrunk noisy
#: counts (:func:`_density`).
SHAPE_LEVEL = 0.05
#: Decimals a column's numbers are told apart by at most; more is kept at full precision.
MAX_DECIMALS = 9
#: Noise stds by which the numbers off a column's unit may pass TAIL_SHARE of them (:func:`_number_unit`).
UNIT_Z = 1.0
#: What :func:`refine` counts of a column of whole numbers besides its digits, at most (:func:`whole_counts`).
WHOLE_COUNTS = ("distinct", "unit")


def refine(r: Release, t: Tally, budget: Budget, share, rng, integer: bool,
           counted: tuple = WHOLE_COUNTS) -> Release:
    """``r`` with the numbers' digits past the two significant ones of its cells, where the mass
    is (a hierarchical histogram refined only below nodes that surely hold numbers, as in
    PrivTree, Zhang, Xiao and Xie 2016, but on a fixed decimal grid and a fixed noise per level),
    read through the column's Tally or Spilled ``t`` (:func:`_digest`; a column of times as times).

    The cells whose noisy count shows they hold numbers are split into ten equal parts, the
    parts that do into ten again, down to ``FINE_DEPTH`` digits (whole numbers: to parts one wide),
    at most ``FINE_NODES`` nodes per depth: the fullest, and always the outermost at each end.
    Each depth is one histogram (one count per record: L1 and L2 sensitivity 1) spending
    ``share`` of ``budget`` (its unit; :func:`fine_charges` counts these charges); so is, for a
    column of whole numbers, what ``counted`` names (:func:`whole_counts`): ``"distinct"``, the
    number of distinct numbers (sensitivity 1 too), which tells an identifier
    (:func:`column_from`), and ``"unit"``, the count of its zeros and of its numbers per largest
    unit each is a multiple of (:func:`~ektelo_pgm.times.coarsest_units` of NUMBER_UNITS), which
    gives ``r.unit`` (:func:`_number_unit`), so that loans in multiples of 25 are drawn in
    multiples of 25; for a fractional column the count of numbers per number of decimals (0 to
    ``MAX_DECIMALS``, or more; :func:`~ektelo_pgm.number_formats.decimals_of`, a float32's those of
    the decimal it stores), which gives ``r.decimals``: the most decimals held by a
    noticeable count (:func:`_noticed`: the decades' bar, which noise alone lets pass in about
    one column in 30,000 here, and ``TEXT_SHARE`` of the numbers; three stds would write one
    fractional column in a hundred with made-up decimals), and ``r.plain``: whether the whole
    numbers written plain (``0``, not ``0.0``: the count at 0 decimals) are noticeable; and for a
    column of times, the count of times per coarsest unit each is a multiple of (CALENDAR_UNITS:
    the start of a year, of a month; then TIME_UNITS: day, hour, half and quarter hour, five
    minutes, minute, second; :func:`~ektelo_pgm.times.time_units`), which gives ``r.unit`` and
    ``r.calendar``: the finest unit held by a noticeable count (a year or month: a day and that
    calendar; none noticed: the finest the format writes), so that times on the hour are written
    on the hour, and monthly dates on the first of a month.
    Which nodes are split depends on earlier noisy counts only; a depth that would split no node
    spends nothing."""
    whole = integer and r.time_format is None
    count_units = whole and "unit" in counted
    distinct_count, digits, units, cells, positions, weights = _digest(t, r, count_units)
    fine, decimals, distinct, unit, calendar, fine_std, plain = {}, None, None, None, None, math.inf, False
    if whole:
        if "distinct" in counted:
            count = np.array([float(distinct_count)])
            noisy, _, fine_std = noisy_counts(count, 1, budget, share, rng, f"schema of column {r.name!r}: distinct")
            distinct = float(noisy[0])
        if "unit" in counted:
            noisy, scale, std = noisy_counts(units, 1, budget, share, rng, f"schema of column {r.name!r}: unit")
            unit = _number_unit(noisy, scale, std, budget, r)
    elif not integer:
        noisy, scale, _ = noisy_counts(digits, 1, budget, share, rng, f"schema of column {r.name!r}: decimals")
        noticed = _noticed(noisy, scale, budget, r)
        most = int(noticed[-1]) if noticed.size else 0
        decimals = most if most <= MAX_DECIMALS else None
        plain = r.written_in is None and 0 in noticed
    else:  # a column of times
        noisy, scale, _ = noisy_counts(units, 1, budget, share, rng, f"schema of column {r.name!r}: granularity")
        noticed = _noticed(noisy, scale, budget, r) - len(CALENDAR_UNITS)  # a calendar's below zero
        finest = noticed[-1] if noticed.size else len(TIME_UNITS) - 1
        unit = max(TIME_UNITS[max(finest, 0)], finest_unit(r.time_format))
        calendar = CALENDAR_UNITS[finest] if finest < 0 else None
    bar = math.inf
    nodes = [(int(c), 0, 0) for c in _sure_cells(r, integer)]
    for depth in range(1, FINE_DEPTH + 1):
        nodes = [n for n in nodes if not integer or node_width(n) >= 10.0]
        if not nodes:
            break
        nodes = _fullest(nodes, fine, r.levels[2])
        position = positions[depth - 1]
        ids = np.array([c * 10 ** (depth - 1) + i for c, _, i in nodes], dtype=np.int64)  # ascending
        parent = cells * 10 ** (depth - 1) + position // 10
        k = np.minimum(np.searchsorted(ids, parent), ids.size - 1)
        inside = ids[k] == parent
        answers = np.bincount(10 * k[inside] + position[inside] % 10, weights=weights[inside],
                              minlength=10 * ids.size).astype(float)
        label = f"schema of column {r.name!r}: digit {depth + 2}"
        noisy, scale, fine_std = noisy_counts(answers, 1, budget, share, rng, label)
        bar = noise_bar(budget.notion, scale, RANGE_Z, RANGE_MISS)
        children = [(c, depth, 10 * i + j) for c, _, i in nodes for j in range(10)]
        fine.update(zip(children, noisy))
        nodes = [n for n, count in zip(children, noisy) if count >= bar]
    return replace(r, fine=fine, fine_bar=bar, fine_std=fine_std, decimals=decimals, distinct=distinct,
                   unit=unit, calendar=calendar, plain=plain)


def _digest(t, r: Release, count_units: bool):
    """What :func:`refine` reads of a column's Tally or Spilled ``t`` (read as numbers in the
    format ``r.written_in``, of its times or numbers written with symbols), summed chunk by chunk
    (:func:`~.counts.chunks`): ``(distinct whole numbers, records per number of decimals (0 to
    MAX_DECIMALS, then more; whole numbers at 0, in a column of no format only those written plain
    as text, ``61`` and not ``61.0``: :attr:`~.counts.Tally.plain`), records per largest unit
    each is a multiple of (of times: CALENDAR_UNITS, then TIME_UNITS; of whole numbers not times,
    where ``count_units``: zero, then NUMBER_UNITS; else none), cells, positions, records)``:
    for each node of the finest depth holding numbers, its cell, its index at each depth 1 to
    FINE_DEPTH (:func:`_position`) and the records it holds.  Each a sum over the distinct values,
    so the same however ``t`` is split."""
    timed = r.time_format is not None
    distinct, digits = 0, np.zeros(MAX_DECIMALS + 2)
    units = np.zeros(len(CALENDAR_UNITS + TIME_UNITS) if timed else 1 + len(NUMBER_UNITS) if count_units else 0)
    key, weight = np.empty(0, dtype=np.int64), np.empty(0)  # the nodes so far, each once, and their records
    for c in chunks(t, r.written_in):
        whole = np.array([isinstance(v, int) for v in c.values], dtype=bool)
        fractional = np.array([isinstance(v, float) for v in c.values], dtype=bool)
        distinct += int(whole.sum())
        places = np.array([min(decimals_of(v), MAX_DECIMALS + 1) for v in c.values[fractional]], dtype=np.int64)
        digits += np.bincount(places, weights=c.counts[fractional], minlength=MAX_DECIMALS + 2)
        digits[0] += c.counts[whole].sum()
        if timed:
            units += np.bincount(time_units(c.values[whole]), weights=c.counts[whole], minlength=units.size)
        elif count_units:
            found = coarsest_units(c.values[whole], NUMBER_UNITS) + 1
            found[c.values[whole] == 0] = 0  # zero, a multiple of every unit, is counted apart
            units += np.bincount(found, weights=c.counts[whole], minlength=units.size)
        numbers = np.array([as_float(v) for v in c.values[whole | fractional]], dtype=float)
        cells = cell_of(numbers)
        nodes = cells.astype(np.int64)
        for depth in range(1, FINE_DEPTH + 1):
            nodes = nodes * 10 ** depth + _position(numbers, cells, depth)
        key, inverse = np.unique(np.concatenate([key, nodes]), return_inverse=True)
        weight = np.bincount(inverse, weights=np.concatenate([weight, c.counts[whole | fractional]]),
                             minlength=key.size)
    if r.written_in is None:  # each of these is a whole number here
        digits[0] = t.plain
    below = [10 ** sum(range(depth + 1, FINE_DEPTH + 1)) for depth in range(FINE_DEPTH + 1)]
    positions = [key // below[depth] % 10 ** depth for depth in range(1, FINE_DEPTH + 1)]
    return distinct, digits, units, key // below[0], positions, weight


def _noticed(noisy: np.ndarray, scale: float, budget: Budget, r: Release, z: float = DECADE_Z,
             miss: float = DECADE_MISS) -> np.ndarray:
    """Indices of the ``noisy`` counts (of the numbers of ``r``, noise scale ``scale``) that are
    noticeable: at least ``z`` noise stds (under Laplace noise, the count that nothing passes with
    probability ``miss``; by default the decades' bar) and ``TEXT_SHARE`` of the numbers.
    Post-processing of the counts."""
    total = max(r.kinds["whole"] + r.kinds["fractional"], 1.0)
    return np.flatnonzero(noisy >= max(noise_bar(budget.notion, scale, z, miss), TEXT_SHARE * total))


def _number_unit(noisy: np.ndarray, scale: float, std: float, budget: Budget, r: Release) -> int | None:
    """The unit a column of whole numbers is written in, from the ``noisy`` counts (noise scale
    ``scale``, std ``std``) of its zeros, then of its numbers per largest of NUMBER_UNITS each is
    a multiple of: the greatest common divisor of the units of the noticeable counts
    (:func:`_noticed`, at a tenth's bar, ``RANGE_Z``), where the numbers other than zero that are
    its multiples surely outnumber the others (by ``NOISE_Z`` stds of the difference: loans' tax
    liens, 98% zeros and the others ones and twos, were written in thousands from a count of
    noise at 3.3 stds), and the others are at most ``TAIL_SHARE`` of them, up to ``UNIT_Z`` stds
    of their sum; None where that is 1 or only zeros are noticed (zero is a multiple of every
    unit: counted with the others, ames' porch areas, 84% zeros, were written in millions).
    Post-processing of the counts."""
    noticed = _noticed(noisy, scale, budget, r, RANGE_Z, RANGE_MISS)
    unit = math.gcd(*(NUMBER_UNITS[k - 1] for k in noticed if k))  # 0 where only zeros are noticed
    if unit <= 1:
        return None
    multiple = np.array([u % unit == 0 for u in NUMBER_UNITS])
    on, off = noisy[1:][multiple].sum(), noisy[1:][~multiple].sum()
    outnumber = on - off >= NOISE_Z * std * math.sqrt(len(NUMBER_UNITS))
    few = off <= TAIL_SHARE * (on + off) + UNIT_Z * std * math.sqrt((~multiple).sum())
    return unit if outnumber and few else None


def fine_charges(r: Release, integer: bool, counted: tuple) -> int:
    """The charges :func:`refine` makes at most on the release ``r``: one for each count of whole
    numbers ``counted`` (:func:`whole_counts`), one for the decimals or for the unit of times,
    and one per depth of digits its sure cells can be split to (whole numbers: down to parts one
    wide, so none for cells one wide).
    Post-processing of ``r``'s noisy counts."""
    cells = _sure_cells(r, integer)
    if not integer:
        depths = FINE_DEPTH if cells.size else 0
    else:
        widths = [node_width((int(c), 0, 0)) for c in cells]
        depths = min(FINE_DEPTH, max([round(math.log10(w)) for w in widths if w >= 10.0], default=0))
    return (len(counted) if integer and r.time_format is None else 1) + depths


def whole_counts(r: Release, column, fixed: bool) -> tuple:
    """What :func:`refine` counts of a column of whole numbers (not times) besides its digits, read
    from ``column``, the column its first release ``r`` gives (``fixed``: its kind given by the
    user): where a bin is wider than one number, its unit, to draw numbers in it; and there,
    where the kind is not fixed and no value was released, its number of distinct numbers, to
    tell an identifier (:func:`column_from`).  A code per whole number needs neither (ames'
    months, rooms and baths, 14 of its 29 such columns).  Post-processing of ``r``."""
    if column.kind != "numeric" or not column.integer or r.time_format is not None:
        return ()
    if all(b - a <= 1 for a, b in zip(column.edges, column.edges[1:])):
        return ()
    return ("unit",) if fixed or r.values else ("distinct", "unit")


def _sure_cells(r: Release, integer: bool) -> np.ndarray:
    """The cells of finite width whose noisy count shows they hold numbers, in the decades of the
    range (:func:`_kept`; ``integer``: a column of whole numbers)."""
    finite = np.isfinite(LOWER) & np.isfinite(UPPER) & (UPPER - LOWER > 1e-300)
    finite[[0, N_CELLS - 1]] = False
    kept = np.isin(LEVELS[0], _kept(r.levels, r, integer))
    return np.flatnonzero(finite & kept & (r.levels[2] >= r.tenth_bar))


def _position(numbers: np.ndarray, cells: np.ndarray, depth: int) -> np.ndarray:
    """Index of each number's node at ``depth`` inside its cell; a number on a node's lower edge
    is in that node whatever the float error (356.13 in ``[356.13, 356.14)``, not the one below)."""
    parts = 10 ** depth
    with np.errstate(divide="ignore", invalid="ignore"):  # cells of no width: position 0
        at = np.floor(np.round((numbers - LOWER[cells]) / (UPPER[cells] - LOWER[cells]) * parts, 6))
    return np.clip(np.nan_to_num(at), 0, parts - 1).astype(np.int64)


def _fullest(nodes: list, fine: dict, cells: np.ndarray) -> list:
    """At most ``FINE_NODES`` of ``nodes`` (in grid order): the outermost at each end, then the
    fullest by noisy count."""
    if len(nodes) <= FINE_NODES:
        return nodes
    count = lambda n: fine.get(n, cells[n[0]])  # noqa: E731
    order = sorted(range(1, len(nodes) - 1), key=lambda k: -count(nodes[k]))
    return [nodes[k] for k in sorted([0, len(nodes) - 1] + order[:FINE_NODES - 2])]


def _atoms(levels, fine: dict, r: Release, kept: np.ndarray, least: float):
    """``(lower, upper, count)`` arrays of the finest nodes holding numbers, in order: the counts
    per cell of :func:`_spread`, each cell's shared among its :func:`sure_parts` in proportion to
    their noisy counts, and theirs likewise, down to nodes kept whole.  A split node kept whole
    with more than ``least`` of the numbers (a bin's share) is shared among all its parts in
    proportion to their noisy counts clipped at zero, as :func:`_spread` shares tenths and cells,
    so that quantiles fall inside it, not one bin of more than its share drawn evenly: at an end
    of the range, cutting off what lies past the numbers (ames' latitudes, up to 42.063 in the
    cell [42.0, 42.1) kept whole, were one bin, 37% of it past the houses); inside it, following
    their shape (mpls_stops' latitudes: [44.96, 44.97), thousandths of 300-1,300 stops, was one
    bin of 10%; 1-way TVD 0.068 -> 0.041, AIM's 2-way 0.043 -> 0.038).  Nodes holding less stay
    whole: their parts would add only the noise of more measured counts."""
    lower, upper, count = [], [], []

    def share(node, mass):
        parts = sure_parts(node, fine, r)
        below, above = node_edges(node)
        if not parts and mass > least and node_children(node)[0] in fine:
            parts = [(part, fine[part]) for part in node_children(node) if fine[part] > 0]
        if not parts:
            lower.append(below), upper.append(above), count.append(mass)
            return
        total = sum(c for _, c in parts)
        for part, weight in parts:
            share(part, mass * weight / total)

    cells = _spread(levels, kept)
    for cell in np.flatnonzero(cells > 0):
        share((int(cell), 0, 0), cells[cell])
    return np.array(lower), np.array(upper), np.array(count)


def _spread(levels, kept: np.ndarray) -> np.ndarray:
    """Counts per cell: each kept decade's noisy count shared among its tenths in proportion to
    their noisy counts clipped at zero, and each tenth's among its cells likewise."""
    share = np.zeros(LEVELS[0].max() + 1)
    share[kept] = levels[0][kept]
    for parent, group, counts in zip(LEVELS[:-1], LEVELS[1:], levels[1:]):
        ids = np.unique(group)
        parent_of = np.zeros(ids.size, dtype=np.int64)
        parent_of[group] = parent
        clipped = np.clip(counts, 0.0, None)
        total = np.bincount(parent_of, weights=clipped, minlength=share.size)
        members = np.bincount(parent_of, minlength=share.size)
        part = np.where(total[parent_of] > 0, clipped / np.where(total > 0, total, 1.0)[parent_of],
                        1.0 / members[parent_of])
        share = share[parent_of] * part
    return share


def _kept(levels, r: Release, integer: bool, numbers: float | None = None) -> np.ndarray:
    """The decades of a column's range, ascending, from the noisy decade counts ``levels[0]`` of its
    ``numbers`` (a noisy count; None: the release's whole and fractional :attr:`Release.kinds`, without
    point masses taken out): those that surely hold numbers (:func:`_sure_decades`; of a column of
    whole numbers, ``integer``, those that can hold one: an empty ``[-0.0001, 0)`` at 4.9 stds started
    a column of months at 0), then, while the decades from the lowest to the highest surely hold less
    than all but ``TAIL_SHARE`` of the numbers (by ``NOISE_Z`` stds of the difference, or of the
    numbers missed told twice, by it and by the count of the decade to take in, itself at ``NOISE_Z``
    stds: Contraception's centred ages, across the twelve small decades of fractions around zero (a
    noisy difference), were clipped at 10, 17% of them), the next decade below or above them with the
    larger noisy count (of whole numbers: the next that can hold one), as long as it is positive.  A
    lone decade needs the high bar, for an empty one to stretch a range by orders of magnitude; numbers
    spread thin over several decades (counts of cases, 0 to 10^5) are kept."""
    counts = levels[0]
    numbers = r.kinds["whole"] + r.kinds["fractional"] if numbers is None else numbers
    possible = np.flatnonzero(HOLDS_WHOLE) if integer else np.arange(counts.size)
    kept = _sure_decades(counts[possible], possible, r)
    if not kept:
        return np.array(kept, dtype=np.int64)
    while True:
        inside = possible[(possible >= kept[0]) & (possible <= kept[-1])]
        nearest = np.concatenate([possible[possible < kept[0]][-1:], possible[possible > kept[-1]][:1]])
        if not nearest.size or counts[nearest].max() <= 0:
            break
        chosen = int(nearest[np.argmax(counts[nearest])])
        missed, variance = numbers - counts[inside].sum(), inside.size * r.std ** 2 + 2 * r.kind_std ** 2
        precision = 1.0 / variance + 1.0 / r.std ** 2  # of the numbers missed told twice, by chosen's count too
        told = (missed / variance + counts[chosen] / r.std ** 2) / precision - TAIL_SHARE * numbers
        if missed - TAIL_SHARE * numbers <= NOISE_Z * math.sqrt(variance) and \
                (told <= NOISE_Z / math.sqrt(precision) or counts[chosen] < NOISE_Z * r.std):
            break
        kept = [chosen] + kept if chosen < kept[0] else kept + [chosen]
    return np.array(kept, dtype=np.int64)


def _sure_decades(counts: np.ndarray, decades: np.ndarray, r: Release) -> list:
    """The ``decades`` (ids, ascending) whose noisy ``counts`` surely hold numbers: those reaching
    the release's ``decade_bar``, but the outermost at an end (farther from zero than every other
    but zero's own, which holds zeros alone and tells nothing of the others' scale) past ``g >= 2``
    decades farther from zero than the others that may well be empty (noisy count under
    ``NOISE_Z`` stds: each an order of magnitude it would stretch the range by) needs the bar that an
    empty decade passes with probability ``DECADE_MISS / 2^(g - 1)`` (:func:`~.ends.sure_bar`),
    else is dropped and the next outermost tested likewise.  So noise alone stretches a range
    by orders of magnitude about as rarely as one empty decade passes the bar (a column of
    counts over four decades: 1.2e-4 per column at one bar for all, 1e-5 now).  At one bar, an
    empty decade twelve orders of magnitude past the numbers was kept in 2 of 1,437 numeric
    columns of the corpus over ten seeds (who's counts of cases and movies' ratings ranged to
    10^13 and -10^13); zeros, and numbers between them and the rest, keep the one bar (loans'
    balances: zeros at 5 stds, seven decades below the rest), and so do numbers on the other side of
    zero from the rest, nearer it than they are (monthly dates from 1967, seconds before 1970, past
    the twenty decades of small numbers down to and up from zero, were dropped at 5.6 stds: the
    range started in 1970, or in 1e6 seconds, growing over an empty decade of seconds to 2603)."""
    kept = list(decades[counts >= r.decade_bar])
    for top in (True, False):
        while len(kept) > 1:
            outer = kept[-1] if top else kept[0]
            others = [d for d in kept if d not in (outer, ZERO_DECADE)]
            if not others or (outer <= ZERO_DECADE if top else outer >= ZERO_DECADE):
                break
            inner, reach = max(others) if top else min(others), max(abs(d - ZERO_DECADE) for d in others)
            between = (decades > min(inner, outer)) & (decades < max(inner, outer)) & \
                (np.abs(decades - ZERO_DECADE) > reach)  # farther from zero than the others: a stretch
            gap = int(np.sum(counts[between] < NOISE_Z * r.std))
            if gap < 2 or counts[decades == outer][0] >= sure_bar(r, 0.5 ** (gap - 1), r.std, DECADE_MISS)[0]:
                break
            kept.remove(outer)
    return kept


def whole_span(r: Release):
    """The integers ``(lo, hi)`` of the column's range (package docstring, :func:`range_ends`), widened to
    the released whole values (each held by records); None when no decade is kept or when the
    range ends in an outer cell (beyond the grid)."""
    numbers = r.kinds["whole"] + r.kinds["fractional"]
    kept = _kept(r.levels, r, True, numbers)
    if not kept.size:
        return None
    first, last = range_ends(r.levels, r.fine, r, kept, integer=True)
    if first[0] == 0 or last[0] == N_CELLS - 1:
        return None
    lo = math.ceil(outer_edge(first, r.levels, r.fine, r, False, 1))
    hi = math.ceil(outer_edge(last, r.levels, r.fine, r, True, 1)) - 1
    released = [v for v in r.values if isinstance(v, int)]
    lo, hi = min([lo] + released), max([hi] + released)
    return (lo, hi) if lo <= hi else None


def numeric_from(r: Release, bins: int, integer: bool, missing: bool = True) -> NumericColumn:
    """Bins from the noisy counts of the numbers, point masses apart (package docstring).

    The decades of :func:`_kept` are kept; the range starts in the lowest (:func:`range_ends`) and ends
    likewise in the highest; the inner edges are the ``j / bins`` quantiles of the counts of the
    finest nodes (:func:`_atoms`); every point mass adds a bin of its own.  Without a missing
    code, a value the column cannot code goes to the bin of its median (``fallback``: such
    records are too few for the noise to show, and there they move its quantiles least).
    Sampled values keep the column's ``decimals``; a column of whole numbers keeps its ``unit``
    where it divides every point mass (else their greatest common divisor), a column of times
    its ``unit`` (when :func:`refine` did not learn it, the finest its format writes), the edges
    rounded up to multiples of it, so that every bin holds numbers written in it; a column of
    times has its inner edges moved onto the starts of its days, months or years
    (:func:`~ektelo_pgm.times.on_calendar`), and a column of months or years (``r.calendar``) all its edges onto
    their starts (:func:`~ektelo_pgm.times.calendar_edges`)."""
    numbers = max(r.kinds["whole"] + r.kinds["fractional"], 1.0)
    one_bin = numbers / bins  # a bin's share of the numbers: a released value holding more is a point mass
    points = sorted(v for v, c in r.values.items()  # numbers only: text is missing in a numeric column
                    if isinstance(v, (int, float)) and c >= one_bin and math.isfinite(as_float(v)))
    levels, fine = _without(r.levels, r.fine, {v: r.values[v] for v in points})  # a point mass is its own bin
    held = [sorted((v, _written(v, r.decimals))) for v in map(as_float, points)]  # and the decimal it is written as
    edges = [lo for lo, _ in held] + [hi + 1 if integer else float(np.nextafter(hi, math.inf)) for _, hi in held]
    numbers -= sum(r.values[v] for v in points)
    masses = [(as_float(v), r.values[v]) for v in points]  # where the numbers are, and how many: the median
    if r.time_format is not None:
        unit = r.unit or finest_unit(r.time_format)
    else:  # a unit of whole numbers that divides every point mass, or none
        unit = math.gcd(r.unit, *(v for v in points if isinstance(v, int))) if r.unit else 1
        unit = None if unit == 1 else unit
    step = unit or 1  # integer edges: whole numbers, or whole multiples of the unit
    kept = _kept(levels, r, integer, numbers)
    if kept.size and np.isin(kept, LEVELS[0][[0, N_CELLS - 1]]).all():
        raise Unreleasable(f"column {r.name!r}: its numbers lie beyond +-{BOUNDARIES[-1]:.0e}, past the magnitudes "
                           "the schema places privately; declare its bounds (--metadata), or its kind --categorical")
    if kept.size:
        first, last = range_ends(levels, fine, r, kept, integer)
        lo, hi = node_edges(first)[0], node_edges(last)[1]
        lower, upper, count = _atoms(levels, fine, r, kept, one_bin)
        masses += list(zip((lower + upper) / 2, count))
        # the ends moved in where the numbers stop, never past a point mass inside the range
        lo = min([outer_edge(first, levels, fine, r, False, step if integer else 0)] + [e for e in edges if e >= lo])
        hi = max([outer_edge(last, levels, fine, r, True, step if integer else 0)] + [e for e in edges if e <= hi])
        lo, hi = _holding_decimals(lo, hi, r)
        cumulative = np.cumsum(count)
        inner = upper[np.minimum(np.searchsorted(cumulative, cumulative[-1] * np.arange(1, bins) / bins),
                                 upper.size - 1)] if upper.size else np.empty(0)
        if r.time_format is not None:
            inner = on_calendar(inner, calendar_marks(lo, hi, bins - 1))
        edges += [lo, hi] + [float(e) for e in inner if lo < e < hi]
    if not edges:
        raise Unreleasable(f"column {r.name!r}: too few numbers to place its range privately at this budget; "
                         "declare its bounds in a schema, give more records, or a larger epsilon")
    edges = np.unique(np.ceil(np.array(edges, dtype=float) / step) * step if integer else np.array(edges, dtype=float))
    if r.calendar is not None:
        edges = calendar_edges(edges, r.calendar)
    if edges.size == 1:
        edges = np.append(edges, edges[0] + step if integer else np.nextafter(edges[0], math.inf))
    # a fractional column in which only whole numbers were noticed: the fewest decimals its bins
    # hold numbers of (Chicago's snowfall, 15% fractions in (0, 1], came out as 0 and 0.98 with none)
    decimals = None if integer else r.decimals if r.decimals != 0 else held_decimals(edges, MAX_DECIMALS)
    column = NumericColumn(r.name, tuple(json_value(e) for e in edges), integer, missing, decimals, r.time_format,
                           unit, None if missing else median_number(masses), r.number_format, calendar=r.calendar)
    return replace(column, density=_density(r, levels, fine, kept, column, points)) if kept.size else column


def _holding_decimals(lo: float, hi: float, r: Release) -> tuple[float, float]:
    """The range ``[lo, hi]`` widened to hold the decimal each released number inside it is written as
    (:func:`_written`), with the part one float wide that :func:`_density` gives it: a wage stored as the
    float32 ``12.149999618530273`` at the top of a range ending at 12.15 is written 12.15, at its edge.
    A column without decimals keeps its range."""
    if not r.decimals:
        return lo, hi
    written = [_written(x, r.decimals) for x in (as_float(v) for v in r.values if isinstance(v, (int, float)))
               if lo <= x <= hi]
    return min([lo] + written), max([hi] + [float(np.nextafter(w, math.inf)) for w in written if w >= hi])


def _written(x: float, decimals: int | None) -> float:
    """The number a released number ``x`` is written as, in a column whose counts gave it ``decimals``
    (:attr:`Release.decimals`): the decimal it stands for as a float32 (``3.29`` for ``3.2899999618530273``:
    :func:`~ektelo_pgm.number_formats.shortest_text`) where that is one or more, else itself."""
    return float(shortest_text(x)) if decimals else x


def _without(levels, fine: dict, values: dict) -> tuple:
    """Copies of a release's noisy ``levels`` and ``fine`` counts with each number of ``values``
    taken out of every count that holds it, as many times as ``values`` says."""
    levels, fine = [counts.copy() for counts in levels], dict(fine)
    for v, count in values.items():
        x = np.array([as_float(v)])
        at = cell_of(x)
        for group, counts in zip(LEVELS, levels):
            counts[group[at[0]]] -= count
        for depth in range(1, FINE_DEPTH + 1):
            node = (int(at[0]), depth, int(_position(x, at, depth)[0]))
            if node in fine:
                fine[node] -= count
    return levels, fine


def _leaves(levels, fine: dict, r: Release, kept: np.ndarray) -> tuple:
    """``(lower, upper, count)`` arrays of the leaves of :func:`refine`'s tree below the kept
    decades, in order: each cell with its count of :func:`_spread`; below a split node, each
    child that surely holds numbers (noisy count at least ``r.fine_bar``) with its own noisy
    count (scaled down to the node's where they sum to more), the node's rest spread evenly over
    its other children.  Unlike :func:`_atoms`, the mass of the children the noise hides is not
    given to the sure ones (weather's temperatures, each one of many values in °F converted
    from tenths of °C: a sure hundredth took its tenth's every number, 2.5 times its own).
    Post-processing of the noisy counts."""
    lower, upper, count = [], [], []

    def leaf(node, mass):
        below, above = node_edges(node)
        lower.append(below), upper.append(above), count.append(mass)

    def walk(node, mass):
        children = node_children(node)
        sure = [c for c in children if c in fine and fine[c] >= r.fine_bar]
        if not sure:
            return leaf(node, mass)
        total = sum(fine[c] for c in sure)
        for c in sure:
            walk(c, fine[c] * min(1.0, mass / total))
        others = [c for c in children if c not in sure]
        for c in others:
            leaf(c, max(mass - total, 0.0) / len(others))

    cells = _spread(levels, kept)
    for cell in np.flatnonzero(cells > 0):
        walk((int(cell), 0, 0), cells[cell])
    order = np.argsort(lower, kind="stable")
    return np.array(lower)[order], np.array(upper)[order], np.array(count)[order]


def _density(r: Release, levels, fine: dict, kept: np.ndarray, column: NumericColumn, points: list) -> tuple | None:
    """:attr:`NumericColumn.density` of ``column`` from the released numbers but the ``points``
    (each a part one float wide, with its noisy count) and the leaves of the digits' tree with
    those numbers taken out (:func:`_leaves`, cut at them and at the bin edges, a part of a leaf
    given the share of its count its width is), each part's even share being the bin's count
    spread over the numbers the column writes (:meth:`NumericColumn.numbers_in`):

    - a bin with a part that surely holds more than its even share (by ``bar``: noise alone
      lifts a count so far with probability ``DECADE_MISS``) has every part drawn by its own
      count, so that numbers heaped on a few values stay there (14-16% of wages were drawn in
      the gaps between heaps when their bins were drawn evenly around them);
    - where the other bins' parts, together, differ from their even shares by more than their
      noise explains (a chi-square test at level ``SHAPE_LEVEL``), each count is shrunk towards
      its even share by the part of the difference the noise explains, one share for the column
      (positive-part James-Stein, an empirical Bayes estimate: Efron and Morris 1973, section 2;
      pooled over the bins, as a bin holds few parts): mpls_stops' latitudes, bins a hundredth of
      a degree whose fifths hold 11-35% of them, 1-way TVD within their bins 0.065 -> 0.041;
    - else they are drawn evenly (None: every bin), which is nearer the truth than noisy counts
      where the parts differ by noise alone (cps1988's years of experience, bins of two or three
      years: 1-way TVD 0.005 drawn evenly, 0.013 by the noisy count of each year).

    A part's noise variance is taken as its share of its leaf's count's, at most ``max(std,
    fine_std)`` squared (a part no leaf covers, its count clipped at zero: the whole of it); a
    released number's, ``std`` squared.  That bound, not each count's own variance: the digits'
    tree keeps the children whose noisy counts pass ``fine_bar``, so theirs lean up and the
    rest's down, and the finer model saw a shape in 7 of 8 schemas of uniform numbers.
    Post-processing of the noisy counts."""
    edges = np.asarray(column.edges, dtype=float)
    values = {v: c for v, c in r.values.items() if isinstance(v, (int, float)) and v not in points
              and edges[0] <= as_float(v) < edges[-1]}
    lower, upper, count = _leaves(*_without(levels, fine, values), r, kept)
    if not lower.size and not values:
        return None
    exact = np.array([_written(as_float(v), r.decimals) for v in sorted(values, key=as_float)])  # one float wide
    std = r.std if math.isinf(r.fine_std) else max(r.std, r.fine_std)  # of a leaf's count, at most
    bar = sure_bar(r, 1.0, std, DECADE_MISS)[0]
    cuts = np.concatenate([exact, np.nextafter(exact, math.inf)])
    x, y, records = cut_density(edges, lower, upper, count, cuts)
    shared = cut_density(edges, lower, upper, np.full(lower.size, std), cuts)[2]  # std times a part's share of its leaf
    noise = np.where(shared > 0, shared, std) ** 2  # a part no leaf covers: the whole std
    at = np.searchsorted(x, exact)
    np.add.at(records, at, [values[v] for v in sorted(values, key=as_float)])  # each released number's own count
    np.add.at(noise, at, r.std ** 2)
    room = column.numbers_in(x, y)
    bin_of = np.searchsorted(edges, x, side="right") - 1
    heaps, shaped, energy, explained, freedom = [], [], 0.0, 0.0, 0
    for b in np.unique(bin_of):
        here = np.flatnonzero((bin_of == b) & (room > 0))
        if here.size < 2:
            continue
        even = room[here] / room[here].sum()  # each part's share of the bin, spread evenly
        spread = records[here] - records[here].sum() * even
        if (spread >= bar).any():  # a part surely holds more than its even share: a heap, by its own count
            heaps.append(here)
            continue
        shaped.append((here, spread))
        v = noise[here]  # what the noise adds to the spread's square, expected: of e_j - even_j sum(e)
        energy, explained = energy + spread @ spread, explained + v.sum() - 2 * even @ v + (even @ even) * v.sum()
        freedom += here.size - 1
    keep = 1.0 - explained / energy if freedom and energy > explained * chi2.ppf(1 - SHAPE_LEVEL, freedom) / freedom \
        else 0.0
    counts = [(here, records[here]) for here in heaps] + \
             [(here, records[here] - (1.0 - keep) * spread) for here, spread in shaped if keep > 0]
    parts = sorted((x[j], y[j], c) for here, count in counts for j, c in zip(here, count))
    return tuple((json_value(a), json_value(b), json_value(round(c, 1))) for a, b, c in parts if c > 0) or None


def median_number(masses) -> float | None:
    """The median of numbers given as ``(place, noisy count)`` pairs (counts clipped at zero); None
    where they hold none.  Post-processing of the counts."""
    places, counts = (np.array(x, dtype=float) for x in zip(*masses)) if masses else (np.empty(0), np.empty(0))
    order = np.argsort(places, kind="stable")
    cumulative = np.cumsum(np.clip(counts[order], 0.0, None))
    if not cumulative.size or cumulative[-1] <= 0:
        return None
    return json_value(float(places[order][np.searchsorted(cumulative, cumulative[-1] / 2)]))
