"""Fused Triton kernels for the torch oracle on CUDA (the junction-tree calibration of McKenna et
al. 2019, sec. 3.2): a segmented log-sum-exp read through an index plan, and an indexed add, each
one kernel where torch takes a gather and five to seven more.

:class:`~ektelo_pgm.pgm.torch_oracle.TorchOracle` plans belief propagation as index tensors
(:mod:`ektelo_pgm.pgm.torch_tensors`); with torch's own operations every log-sum-exp writes the
gathered cells out, then reads them back for the maximum, the shift, the exponential and the sum,
and every absorbed message is a gather and an index-add.  Here a log-sum-exp reads each cell once
(its index, 4 bytes, and its value) and keeps a running maximum and sum in registers
(:func:`segment_lse`); an absorbed message is one read-add-write (:func:`gather_add`).  Indices are
int32: the plan takes half the memory of torch's int64 one.

Rows that are few and long (a root clique's normalisation: one row of millions of cells) are
split over chunks whose partial log-sum-exps are reduced by a second launch, so that every
reduction fills the device.  The sums are deterministic: no atomics, each destination written by
one program.  This module imports triton; :mod:`ektelo_pgm.pgm.torch_oracle` imports it only
where triton is installed.  With ``TRITON_INTERPRET=1`` set before the import the kernels run on
torch's CPU device, which is how the tests check them without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

try:
    import triton
    import triton.language as tl
except ImportError as exc:  # torch_oracle imports this module only where triton is installed
    raise ImportError(f"the fused kernels need triton (the 'gpu' extra; torch's CUDA builds bring it): {exc}",
                      name="triton") from exc

#: Cells a program's tile holds (rows times columns); the column widths a tile can have.
TILE = 1024
WIDTHS = (4, 32, 256)
#: Programs a launch should have at least, so that a reduction of few rows fills the device.
PROGRAMS = 264
#: Tiles a chunk of a split row holds at least.
CHUNK_TILES = 8
#: Cells an indexed add's program handles.
ADD_BLOCK = 1024


@triton.jit(do_not_specialize=["rows", "width", "span", "has_sub"])
def _segment_lse(src, idx, rows, width, span, out, out_at, sub, has_sub,
                 BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    """``out[out_at[r * chunks + c]] = logsumexp(src[idx[r, c * span:(c + 1) * span]])``, less
    ``sub`` at the same destination where ``has_sub``; chunk ``c`` the grid's second axis."""
    r = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    c = tl.program_id(1)
    live = r < rows
    base = r.to(tl.int64) * width
    top = tl.full([BLOCK_ROWS], float("-inf"), src.dtype.element_ty)
    total = tl.zeros([BLOCK_ROWS], src.dtype.element_ty)
    start = c * span
    stop = tl.minimum(start + span, width)
    for j in range(0, span, BLOCK_COLS):
        cols = start + j + tl.arange(0, BLOCK_COLS)
        mask = live[:, None] & (cols[None, :] < stop)
        at = tl.load(idx + base[:, None] + cols[None, :], mask=mask, other=0)
        x = tl.load(src + at, mask=mask, other=float("-inf"))
        new_top = tl.maximum(top, tl.max(x, axis=1))
        shift = tl.where(new_top == float("-inf"), 0.0, new_top)
        total = total * tl.exp(top - shift) + tl.sum(tl.exp(x - shift[:, None]), axis=1)
        top = new_top
    value = tl.where(total > 0, tl.log(total) + top, float("-inf"))
    dest = tl.load(out_at + r.to(tl.int64) * tl.num_programs(1) + c, mask=live, other=0)
    if has_sub:
        value -= tl.load(sub + dest, mask=live, other=0.0)
    tl.store(out + dest, value, mask=live)


@triton.jit(do_not_specialize=["n"])
def _gather_add(dst, dst_at, src, src_at, n, BLOCK: tl.constexpr):
    """``dst[dst_at[i]] += src[src_at[i]]`` for ``i < n``; ``dst_at`` without repeats."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = i < n
    d = tl.load(dst_at + i, mask=live, other=0)
    v = tl.load(src + tl.load(src_at + i, mask=live, other=0), mask=live, other=0.0)
    tl.store(dst + d, tl.load(dst + d, mask=live, other=0.0) + v, mask=live)


@dataclass
class Reduction:
    """One group of equal-length segments planned for :func:`segment_lse`: ``idx`` (rows, width)
    int32 source cells, ``out_at`` (rows,) int32 destinations, the tile's column width ``cols``,
    and ``chunks`` of ``span`` columns a row (one chunk: no second launch)."""
    idx: object
    out_at: object
    rows: int
    width: int
    cols: int
    chunks: int
    span: int


def _cols(width: int) -> int:
    """The column width of the tile for rows of ``width`` cells."""
    return next((w for w in WIDTHS if width <= w), WIDTHS[-1])


def plan_reduction(idx, out_at) -> Reduction:
    """The launch plan of one group: ``idx`` (rows, width) and ``out_at`` (rows,), int32 device tensors."""
    rows, width = idx.shape
    cols = _cols(width)
    row_programs = triton.cdiv(rows, TILE // cols)
    chunks = max(1, min(triton.cdiv(PROGRAMS, row_programs), triton.cdiv(width, cols * CHUNK_TILES)))
    span = triton.cdiv(triton.cdiv(width, chunks), cols) * cols
    return Reduction(idx, out_at, rows, width, cols, triton.cdiv(width, span), span)


def scratch_cells(reductions) -> int:
    """Cells of the scratch buffer the split reductions need (their partial results)."""
    return max([r.rows * r.chunks for r in reductions if r.chunks > 1], default=0)


def _launch(src, idx, rows, width, span, chunks, cols, out, out_at, sub) -> None:
    """One launch of :func:`_segment_lse` over ``rows`` rows of ``chunks`` chunks of ``span`` columns."""
    block_rows = TILE // cols
    _segment_lse[(triton.cdiv(rows, block_rows), chunks)](src, idx, rows, width, span, out, out_at,
                                                          out if sub is None else sub, int(sub is not None),
                                                          BLOCK_ROWS=block_rows, BLOCK_COLS=cols)


def segment_lse(src, red: Reduction, out, sub, scratch, identity) -> None:
    """``out[red.out_at] = logsumexp(src[red.idx], rows)``, less ``sub[red.out_at]`` unless
    ``sub`` is None; split rows go through ``scratch`` (``identity``: int32 0, 1, 2...)."""
    if red.chunks == 1:
        _launch(src, red.idx, red.rows, red.width, red.span, 1, red.cols, out, red.out_at, sub)
        return
    _launch(src, red.idx, red.rows, red.width, red.span, red.chunks, red.cols, scratch, identity, None)
    _launch(scratch, identity, red.rows, red.chunks, red.chunks, 1, _cols(red.chunks), out, red.out_at, sub)


def gather_add(dst, dst_at, src, src_at) -> None:
    """``dst[dst_at] += src[src_at]`` (int32 index tensors of one length; ``dst_at`` without repeats)."""
    n = dst_at.numel()
    if n:
        _gather_add[(triton.cdiv(n, ADD_BLOCK),)](dst, dst_at, src, src_at, n, BLOCK=ADD_BLOCK)
