"""What every timed method shares: the operands (:class:`Problem`) and the interface
(:class:`Method`).

A :class:`Problem` holds one matrix (canonical CSR of the stored values), the value dtype and
the right-hand side X: a vector (SpMV) or a (cols, k) matrix (SpMM). It computes the float64
reference product once, for every method's check.

A :class:`Method` is built once per problem (uploads, encodes, allocates its output) and then

``run()``       enqueues one product on the default stream (no host sync), what is timed
``result()``    the output as a host NumPy array (synchronises)
``check()``     runs once and compares with the exact product (:mod:`spmvlab.check`)
``time(...)``   a :class:`~spmvlab.bench.Timing` of ``run`` with ``events`` CUDA events
``nbytes``      bytes one product moves at minimum: ``format_bytes`` + X + Y
``events``      whose CUDA events bracket ``run``: "numba", "cupy" or "torch"
``impl``        what is actually called (e.g. "cupy.dot -> cublasGemmEx")

A method timed by another program (a public kernel's own benchmark) overrides ``time`` and
``check`` instead of providing ``run``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from reference._common import canonical_csr, check_size, value_dtype

from ..check import Check, Reference, compare, reference_product

__all__ = ["Problem", "Method"]


@dataclasses.dataclass(frozen=True, eq=False)
class Problem:
    """One matrix and right-hand side every method of a measurement multiplies.

    A      canonical scipy CSR of the values as stored in ``dtype`` (float16 values held
           exactly in float32, as everywhere in spmvlab)
    dtype  the value dtype
    X      (cols,) for SpMV or (cols, k) for SpMM, C-contiguous, in ``dtype``
    """

    A: sp.csr_matrix
    dtype: np.dtype
    X: np.ndarray
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def make(cls, A, dtype, k: int | None = None, seed: int = 1, X=None,
             dist: str = "normal", lossy: bool = False) -> "Problem":
        """Canonicalise ``A`` in ``dtype`` and draw X (``k`` columns, or a vector when
        ``k`` is None) with ``np.random.default_rng(seed)``: standard normal
        (``dist="normal"``) or uniform in [-1, 1) (``"uniform"``); or take ``X`` as given.
        ``lossy=True`` accepts values of ``A`` that overflow or underflow in ``dtype``."""
        dt = value_dtype(dtype)
        csr = canonical_csr(A, dt, lossy)
        if X is None:
            X = _draw_x(csr.shape[1], k, dt, seed, dist)
        return cls(A=csr, dtype=dt, X=np.ascontiguousarray(X, dtype=dt))

    def with_rhs(self, k: int | None = None, seed: int = 1, dist: str = "normal") -> "Problem":
        """The same matrix with a new X (drawn as :meth:`make` draws it), sharing this
        problem's dense copy, encodings (``Problem.encoded``) and other values of the matrix
        alone (``Problem.shared``, e.g. GeneralSparse plans) instead of rebuilding them;
        its reference product is its own."""
        self._cache.setdefault("shared", {})     # one dict: later values reach every N
        keep = {key: v for key, v in self._cache.items()
                if key in ("dense", "shared") or (isinstance(key, tuple) and key[0] == "encoded")}
        return Problem(A=self.A, dtype=self.dtype, X=_draw_x(self.shape[1], k, self.dtype, seed, dist),
                       _cache=keep)

    @property
    def kind(self) -> str:
        return "spmv" if self.X.ndim == 1 else "spmm"

    @property
    def k(self) -> int:
        """Right-hand sides: 1 for SpMV."""
        return 1 if self.X.ndim == 1 else int(self.X.shape[1])

    @property
    def shape(self) -> tuple:
        return tuple(int(s) for s in self.A.shape)

    @property
    def out_shape(self) -> tuple:
        return (self.shape[0],) if self.X.ndim == 1 else (self.shape[0], self.k)

    @property
    def operand_bytes(self) -> int:
        """Bytes of X and Y: what every method moves besides its matrix."""
        return (self.shape[0] + self.shape[1]) * self.k * self.dtype.itemsize

    def dense(self) -> np.ndarray:
        """The matrix as a dense row-major array in ``dtype`` (built once)."""
        if "dense" not in self._cache:
            self._cache["dense"] = np.ascontiguousarray(self.A.toarray().astype(self.dtype))
        return self._cache["dense"]

    def encoded(self, fmt: str, options: Mapping | None = None):
        """``A`` encoded in format ``fmt`` in this problem's dtype with the fast encoder and
        ``options`` (the registry's defaults for the rest), built once per (format,
        options) and kept: methods of one format share it, and
        :func:`spmvlab.experiment.build_problem` can build it in a worker process."""
        from .. import formats
        info = formats.get(fmt)
        opts = info.check_options(dict(options or {}))
        key = ("encoded", fmt, tuple(sorted((k, repr(v)) for k, v in opts.items())))
        if key not in self._cache:
            self._cache[key] = info.encode(self.A, dtype=self.dtype, fast=True, **opts)
        return self._cache[key]

    def shared(self, key, build):
        """``build()``, made once per ``key`` and kept: a value that depends on the matrix and
        dtype alone, never on X. This problem and those made from it by :meth:`with_rhs`
        (before or after) hold these values in one dict, so each is built once for all N."""
        held = self._cache.setdefault("shared", {})
        key = tuple(key)
        if key not in held:
            held[key] = build()
        return held[key]

    def reference(self) -> Reference:
        """The float64 product of the stored values (computed once)."""
        if "reference" not in self._cache:
            self._cache["reference"] = reference_product(self.A, self.X)
        return self._cache["reference"]


def _draw_x(n_cols: int, k: int | None, dt: np.dtype, seed: int, dist: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = n_cols * (1 if k is None else int(k))
    check_size(n * (8 + dt.itemsize), "X", f"{n:,} operand values ({n_cols:,} columns of A"
               f"{'' if k is None else f' x {k} right-hand sides'}, drawn in float64)",
               "time a matrix with fewer columns")
    v = rng.standard_normal(n) if dist == "normal" else rng.uniform(-1.0, 1.0, n)
    return np.ascontiguousarray(v.astype(dt) if k is None else v.reshape(n_cols, int(k)).astype(dt))


class Method:
    """Base class: subclasses set ``name``, ``impl``, ``events``, ``format_bytes`` and the
    problem, and define ``run`` and ``_result``."""

    name = "?"
    impl = "?"
    events = "numba"
    problem: Problem
    format_bytes: int = 0

    @property
    def nbytes(self) -> int:
        return int(self.format_bytes) + self.problem.operand_bytes

    def run(self):
        raise NotImplementedError

    def _result(self) -> np.ndarray:
        raise NotImplementedError

    def result(self) -> np.ndarray:
        return np.asarray(self._result()).reshape(self.problem.out_shape)

    def check(self) -> Check:
        self.run()
        return compare(self.result(), self.problem.reference(), self.problem.dtype)

    def time(self, *, reps: int = 60, warmup: int = 10, cold: bool = True, flush: str = "read"):
        from ..bench import time_fn
        return time_fn(self.run, reps=reps, warmup=warmup, cold=cold, events=self.events, flush=flush)

    def close(self):
        """Drop device buffers (the next ``gc`` frees them)."""
        self.__dict__.clear()

    def __repr__(self):
        p = getattr(self, "problem", None)
        where = f"{p.kind} {p.shape} k={p.k} {p.dtype.name}" if p is not None else "unbuilt"
        return f"<{type(self).__name__} {self.name}: {where}>"
