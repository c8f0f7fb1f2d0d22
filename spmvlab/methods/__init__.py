"""Everything that is timed, behind one interface, and the one way to measure it.

Names (``resolve(name) -> MethodSpec``):

``cublas``          dense GemmEx (SpMV: n = 1; SpMM: W @ X), CuPy
``cublas_sgemv``    cublasSgemv/Dgemv (float32/float64 SpMV), CuPy
``cusparse``        cuSPARSE CSR SpMV/SpMM (CuPy for float32/64, torch for float16)
``cusparse_coo``    cuSPARSE COO SpMV (CuPy, float32/64)
``cusparse_sell``   cuSPARSE sliced ELL (slices of 32) SpMV through ctypes (float16/32/64)
``numba_dense``     spmvlab's numba dense GEMV
``generalsparse``   GeneralSparse's generated SpMM kernel, the strategy its fitted cost model
                    predicts fastest for (matrix, N), nothing timed
                    (``spmvlab.generalsparse.search.model_ranking``)
``generalsparse_fixed``  GeneralSparse's one fixed kernel for every matrix (the first of
                    ``spmvlab.generalsparse.shortlist.default_shortlist(N)``)
``generalsparse_best``  GeneralSparse with the search (``spmvlab.generalsparse.search.best_strategy``)
``generalsparse_anchored``  the same search with our SpMM formats (:data:`ANCHOR_FORMATS`)
                    timed beside its pick on the whole matrix; the fastest of all runs
``<format>``        a registered format's kernel with its default config
``<method>``        a named setting of a format's registry entry (``FormatInfo.methods``,
                    e.g. ``csr_vector``, ``csr_scalar``)
``<format>[k=v,...]``  a format with config fields and/or encode options, e.g.
                    ``macko[threads_per_block=256,prefetch=0]`` or ``macko[delta_bits=8]``

or pass a :class:`MethodSpec` (``format_method(...)`` names an ad hoc setting;
``generalsparse_method(strategy, ...)`` one strategy of the GeneralSparse space).

:func:`measure` checks every method on the GPU (:mod:`spmvlab.check`: NaN or Inf where the
exact product is finite fails) and times it (:func:`spmvlab.bench.time_fn`), one results row
per method; see :data:`ROW_KEYS` for the schema every results file shares.
"""
from __future__ import annotations

import ast
import dataclasses
import gc
import re
from typing import Callable, Iterable, Mapping

from reference._common import OptionError, problem

from .. import formats
from .base import Method, Problem

__all__ = ["Method", "Problem", "MethodSpec", "format_method", "generalsparse_method", "resolve",
           "names", "build", "ANCHOR_FORMATS",
           "measure", "measure_problem", "release", "ROW_KEYS", "SPEEDUP_BASES"]

#: the keys of a results row, in order (``error`` replaces the check and timing keys when a
#: method could not be built or run; experiments add their own keys, e.g. ``sparsity``, first)
ROW_KEYS = ("method", "impl", "kind", "k", "dtype", "shape", "nnz", "check_passed",
            "max_rel_err", "n_bad", "median_us", "p10_us", "p90_us", "mean_us", "reps", "cold",
            "flush", "bytes", "format_bytes", "tb_s")
#: every row gets ``speedup_vs_<base>`` = median_us(base) / median_us(method) for these
#: bases when they are measured in the same call
SPEEDUP_BASES = ("cublas", "cusparse")


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """A named way to compute ``A @ X``: ``build(problem) -> Method``."""

    name: str
    build: Callable[[Problem], Method] = dataclasses.field(repr=False)
    kinds: tuple = ("spmv", "spmm")
    doc: str = ""


