"""Where a column's range of numbers starts and ends on the fixed grid, from noisy counts: the
nodes ``(cell, depth, index)`` of a cell's refined digits (:func:`node_edges`, :func:`node_children`),
the parts of a node that surely hold numbers (:func:`sure_parts`), the node a range starts or
ends in (:func:`end_node`; both, :func:`range_ends`) and the edge inside it where the numbers stop
(:func:`outer_edge`).
All is post-processing of noisy counts."""
from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from .grid import CELL_HOLDS_WHOLE, LEVELS, LOWER, N_CELLS, UPPER
from .histogram import RANGE_MISS, Release, noise_bar

#: A column whose released values miss more than this share of it has a tail: numeric.
TAIL_SHARE = 0.02
#: Noise stds at which a part of a range's end is noticed where none surely holds numbers (:func:`_placed`).
NOTICE_Z = 2.0
#: Noise stds by which the parts outside a range grown around a sure part still show numbers where
#: they are not noticeable: the range then takes them all (:func:`_grown`).
SHOW_Z = 1.0
#: Noise stds by which the children of a node that cannot be told from empty may hold more than
#: TAIL_SHARE of it, for the node's numbers to be placed in the others (:func:`sure_parts`).
SPLIT_Z = 2.0
#: Noise stds (of the ratio of an end node's noisy count to its neighbour's) by which the end node
#: must surely hold fewer numbers for the range to end inside it, and by which it ends past where
#: the end node's count at its neighbour's density would end it (:func:`outer_edge`).
SURELY_Z, END_Z = 2.0, 1.0


def node_width(node) -> float:
    """Width of a node ``(cell, depth, index)``."""
    cell, depth, _ = node
    return (UPPER[cell] - LOWER[cell]) / 10.0 ** depth


def node_edges(node) -> tuple[float, float]:
    """``[lower, upper)`` of a node ``(cell, depth, index)``."""
    cell, depth, index = node
    width = (UPPER[cell] - LOWER[cell]) / 10.0 ** depth
    if depth == 0:
        return LOWER[cell], UPPER[cell]
    digits = 1 - math.floor(math.log10(width))  # the node's decimals, less float error
    upper = UPPER[cell] if index == 10 ** depth - 1 else round(LOWER[cell] + width * (index + 1), digits)
    return round(LOWER[cell] + width * index, digits), upper


def range_ends(levels, fine: dict, r: Release, kept: np.ndarray, integer: bool) -> tuple:
    """``(first, last)``: the nodes where a column's range starts, in the lowest decade ``kept``,
    and ends, in the highest (:func:`end_node`).  Where both lie in one tenth of one decade (or in
    one cell of one tenth) and the rest of that decade (tenth), both sides told together, surely
    holds numbers, though neither side did alone, the range grows over the tenths (cells) around it
    (:func:`_grown`), and starts and ends in the outer ones.  So numbers on both sides of a sure
    part are not all clipped into it (loanapp's unemployment rates, ten values from 1.8 to 10.6,
    came out as the 3.2 of 36% of them), nor is the range stretched over the empty rest of its
    decade where they lie next to it (HHS breaches' submission dates, 2009-2015 in the cells
    1.2e9-1.5e9 seconds, came out from 2001 to 2033 with the tenth [1e9, 2e9) kept whole).  A
    range of one cell that does not surely hold numbers alone (:func:`sure_bar`, one test) keeps
    its tenth whole: noise may have made it the one noticeable cell of a tenth whose numbers are
    spread (mroz's mothers' years of schooling, 753 from 0 to 17 at noise std 127, were all coded
    18, the empty [18, 19) lifted to 282)."""
    def ends(tenths=(None, None), cells=(None, None)) -> tuple:
        return (end_node(levels, fine, r, kept[0], False, integer, tenths[0], cells[0]),
                end_node(levels, fine, r, kept[-1], True, integer, tenths[1], cells[1]))

    first, last = ends()
    tenth = LEVELS[1][first[0]]
    if kept[0] != kept[-1] or LEVELS[1][last[0]] != tenth:
        return first, last
    cells = _cells(kept[0], integer)
    tenths, estimates, variances = _tenths(levels, cells, 1)
    grown = _grown(estimates, variances, tenths == tenth, levels[0][kept[0]], r)
    if grown is not None:
        return ends(tuple(tenths[grown]))
    cells = cells[LEVELS[1][cells] == tenth]
    if first[0] == last[0]:
        grown = _grown(levels[2][cells], np.ones(cells.size), cells == first[0], levels[1][tenth], r)
        if grown is not None:
            return ends((tenth, tenth), tuple(cells[grown]))
        if levels[2][first[0]] < sure_bar(r, 1.0, r.std)[0]:
            return ends((tenth, tenth), (cells[0], cells[-1]))
    return first, last


