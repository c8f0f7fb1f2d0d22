"""COO SpMV/SpMM kernels (numba.cuda), paired with ``reference/coo.py``.

``spmv``  one thread per row: thread ``r`` finds its row's first entry by binary search in
          the sorted ``rows`` array, then sums the row's entries in order (no atomics, so
          the result is deterministic and NaN/Inf propagate as in a plain sum).
``spmm``  one warp per (row, 32 columns of X): every lane searches the row start, walks the
          row's entries and owns one column of X/Y (reads of X and writes of Y coalesced).

Sums are in float32 for float16/float32 values and float64 for float64; outputs have the
matrix's value dtype.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference.coo import COOMatrix

from .. import formats
from .._cuda import cuda, inline_device
from ._intrinsics import vload4
from ._spmm import tile_parts
from ._common import (
    WARP, PTXTarget, acc_type, array_sig, check_threads_per_block, checked_to_device,
    CHECK_VEC, launch_spmm, launch_strided, launch_spmv, run_device_check, to_dev,
    check_config,
)

__all__ = ["COOConfig", "DeviceCOO", "to_device", "device_check", "spmv", "spmm", "ptx_targets"]


@dataclasses.dataclass(frozen=True)
class COOConfig:
    """Launch settings: ``threads_per_block``, a multiple of 32 in [32, 1024]."""

    threads_per_block: int = 256

    def __post_init__(self):
        check_threads_per_block("COOConfig", self.threads_per_block)


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceCOO:
    """A :class:`COOMatrix` whose arrays live on the device."""

    rows: object
    cols: object
    values: object
    shape: tuple
    dtype: np.dtype
    nbytes: int


def to_device(M: COOMatrix, check: str = "auto") -> DeviceCOO:
    """``M`` on the device, checked by ``kernels._common.checked_to_device``: every index in
    range and the rows in order (``check`` says where: "auto", "host" or "device")."""
    return checked_to_device(M, COOMatrix, DeviceCOO, _upload, device_check, check)


def _upload(M: COOMatrix) -> DeviceCOO:
    return DeviceCOO(rows=to_dev(M.rows), cols=to_dev(M.cols), values=to_dev(M.values),
                     shape=M.shape, dtype=M.dtype, nbytes=M.nbytes)


# ---------------------------------------------------------------------------------------------
# the device check: rows in range and in order (the kernels binary-search them), columns in range
# ---------------------------------------------------------------------------------------------

CHECK_FIELDS = ("rows", "cols")


@functools.lru_cache(maxsize=None)
def _check_kernel():
    vec = CHECK_VEC

    @inline_device
    def check_entry(rows, cols, q, n, n_rows, n_cols, bad):
        """(rows bad, cols bad) after looking at entry q."""
        r = rows[q]
        c = cols[q]
        bad_r = bad[0] or r < 0 or r >= n_rows or (q + 1 < n and rows[q + 1] < r)
        bad_c = bad[1] or c < 0 or c >= n_cols
        return (bad_r, bad_c)

    @cuda.jit
    def coo_check(rows, cols, n_rows, n_cols, flags):
        """Grid-stride loop: thread t reads entries [vec*t, vec*t + vec), then the same a grid
        further on, with one vector load per array (the last partial group entry by entry),
        and flags ``rows`` once if a row is outside [0, n_rows) or above the next entry's,
        ``cols`` once if a column is outside [0, n_cols)."""
        n = rows.shape[0]
        p = cuda.grid(1) * vec
        step = cuda.gridsize(1) * vec
        bad = (False, False)
        while p + vec <= n:
            rs = vload4(rows, p)
            cs = vload4(cols, p)
            bad_r = bad[0]
            bad_c = bad[1]
            for k in range(vec):
                bad_r = bad_r or rs[k] < 0 or rs[k] >= n_rows
                bad_c = bad_c or cs[k] < 0 or cs[k] >= n_cols
                if k + 1 < vec:
                    bad_r = bad_r or rs[k + 1] < rs[k]
            if p + vec < n and rows[p + vec] < rs[vec - 1]:
                bad_r = True
            bad = (bad_r, bad_c)
            p += step
        if p < n:                              # the last n % vec entries: one thread
            for q in range(p, n):
                bad = check_entry(rows, cols, q, n, n_rows, n_cols, bad)
        if bad[0]:
            flags[0] = 1
        if bad[1]:
            flags[1] = 1

    return coo_check


def launch_check(D: DeviceCOO, flags):
    """Launch the check kernel (no wait): a grid-stride loop over the entries."""
    launch_strided(_check_kernel(), D.rows.shape[0], D.rows, D.cols, D.shape[0], D.shape[1], flags)


def device_check(D: DeviceCOO) -> list[str]:
    """:data:`CHECK_FIELDS` with an index out of range or rows out of order (empty: none)."""
    return run_device_check(CHECK_FIELDS, launch_check, D)


@inline_device
def row_start(rows, r):
    """Index of the first entry of row ``r`` (lower bound in the sorted ``rows``)."""
    lo = 0
    hi = rows.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if rows[mid] < r:
            lo = mid + 1
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, cfg: COOConfig):
    acc = acc_type(dtype_name)

    @cuda.jit
    def coo_spmv(rows, cols, values, x, y):
        """Thread ``r`` computes y[r]."""
        r = cuda.grid(1)
        if r >= y.shape[0]:
            return
        n = rows.shape[0]
        p = row_start(rows, r)
        s = acc(0)
        while p < n and rows[p] == r:
            s += acc(values[p]) * acc(x[cols[p]])
            p += 1
        y[r] = s

    return coo_spmv


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, cfg: COOConfig, out_t: bool = False):
    acc = acc_type(dtype_name)
    warps_per_block = cfg.threads_per_block // WARP
    put_at, dims = (tile_parts(dtype_name, 1, 1, out_t=out_t)[k] for k in ("put_at", "dims"))

    @cuda.jit
    def coo_spmm(rows, cols, values, X, Y):
        """Block b, warp w: row b*warps+w; grid.y picks the 32 columns of X lane l owns
        (``out_t``: Y is the product's transpose)."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
        j = cuda.blockIdx.y * WARP + lane
        n_rows, k = dims(Y)
        if r >= n_rows or j >= k:
            return
        n = rows.shape[0]
        p = row_start(rows, r)
        s = acc(0)
        while p < n and rows[p] == r:
            s += acc(values[p]) * acc(X[cols[p], j])
            p += 1
        put_at(Y, r, j, s)

    return coo_spmm


def spmv(D, x, out=None, config: COOConfig = COOConfig()):
    """y = D @ x. ``D`` a :class:`COOMatrix` or :class:`DeviceCOO`; ``x`` host or device."""
    check_config(config, COOConfig)
    D = to_device(D)
    return launch_spmv(D, x, out, lambda: _spmv_kernel(D.dtype.name, config), (D.rows, D.cols, D.values),
                       config.threads_per_block, config.threads_per_block)


def spmm(D, X, out=None, config: COOConfig = COOConfig(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k); ``out_t``: return Y's transpose, (k, n_rows)."""
    check_config(config, COOConfig)
    D = to_device(D)
    return launch_spmm(D, X, out, lambda: _spmm_kernel(D.dtype.name, config, out_t),
                       (D.rows, D.cols, D.values), config.threads_per_block,
                       config.threads_per_block // WARP, WARP, out_t)


def ptx_targets():
    """Both kernels for every value dtype and index type (the SpMM into Y's transpose too,
    int32), and the check."""
    out = []
    for dt in formats.get("coo").kernel_dtypes:
        for it in ("int32", "int64"):
            head = f"void({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, "
            cfg = COOConfig()
            out.append(PTXTarget(f"coo.spmv[{dt},{it}]", functools.partial(_spmv_kernel, dt, cfg),
                                 head + f"{array_sig(dt)}, {array_sig(dt)})"))
            out.append(PTXTarget(f"coo.spmm[{dt},{it}]", functools.partial(_spmm_kernel, dt, cfg),
                                 head + f"{array_sig(dt, 2)}, {array_sig(dt, 2)})"))
            if it == "int32":
                out.append(PTXTarget(f"coo.spmm[{dt},{it},out_t]",
                                     functools.partial(_spmm_kernel, dt, cfg, True),
                                     head + f"{array_sig(dt, 2)}, {array_sig(dt, 2)})"))
    for it in ("int32", "int64"):
        out.append(PTXTarget(f"coo.check[{it}]", _check_kernel,
                             f"void({array_sig(it)}, {array_sig(it)}, int64, int64, {array_sig('int32')})"))
    return out