def _vendor_specs() -> dict[str, MethodSpec]:
    from . import cusparse_sell, ours, vendor
    return {
        "cublas": MethodSpec("cublas", vendor.Cublas, doc="cuBLAS GemmEx on the dense matrix"),
        "cublas_sgemv": MethodSpec("cublas_sgemv", vendor.CublasGemv, ("spmv",),
                                   "cublasSgemv/Dgemv (float32/float64)"),
        "cusparse": MethodSpec("cusparse", vendor.CusparseCSR, doc="cuSPARSE CSR"),
        "cusparse_coo": MethodSpec("cusparse_coo", vendor.CusparseCOO, ("spmv",), "cuSPARSE COO"),
        "cusparse_sell": MethodSpec("cusparse_sell", cusparse_sell.CusparseSell, ("spmv",),
                                    "cuSPARSE sliced ELL (32-row slices) through ctypes"),
        "numba_dense": MethodSpec("numba_dense", ours.NumbaDense, ("spmv",), "numba dense GEMV"),
        "generalsparse": generalsparse_method("default", "generalsparse"),
        "generalsparse_fixed": generalsparse_method("fixed", "generalsparse_fixed"),
        "generalsparse_best": generalsparse_method("best", "generalsparse_best"),
        "generalsparse_anchored": generalsparse_method("best", "generalsparse_anchored",
                                                       search={"formats": ANCHOR_FORMATS}),
    }


#: our SpMM formats that ``generalsparse_anchored``'s search times beside its own kernel
ANCHOR_FORMATS = ("split24", "macko", "csr_vector")


def generalsparse_method(strategy="default", name: str | None = None, optimize: bool = True,
                         search: Mapping | None = None) -> MethodSpec:
    """GeneralSparse's generated kernel for ``strategy`` (a ``reference.generalsparse.Strategy``,
    "default", "fixed" or "best"), named ``name``; ``optimize=False`` loads every offset (code
    optimizer off); ``search``: keyword arguments of
    ``spmvlab.generalsparse.search.best_strategy``."""

    def build_gs(p):
        from ..generalsparse.method import GeneralSparse
        return GeneralSparse(p, strategy, optimize=optimize, search=dict(search or {}))

    label = strategy if isinstance(strategy, str) else strategy.label
    return MethodSpec(name or f"generalsparse<{label}>", build_gs, ("spmm",),
                      f"GeneralSparse generated kernel, strategy {label}, "
                      f"{'code optimizer on' if optimize else 'offsets loaded'}")


def format_method(fmt: str, name: str | None = None, config: Mapping | None = None,
                  options: Mapping | None = None, encoded: Callable | None = None) -> MethodSpec:
    """A format's kernel with config fields ``config`` and encode ``options``, named ``name``
    (default: the format's name). ``encoded(problem) -> matrix``: the problem's matrix already
    encoded (``options`` then only describe it), see :class:`.ours.FormatMethod`."""
    from .ours import FormatMethod
    info = formats.get(fmt)
    cfg, opts = dict(config or {}), dict(options or {})
    kinds = tuple(k for k in ("spmv", "spmm") if k in info.capabilities)
    return MethodSpec(name or fmt, lambda p: FormatMethod(p, fmt, name or fmt, cfg, opts, encoded), kinds,
                      f"{fmt} kernel, config {cfg or 'default'}, options {opts or 'default'}")


_BRACKET = re.compile(r"^(?P<fmt>\w+)\[(?P<body>.*)\]$")


def _parse_bracket(name: str) -> MethodSpec:
    m = _BRACKET.match(name)
    info = formats.get(m.group("fmt"))
    config, options = {}, {}
    for part in filter(None, (s.strip() for s in m.group("body").split(","))):
        key, sep, text = part.partition("=")
        try:
            value = ast.literal_eval(text.strip()) if sep else None
        except (ValueError, SyntaxError):
            value = text.strip()
        if not sep:
            raise OptionError(problem(f"method {name!r}", "key=value pairs", repr(part)))
        (options if key.strip() in info.options else config)[key.strip()] = value
    return format_method(info.name, name, config, options)


def names() -> list[str]:
    """Every method name :func:`resolve` knows (besides the ``fmt[k=v]`` form)."""
    out = list(_vendor_specs())
    for info in formats.kernel_formats():
        out += [info.name] + [m for m in info.methods if m != info.name]
    return out


def resolve(method: str | MethodSpec) -> MethodSpec:
    """The :class:`MethodSpec` for a name (see the module docstring) or the spec itself."""
    if isinstance(method, MethodSpec):
        return method
    vendor = _vendor_specs()
    if method in vendor:
        return vendor[method]
    if _BRACKET.match(method):
        return _parse_bracket(method)
    for info in formats.kernel_formats():
        if method in info.methods:
            return format_method(info.name, method, info.methods[method])
        if method == info.name:
            return format_method(info.name)
    raise OptionError(problem("method", f"one of {names()} or <format>[key=value,...]", repr(method)))