def _grown(estimates: np.ndarray, variances: np.ndarray, part: np.ndarray, total: float, r: Release):
    """``[lo, hi]``: the indices of the outer parts of a whole (of noisy count ``total``; its parts'
    noisy ``estimates`` of noise variances ``variances`` times ``r.std`` squared) that a range
    holding the one part ``part`` (a mask) grows to, where the parts outside it surely hold
    numbers together (:func:`_outside`, past :func:`sure_bar` of one test, as :func:`_widened`
    takes parts in: an empty rest passes about once in 740; else None, as where ``part`` is the
    whole): by the part next to it on each side while those outside are noticeable together
    (``NOTICE_Z`` stds); where they are not but still show numbers (``SHOW_Z``), to the whole:
    numbers spread too thin to place are kept whole rather than clipped, as in :func:`_placed`
    (the months of a year at noise std 119, 43 each: months 4-6 alone)."""
    if part.all():
        return None
    outside, std = _outside(estimates, variances, ~part, total)
    if outside < sure_bar(r, 1.0, std * r.std)[0]:
        return None
    lo = hi = int(np.flatnonzero(part)[0])
    at = np.arange(estimates.size)
    while True:
        lo, hi = max(lo - 1, 0), min(hi + 1, estimates.size - 1)
        if lo == 0 and hi == estimates.size - 1:
            return [lo, hi]
        outside, std = _outside(estimates, variances, (at < lo) | (at > hi), total)
        if outside < NOTICE_Z * r.std * std:
            return [lo, hi] if outside < SHOW_Z * r.std * std else [0, estimates.size - 1]


def _cells(decade: int, integer: bool) -> np.ndarray:
    """The cells of ``decade`` a range may start or end in: of a column of whole numbers
    (``integer``), those that can hold one where the decade has any."""
    cells = np.flatnonzero(LEVELS[0] == decade)
    return cells[CELL_HOLDS_WHOLE[cells]] if integer and CELL_HOLDS_WHOLE[cells].any() else cells


def end_node(levels, fine: dict, r: Release, kept: int, reverse: bool, integer: bool, tenth: int | None = None,
             cell: int | None = None) -> tuple:
    """The node ``(cell, depth, index)`` where a column's range starts (``reverse``: ends) inside the
    decade ``kept``: its tenth placed by :func:`_placed` (each told by its noisy count and the sum
    of its cells', :func:`_tenths`; ``integer``: a column of whole numbers, whose cells that
    cannot hold one are left out where the decade has others), at bars that halve from the inner
    tenth out (:func:`_halving`: with the widening, an empty tenth is taken in at most about one
    end of 250 however many lie beyond the numbers); in that tenth the cell placed likewise, at bars twice as lenient (a
    cell's error is at most its tenth); below that, the first of the :func:`sure_parts` of each node
    split, widened over the children beyond it likewise (:func:`_widened_child`).  So the range
    holds every node that surely holds numbers, clips no tenth, cell or child next to it that
    surely holds some, and passes the numbers by less than the finest node the noise
    lets it tell apart (which only widens an end bin).  ``tenth``, ``cell``: where given (a range
    grown by :func:`range_ends`), the range starts in that tenth and cell instead."""
    step = -1 if reverse else 1
    cells = _cells(kept, integer)
    tenths, estimates, variances = _tenths(levels, cells, step)
    if tenth is None:
        tenth = tenths[_placed(estimates, variances, levels[0][kept], r, _halving(tenths.size))]
    cells = cells[LEVELS[1][cells] == tenth][::step]
    if cell is None:
        cell = cells[_placed(levels[2][cells], np.ones(cells.size), levels[1][tenth], r, 2 * _halving(cells.size))]
    node = (int(cell), 0, 0)
    while (parts := sure_parts(node, fine, r)):
        node = _widened_child(node, parts[::step][0][0], levels, fine, r, step)
    return node