def build(method: str | MethodSpec, p: Problem) -> Method:
    """Build one method for problem ``p`` (uploads, encodes, allocates its output)."""
    spec = resolve(method)
    if p.kind not in spec.kinds:
        raise OptionError(problem(f"method {spec.name}", f"a {'/'.join(spec.kinds)} problem", p.kind))
    m = spec.build(p)
    m.name = spec.name
    return m


def _base_row(p: Problem, spec: MethodSpec, extra: Mapping | None) -> dict:
    return dict(extra or {}, method=spec.name, kind=p.kind, k=p.k, dtype=p.dtype.name,
                shape=list(p.shape), nnz=int(p.A.nnz))


def measure_problem(p: Problem, methods: Iterable, *, reps: int = 60, warmup: int = 10,
                    cold: bool = True, flush: str = "read", extra: Mapping | None = None,
                    keep_going: bool = False) -> list[dict]:
    """One row per method (schema :data:`ROW_KEYS`): build, check once on the GPU, time.

    A method that cannot be built for a missing backend or an unsupported dtype/kind gets a
    row with ``error`` instead of numbers; with ``keep_going`` any exception does (long
    runs), otherwise other exceptions propagate. A failed check is recorded
    (``check_passed`` False) and the method is still timed."""
    from ..bench import effective_bandwidth
    from ..errors import BackendUnavailable, SpmvlabError
    catch = (Exception,) if keep_going else (BackendUnavailable, SpmvlabError, MemoryError)
    rows = []
    for method in methods:
        spec = resolve(method)
        row = _base_row(p, spec, extra)
        try:
            m = build(spec, p)
            row["impl"] = m.impl
            row.update(getattr(m, "row_extra", None) or {})
            chk = m.check()
            row.update(check_passed=chk.passed, max_rel_err=chk.max_rel_err, n_bad=chk.n_bad)
            if not chk.passed:
                row["first_bad"] = list(chk.worst)
            t = m.time(reps=reps, warmup=warmup, cold=cold, flush=flush)
            row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us, mean_us=t.mean_us,
                       reps=t.reps, redone=t.redone, cold=t.cold, flush=flush, bytes=m.nbytes,
                       format_bytes=int(m.format_bytes), tb_s=effective_bandwidth(m.nbytes, t.median_us))
        except catch as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
        m = None
        release()
    add_speedups(rows)
    return rows


def release(full_below: float = 0.5):
    """After a method is dropped: collect the young generations (cycles made while it was
    built and timed), and everything only when less than ``full_below`` of the device's
    memory is free. A full collection walks every Python object, about a million once numba
    has compiled a few kernels, so one per method was the fixed cost of every matrix in a
    sweep; the device buffers a method holds outside cycles go with its last reference."""
    gc.collect(1)
    try:
        from .._cuda import cuda
        free, total = cuda.current_context().get_memory_info()
    except Exception:                       # noqa: BLE001 - no device information: collect
        free, total = 0, 1
    if free < full_below * total:
        gc.collect()


def add_speedups(rows: list[dict], keys: Iterable[str] = ()) -> list[dict]:
    """``speedup_vs_<base>`` on every timed row, for each base of :data:`SPEEDUP_BASES`
    timed among the rows with equal values of ``keys`` (and equal dtype, kind and k)."""
    group = tuple(keys) + ("dtype", "kind", "k", "shape")

    def key(r):
        return tuple(str(r.get(k)) for k in group)

    base = {(key(r), r["method"]): r["median_us"] for r in rows
            if r.get("median_us") and r["method"] in SPEEDUP_BASES}
    for r in rows:
        for b in SPEEDUP_BASES:
            t = base.get((key(r), b))
            if t and r.get("median_us"):
                r[f"speedup_vs_{b}"] = t / r["median_us"]
    return rows


def measure(A, dtype, methods: Iterable, *, k: int | None = None, seed: int = 1, X=None,
            dist: str = "normal", lossy: bool = False, **kwargs) -> list[dict]:
    """:func:`measure_problem` on ``Problem.make(A, dtype, k, seed, X, dist, lossy)``: SpMV
    when ``k`` is None, else SpMM with ``k`` right-hand sides."""
    return measure_problem(Problem.make(A, dtype, k=k, seed=seed, X=X, dist=dist, lossy=lossy),
                           methods, **kwargs)