def _widened_child(node, part, levels, fine: dict, r: Release, step: int) -> tuple:
    """The child of ``node`` where a range ends (``step`` -1: its upper end) that
    :func:`sure_parts` ends in its child ``part``, moved out by :func:`_widened` over the children
    beyond it, told by their noisy counts and by the node's less the others', as tenths and cells
    are: those the test that the rest of a node is small let go (under ``TAIL_SHARE`` plus
    ``SPLIT_Z`` stds of the sum of all the others) are not clipped where together they surely hold
    numbers (weather's pressures, in one schema at epsilon 0.15: 17% clipped, 11% now; Norway's
    survey weights in ESS10, up to 1.036 at rho 0.25: 9.7% clipped, 4.2% now)."""
    children = node_children(node)[::step]  # from the outer end
    cell, depth, _ = node
    told = r if depth == 0 else replace(r, std=r.fine_std)  # in units of the node's count's noise
    estimates = np.array([fine[child] for child in children])
    first = _widened(estimates, np.full(estimates.size, (r.fine_std / told.std) ** 2), children.index(part), told,
                     levels[2][cell] if depth == 0 else fine[node])
    return children[first]


def _tenths(levels, cells: np.ndarray, step: int) -> tuple:
    """``(tenths, estimates, variances)``: the tenths of ``cells`` in order (``step`` -1: descending)
    and an estimate of the numbers in each, its noisy count and the sum of the noisy counts of
    its ``cells`` weighed by their noise (variances in units of ``Release.std`` squared: every
    level has the same noise).  For whole numbers below ten the cell is the number, and a tenth
    is told twice as well as alone (txhousing's month 1 at noise std 208: 717 records)."""
    tenths = np.unique(LEVELS[1][cells])
    at = np.searchsorted(tenths, LEVELS[1][cells])
    sums = np.bincount(at, weights=levels[2][cells], minlength=tenths.size)
    sizes = np.bincount(at, minlength=tenths.size)
    precision = 1.0 + 1.0 / sizes
    return tenths[::step], ((levels[1][tenths] + sums / sizes) / precision)[::step], (1.0 / precision)[::step]


def _placed(estimates: np.ndarray, variances: np.ndarray, total: float, r: Release, shares: np.ndarray) -> int:
    """Index of the part of a whole (of noisy count ``total``) where a range starts, from the noisy
    ``estimates`` of its parts from the outer end (of noise variances ``variances`` times
    ``r.std`` squared): the first that surely holds numbers (:func:`_first`, at ``shares`` of
    ``RANGE_MISS``); where none does, the outermost noticeable one (``NOTICE_Z`` stds) that,
    with the parts between it and the innermost noticeable one, is noticeable together
    (weather's day 31, 756 records at noise std 268, where the range reached 39; humidity's 286
    hundreds reached 130 from the noise of the cell [120, 130) past an empty one), or else the
    outer one.  A start that no part surely holds alone moves out while all beyond it together
    are noticeable (:func:`_outside`): to the outermost part beyond it noticeable alone, else to
    the outer one.  So numbers spread too thin for the noise to place them are kept whole rather
    than clipped (ames' living areas, about 230 houses in each hundred square feet from 1,000 to
    1,999 at noise std 188, were clipped into [1200, 1400), the hundreds noise lifted past 2
    stds: 83% of the houses), and a tail that a running count made sure keeps its noticeable
    parts (CPS wages from 50 a week: the range starts in [50, 60), not [10, 20) nor [70, 80)).
    Then out while the next alone or all beyond together surely hold some (:func:`_widened`)."""
    first, alone = _first(estimates, variances, r, shares)
    noticeable = estimates >= NOTICE_Z * r.std * np.sqrt(variances)
    if first is None:
        noticed = np.flatnonzero(noticeable)
        inner = int(noticed[-1]) if noticed.size else 0
        first = next((int(k) for k in noticed if estimates[k:inner].sum() >= NOTICE_Z * r.std
                      * math.sqrt(variances[k:inner].sum())), inner)
    while first and not alone:
        outside, std = _outside(estimates, variances, np.arange(estimates.size) < first, total)
        if outside < NOTICE_Z * r.std * std:
            break
        beyond = np.flatnonzero(noticeable[:first])
        first = int(beyond[0]) if beyond.size else 0
    return _widened(estimates, variances, first, r, total)


def _halving(n: int) -> np.ndarray:
    """Shares of ``RANGE_MISS`` for ``n`` parts from the outer end, halving from the inner end out
    (1/4, 1/8, ...): for each of :func:`_first`'s two tests, they sum to less than a half."""
    return 0.5 ** (1 + n - np.arange(n))


def _first(estimates: np.ndarray, variances: np.ndarray, r: Release, shares: np.ndarray) -> tuple[int | None, bool]:
    """``(index, alone)``: the first of the noisy ``estimates`` (of noise variances ``variances``
    times ``r.std`` squared), from the outer end, that surely holds numbers (``alone``), or at
    which their running sum surely does (a thin tail before it), whichever comes first; None when
    none does.
    Surely: past :func:`sure_bar` at its part's share of ``RANGE_MISS`` (``shares``, each test), so
    that with :func:`_halving` an empty part far beyond the numbers needs more than one next to
    them (at three stds each, txhousing's year reached 9,999 from a tenth of noise at 3.2 stds,
    six empty tenths beyond its years, in one schema of sixty at epsilon 0.3)."""
    alone = estimates >= sure_bar(r, shares, np.sqrt(variances) * r.std)
    running = np.cumsum(estimates) >= sure_bar(r, shares, np.sqrt(np.cumsum(variances)) * r.std)
    sure = alone | running
    first = int(np.argmax(sure)) if sure.any() else None
    return first, first is not None and bool(alone[first])


def sure_bar(r: Release, shares, std, miss: float = RANGE_MISS) -> np.ndarray:
    """The noisy estimates of noise stds ``std`` that estimates of nothing pass with probabilities
    at most ``shares`` of ``miss`` (by the union bound, any of them at most their sum times it):
    a count's :func:`~.histogram.noise_bar` at that probability (under Laplace noise, whose
    tails are heavier, more than the Gaussian's stds), in units of ``std``."""
    shares, std = np.broadcast_arrays(np.asarray(shares, dtype=float), np.asarray(std, dtype=float))
    scale = r.std if r.notion == "zcdp" else r.std / math.sqrt(2.0)  # the count noise's parameter
    misses = miss * shares.ravel()
    return np.array([noise_bar(r.notion, scale, NormalDist().inv_cdf(1.0 - chance), chance) for chance in misses]) \
        * std.ravel() / r.std


def _widened(estimates: np.ndarray, variances: np.ndarray, first: int, r: Release, total: float) -> int:
    """``first`` moved out over the noisy ``estimates`` before it (of the parts of a whole of noisy
    count ``total``, from the outer end), while the next alone or all before it together surely
    hold numbers (past :func:`sure_bar` of one test each: an empty one passes about once in 740).
    All before it are told twice, by their sum and by ``total`` less the other estimates,
    weighed by their noise: the open credit lines of a loan table (10-19: 47% of them, sure; 20
    to 51: 10%, none of these tenths sure alone at noise std 204) are not clipped into 19, nor
    txhousing's first month into its second (717 records, let go before while under 2% of the
    numbers plus 2.5 stds)."""
    while first:
        outside, std = _outside(estimates, variances, np.arange(estimates.size) < first, total)
        near = estimates[first - 1] >= sure_bar(r, 1.0, math.sqrt(variances[first - 1]) * r.std)[0]
        if not near and outside < sure_bar(r, 1.0, std * r.std)[0]:
            break
        first -= 1
    return first


def _outside(estimates: np.ndarray, variances: np.ndarray, out: np.ndarray, total: float) -> tuple[float, float]:
    """``(estimate, std)``: the numbers in the parts ``out`` (a mask of the noisy ``estimates``, of
    noise variances ``variances`` times the noise std squared, of a whole of noisy count ``total``
    with the noise std), told twice, by their sum and by ``total`` less the other estimates,
    weighed by their noise; its std in units of the noise std."""
    before, after = variances[out].sum(), 1.0 + variances[~out].sum()
    precision = 1.0 / before + 1.0 / after
    return (estimates[out].sum() / before + (total - estimates[~out].sum()) / after) / precision, \
        1.0 / math.sqrt(precision)


def sure_parts(node, fine: dict, r: Release) -> list:
    """``[(child, noisy count)]`` of the children of ``node`` that surely hold numbers (noisy count
    at least ``r.fine_bar``), when :func:`refine` split it and the others hold little of it: the
    sum of their noisy counts at most ``TAIL_SHARE`` of the children's (clipped at zero), up to
    ``SPLIT_Z`` stds of that sum; else ``[]`` (its numbers are too spread for the noise to place
    them: the node is kept whole)."""
    parts = node_children(node)
    if parts[0] not in fine:
        return []
    sure = [(part, fine[part]) for part in parts if fine[part] >= r.fine_bar]
    rest = [fine[part] for part in parts if fine[part] < r.fine_bar]
    total = sum(c for _, c in sure) + sum(max(c, 0.0) for c in rest)
    return sure if sum(rest) <= TAIL_SHARE * total + SPLIT_Z * math.sqrt(len(rest)) * r.fine_std else []


def node_children(node) -> list:
    """The ten nodes one digit below ``node``, in order."""
    cell, depth, index = node
    return [(cell, depth + 1, 10 * index + j) for j in range(10)]


def outer_edge(node, levels, fine: dict, r: Release, upper_end: bool, step: float) -> float:
    """The edge where a range ending in ``node`` (found by :func:`end_node`; ``upper_end``: its upper
    end) ends: the node's outer edge, or inside the node where it surely holds fewer numbers
    than its inner neighbour (the node next to it and as wide; for a cell next to a decade below
    it, that decade's tenth next to it: weather's humidities, at most 100, were drawn up to 110
    from the cell [100, 110), its neighbour [99, 100) a tenth as wide): where its noisy count ends when
    laid from the inner edge at that neighbour's density, ``END_Z`` stds of that ratio's noise
    further out.  A range ends where its numbers thin out or stop, so an end node no fuller than
    its neighbour holds its numbers nearest it (hotel arrivals, up to 2017.663 in the finest
    node [2017.6, 2017.7), were drawn up to 2017.7: 37% of it past the last date; ames' years
    of sale, 2006 to 2010, were coded up to 2019 from [2010, 2020) kept whole).  A node fuller
    than its neighbour (numbers piled at a cap) keeps its edge, and the edge never passes the
    node's children beyond it that surely hold numbers together (:func:`_held_beyond`: a tail
    thinning out, not stopping).  The edge moves outward onto a thousandth of the node's width,
    or onto a multiple of ``step`` (whole numbers: 1, or a time's unit; else 0), never inside a
    node one step wide.  Post-processing of noisy counts."""
    cell, depth, index = node
    below, above = node_edges(node)
    outer, inward, width = (above if upper_end else below), (-1 if upper_end else 1), above - below
    if depth == 0:  # a cell: its neighbour is the next cell, or that cell's tenth where as wide
        near, std, count = cell + inward, r.std, levels[2][cell]
        inside = 0 < near < N_CELLS - 1
        tenth = LEVELS[1] == LEVELS[1][near]
        near_width = UPPER[tenth].max() - LOWER[tenth].min()
        if inside and math.isclose(near_width, width):  # a cell of the decade below: its tenth is as wide
            near_count = levels[1][LEVELS[1][near]]
        else:
            near_count, near_width = (levels[2][near] if inside else 0.0), UPPER[near] - LOWER[near]
    else:
        near, std = (cell, depth, index + inward), r.fine_std
        count, near_count, near_width = fine.get(node, 0.0), fine.get(near, 0.0), node_width(near)
    if width <= max(step, 1e-300) or count <= 0 or near_count <= 0 or not math.isclose(near_width, width):
        return outer
    ratio, error = count / near_count, std * math.hypot(1.0 / count, 1.0 / near_count)
    if ratio * (1.0 + SURELY_Z * error) >= 1.0:
        return outer
    filled = ratio * width * (1.0 + END_Z * error)
    edge = below + filled if upper_end else above - filled
    held = _held_beyond(node, edge, fine, r, upper_end)
    if held is not None:  # a child's edge, on the grid: onto a multiple of step, outward
        return (math.ceil(held / step) if upper_end else math.floor(held / step)) * step if step else held
    digits = 3 - math.floor(math.log10(width))
    unit = step or 10.0 ** -digits
    edge = (math.ceil(edge / unit) if upper_end else math.floor(edge / unit)) * unit
    return edge if step else round(edge, digits)


def _held_beyond(node, edge: float, fine: dict, r: Release, upper_end: bool) -> float | None:
    """Where a range ending at ``edge`` inside ``node`` (``upper_end``: its upper end) ends instead
    when the node was split and its children beyond ``edge`` together surely hold numbers (past
    :func:`sure_bar` of one test, as :func:`_widened` takes parts in): the outer edge of the child
    from which on, outward, they still do (weather's pressures, thinning from 1010 hPa down to
    984, were clipped at 1007.25 by the density of [1000, 1010) against [1010, 1020), while its
    hectopascals 1005 and 1006 held 475 and 562 at noise std 106); None where they do not.
    Post-processing of noisy counts."""
    children = node_children(node)
    if children[0] not in fine:
        return None
    below, above = node_edges(node)
    inner = min(int((edge - below) / (above - below) * len(children)), len(children) - 1)  # the child holding edge
    outward = children[inner + 1:] if upper_end else children[:inner][::-1]  # nearest the edge first
    counts = np.array([fine[child] for child in outward])
    beyond = np.cumsum(counts[::-1])[::-1]  # from each child outward
    sure = beyond >= sure_bar(r, 1.0, r.fine_std * np.sqrt(np.arange(counts.size, 0, -1)))
    if not sure.size or not sure[0]:
        return None
    last = counts.size - 1 if sure.all() else int(np.argmin(sure)) - 1  # before the first not sure
    return node_edges(outward[last])[1 if upper_end else 0]
