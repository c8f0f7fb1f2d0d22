"""Shared parts of the GeneralSparse experiments (``*_gs.py``): the OPT-30B/66B weight
shapes, seeded synthetic weights at those shapes with the row and column scales of a real
layer, pruning (magnitude, random, blocks), the measurement loop over weight matrices, and
small helpers for the derived tables. Not an experiment itself (no ``NAME``).

Weights: ``opt_weights(shape, seed)`` draws N(0, 1) values (``datasets.gaussian_weights``)
and multiplies row i by a row scale and column j by a column scale drawn (seeded, with
replacement) from the per-row and per-column RMS of the real layer ``like`` in
``../shared/data/weights`` (mpnet FFN up, 3072 x 768), normalised to mean 1. Magnitude
pruning over the whole matrix (``per_row=False``, as the paper's magnitude pruning leaves
rows of unequal length) then keeps more entries in the rows and columns of large scale;
random pruning ignores them (nearly equal row lengths).
"""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

#: the OPT-30B (7168) and OPT-66B (9216) layer shapes of the paper's Fig. 14
OPT_SHAPES = [[7168, 7168], [28672, 7168], [7168, 28672], [9216, 9216], [36864, 9216], [9216, 36864]]
LIKE = "mpnet_L00_ffn_up"
#: the SuiteSparse matrices of ../shared/data/suitesparse (its README), by nonzeros
SUITESPARSE = ["Sandia/adder_dcop_05", "Gset/G51", "Bai/cryg2500", "MathWorks/Pd", "HB/bcspwr10",
               "HB/zenios", "DIMACS10/data", "Rajat/rajat01", "Arenas/PGPgiantcompo",
               "DIMACS10/fe_4elt2", "HB/bcsstk13", "DIMACS10/cs4", "Grund/bayer10", "DIMACS10/cti",
               "SNAP/as-caida20071105", "DIMACS10/de2010", "vanHeukelum/cage10", "DIMACS10/vt2010",
               "SNAP/ego-Facebook", "DIMACS10/nh2010", "DIMACS10/luxembourg_osm", "JGD_SPG/EX5",
               "DIMACS10/ct2010", "SNAP/email-Enron", "DIMACS10/delaunay_n16", "SNAP/cit-HepPh",
               "vanHeukelum/cage11", "SNAP/soc-Slashdot0902", "SNAP/ego-Twitter_undirected"]
GS_BEST = "generalsparse_best"


def _flags() -> dict:
    """The flags the GeneralSparse experiments take: name -> (argparse type, help)."""
    from spmvlab import experiment as X
    return dict(shapes=(X.shapes, "comma-separated RxC"), prunings=(X.words, "magnitude,random"),
                blocks=(X.shapes, "comma-separated block sizes, e.g. 1x1,4x4"),
                sparsities=(X.floats, "comma-separated fractions"), ns=(X.ints, "columns of B"),
                matrices=(X.words, "comma-separated SuiteSparse names"),
                weights=(X.words, "pruning:sparsity of the weight matrices"),
                suitesparse=(X.words, "SuiteSparse names"),
                methods=(X.words, "comma-separated method names, e.g. cublas,generalsparse"))


def config_for(name: str, full: dict, quick_changes: dict):
    """An experiment's ``config``: ``full`` (with ``quick_changes`` under ``--quick``) and
    the overrides given (``experiment.make_config``)."""
    from spmvlab import experiment as X

    def config(quick: bool = False, **overrides) -> dict:
        return X.make_config(name, full, quick_changes, quick, overrides)
    return config


def cli_for(*names: str, derived_from: str | None = None):
    """An experiment's ``cli``: the flags ``names`` (of :func:`_flags`), and for a table made
    from another experiment's rows ``--measure-anyway`` (its ``from_<experiment>`` False)."""
    def cli(p):
        flags = _flags()
        for n in names:
            kind, help_ = flags[n]
            p.add_argument(f"--{n}", type=kind, help=help_)
        if derived_from:
            p.add_argument("--measure-anyway", dest=f"from_{derived_from.split('_')[0]}",
                           action="store_const", const=False,
                           help=f"measure even when {derived_from} results exist")
    return cli


def derived_measure(derive, key: str, measurer, name: str):
    """The ``measure`` of a table made from another experiment's rows: ``derive(cfg)``'s rows
    where the saved results cover ``cfg``, else ``measurer`` run on ``cfg`` without ``key``."""
    def measure(cfg: dict) -> dict:
        got = derive(cfg)
        if got is not None:
            return got
        return dict(rows=measurer({k: v for k, v in cfg.items() if k != key}, name))
    return measure


def label_groups(ax, names: list, step: int, inner: int, y: float = -0.14, fontsize: float = 6):
    """Under the x axis, each group's name centred under its ``inner`` ticks (groups ``step``
    ticks apart): the shapes under the N or prunings of the TFLOP/s figures."""
    for i, name in enumerate(names):
        ax.text(i * step + (inner - 1) / 2, y, name, ha="center", va="top", fontsize=fontsize,
                transform=ax.get_xaxis_transform())


def finish_panels(axes, n_panels: int, ylabel: str = "TFLOP/s (2 nnz N / t)"):
    """The y label on the first column, the panels beyond ``n_panels`` hidden."""
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in axes.flat[n_panels:]:
        ax.set_visible(False)


def opt_weights(shape, seed: int = 0, like: str = LIKE) -> np.ndarray:
    """float32 (rows, cols) weights with the row/column scale spread of the real layer ``like``."""
    from spmvlab import datasets
    R = np.asarray(datasets.load_dense(like), dtype=np.float64)
    row = np.sqrt(np.mean(R ** 2, axis=1))
    col = np.sqrt(np.mean(R ** 2, axis=0))
    rng = np.random.default_rng([seed, 7])
    r = rng.choice(row / row.mean(), int(shape[0])).astype(np.float32)
    c = rng.choice(col / col.mean(), int(shape[1])).astype(np.float32)
    W = datasets.gaussian_weights(shape, dtype=np.float32, seed=seed)
    W *= r[:, None]
    W *= c[None, :]
    return W


def prune_blocks(W: np.ndarray, sparsity: float, method: str, block=(1, 1), seed: int = 0) -> np.ndarray:
    """``W`` with round(sparsity x blocks) of its (bh, bw) blocks zeroed (a new array):
    the blocks of smallest L2 norm (``"magnitude"``) or random ones, over the whole matrix.
    (1, 1) is element pruning (``datasets.prune(..., per_row=False)``)."""
    from spmvlab import datasets
    bh, bw = (int(b) for b in block)
    if (bh, bw) == (1, 1):
        return datasets.prune(W, sparsity, method, per_row=False, seed=seed)
    m, n = W.shape
    if m % bh or n % bw:
        raise ValueError(f"shape {W.shape} is not a multiple of the block {block}")
    scores = np.sqrt(np.square(W.reshape(m // bh, bh, n // bw, bw), dtype=np.float64).sum(axis=(1, 3)))
    if method == "random":
        scores = np.random.default_rng(seed).random(scores.shape) + 1.0
    keep = datasets.prune(scores, sparsity, "magnitude", per_row=False) != 0
    out = np.array(W, copy=True)
    out[~np.repeat(np.repeat(keep, bh, axis=0), bw, axis=1)] = 0
    return out


def to_csr16(W: np.ndarray) -> sp.csr_matrix:
    """CSR of W rounded to float16 (held in float32, the datasets convention), zeros dropped."""
    A = sp.csr_matrix(W.astype(np.float16).astype(np.float32))
    A.eliminate_zeros()
    A.sort_indices()
    return A


def case_matrix(case: str, seed: int = 0):
    """``"RxC:pruning:sparsity"`` (e.g. ``"9216x36864:random:0.9"``, the tools' notation) ->
    (shape, pruning, sparsity, A): the fig14 weights of that shape (:func:`opt_weights`,
    ``seed``) pruned over the whole matrix, as :func:`to_csr16`."""
    dims, pruning, sparsity = case.split(":")
    shape = tuple(int(v) for v in dims.split("x"))
    W = opt_weights(shape, seed)
    return shape, pruning, float(sparsity), to_csr16(prune_blocks(W, float(sparsity), pruning, seed=seed))


def weight_jobs(cfg: dict, blocks=((1, 1),)):
    """(shape, pruning, sparsity, block) of a weights experiment, shape-major (one dense
    draw per shape)."""
    return [(tuple(sh), pr, s, tuple(b)) for sh in cfg["shapes"] for pr in cfg["prunings"]
            for s in cfg["sparsities"] for b in blocks]


def method_list(cfg: dict) -> list:
    """cfg["methods"], with generalsparse_best carrying the configured search settings."""
    from spmvlab import methods
    out = []
    for m in cfg["methods"]:
        if m == GS_BEST:
            out.append(methods.generalsparse_method(
                "best", GS_BEST, search=dict(top=cfg["search_top"], max_nnz=cfg["proxy_nnz"])))
        else:
            out.append(m)
    return out


def _per_n(A, spec: dict, dense: bool, lossy: bool = False) -> list:
    """One Problem per N of ``spec["ns"]`` for ``A`` (X drawn as ``methods.measure`` draws
    it: seed 1), each with its reference product; the first one's dense copy (``dense``)
    and encodings (``spec["encode"]``) are built once and shared by all (``with_rhs``)."""
    from spmvlab.methods import Problem
    ns = [int(n) for n in spec["ns"]]
    p0 = Problem.make(A, spec["dtype"], k=ns[0], seed=1, lossy=lossy)
    if dense:
        p0.dense()
    for fmt in spec.get("encode", ()):
        p0.encoded(fmt)
    out = [p0] + [p0.with_rhs(n, seed=1) for n in ns[1:]]
    for p in out:
        p.reference()
    return out


_DRAWN: dict = {}      # this process's last dense draw: (shape, seed, like) -> weights


def build_weights(spec: dict, dense: bool = False) -> list:
    """The problems (one per N, :func:`_per_n`) of one weight matrix: ``opt_weights``
    (kept for the next job of the same shape in this process), ``prune_blocks``,
    ``to_csr16``. Module-level, so ``experiment.problems`` can run it in worker processes."""
    key = (tuple(spec["shape"]), int(spec["seed"]), spec.get("like", LIKE))
    if key not in _DRAWN:
        _DRAWN.clear()
        _DRAWN[key] = opt_weights(key[0], key[1], key[2])
    A = to_csr16(prune_blocks(_DRAWN[key], spec["sparsity"], spec["pruning"], spec["block"],
                              seed=spec["seed"]))
    return _per_n(A, spec, dense)


def build_suitesparse(spec: dict, dense: bool = False) -> list:
    """The problems (one per N, :func:`_per_n`, lossy casts accepted) of one SuiteSparse
    matrix, its values as stored in ``spec["dtype"]``."""
    from spmvlab import datasets
    A = datasets.suitesparse(spec["matrix"], dtype=spec["dtype"], download=False, lossy=True)
    return _per_n(A, spec, dense, lossy=True)


def _build_settings(cfg: dict) -> tuple[dict, bool]:
    """What every job of ``cfg`` builds besides the matrix: the N, the encodings and
    whether a dense copy is needed (cuBLAS, the numba dense GEMV)."""
    from spmvlab.workers import encodings_of
    common = dict(ns=[int(n) for n in cfg["ns"]], dtype=cfg["dtype"],
                  encode=encodings_of(cfg["methods"]))
    return common, any(m in ("cublas", "cublas_sgemv", "numba_dense") for m in cfg["methods"])


def measure_weights(cfg: dict, name: str, blocks=((1, 1),), workers: int | None = None) -> list:
    """Every weight matrix of ``cfg`` (shapes x prunings x sparsities x blocks) times every
    N in cfg["ns"] with cfg's methods; rows carry pruning, sparsity, block, matrix, n,
    tflops. Each matrix is built once (:func:`build_weights`, in ``experiment.problems``'
    worker processes ahead of its use while the previous one is timed; ``workers`` as
    there, default ``SPMVLAB_BUILD_WORKERS`` or a share of the cores), with one problem
    per N sharing its dense copy, encodings and GeneralSparse plans."""
    from spmvlab import experiment as X
    from spmvlab import methods
    common, dense = _build_settings(cfg)
    specs = [dict(common, shape=list(shape), pruning=pruning, sparsity=sparsity, block=list(block),
                  seed=cfg["seed"], like=cfg.get("like", LIKE))
             for shape, pruning, sparsity, block in weight_jobs(cfg, blocks)]
    rows = []
    built = X.problems(specs, dense=dense, workers=workers, builder=build_weights)
    try:
        for spec, probs in X.progress(built, total=len(specs), desc=name):
            pruning, sparsity, block = spec["pruning"], spec["sparsity"], tuple(spec["block"])
            label = _label(pruning, block)
            for n, p in zip(common["ns"], probs):
                got = methods.measure_problem(p, method_list(cfg), reps=cfg["reps"],
                                              warmup=cfg["warmup"], keep_going=True,
                                              extra=dict(pruning=pruning, sparsity=sparsity,
                                                         block=list(block), matrix=label, n=n))
                rows += [add_tflops(r) for r in got]
            probs = p = None
            X.checkpoint(dict(rows=rows))      # a run stopped by a time limit keeps these
    finally:
        built.close()          # stops the workers still building when stopped early
        _DRAWN.clear()         # the last dense draw, when built in this process
    return rows


def _label(pruning: str, block) -> str:
    """The rows' ``matrix`` label: the pruning, with the block shape when not (1, 1)."""
    return pruning if tuple(block) == (1, 1) else f"{pruning}{block[0]}x{block[1]}"


def measure_weights_per_n(cfg: dict, blocks=((1, 1),)) -> list:
    """The rows of :func:`measure_weights` the way it made them before it built each matrix
    once: one ``methods.measure`` per N, every method's encoding, plan and dense copy redone
    for each N (the oracle of its tests)."""
    from spmvlab import methods
    rows, dense = [], {}
    for shape, pruning, sparsity, block in weight_jobs(cfg, blocks):
        if shape not in dense:            # one dense draw per shape (jobs are shape-major)
            dense.clear()
            dense[shape] = opt_weights(shape, cfg["seed"], cfg.get("like", LIKE))
        A = to_csr16(prune_blocks(dense[shape], sparsity, pruning, block, seed=cfg["seed"]))
        for n in cfg["ns"]:
            got = methods.measure(A, cfg["dtype"], method_list(cfg), k=int(n), reps=cfg["reps"],
                                  warmup=cfg["warmup"], keep_going=True,
                                  extra=dict(pruning=pruning, sparsity=sparsity, block=list(block),
                                             matrix=_label(pruning, block), n=int(n)))
            rows += [add_tflops(r) for r in got]
    return rows


def measure_suitesparse(cfg: dict, name: str, workers: int | None = None) -> list:
    """Every SuiteSparse matrix of cfg["matrices"] (values as stored, cfg["dtype"]) times every
    N in cfg["ns"]; rows carry matrix, n, tflops. Each matrix is loaded once
    (:func:`build_suitesparse`, ahead of use in worker processes as in
    :func:`measure_weights`)."""
    from spmvlab import experiment as X
    from spmvlab import methods
    common, dense = _build_settings(cfg)
    specs = [dict(common, matrix=mat) for mat in cfg["matrices"]]
    rows = []
    built = X.problems(specs, dense=dense, workers=workers, builder=build_suitesparse)
    try:
        for spec, probs in X.progress(built, total=len(specs), desc=name):
            for n, p in zip(common["ns"], probs):
                got = methods.measure_problem(p, method_list(cfg), reps=cfg["reps"],
                                              warmup=cfg["warmup"], keep_going=True,
                                              extra=dict(matrix=spec["matrix"], n=n))
                rows += [add_tflops(r) for r in got]
            probs = p = None
            X.checkpoint(dict(rows=rows))
    finally:
        built.close()
    return rows


def add_tflops(r: dict) -> dict:
    if r.get("median_us"):
        r["tflops"] = 2.0 * r["nnz"] * r["k"] / (r["median_us"] * 1e-6) / 1e12
    return r


def saved_rows(name: str, device: str | None = None):
    """(rows, results) of ``device``'s saved results of experiment ``name`` (default: this
    machine's device); (None, None) when absent."""
    from spmvlab import experiment as X
    from spmvlab import runinfo
    dev = device or runinfo.device_slug(runinfo.device_info())
    path = X.results_path(name, dev)
    if not os.path.isfile(path):
        return None, None
    res = X.load_results(path)
    return res["rows"], res


def speedup(rows, method: str, base: str, keys, checked: bool = True) -> list:
    """(key values, base_us / method_us) for every group of ``keys`` timed for both (with
    ``checked``, only results that passed the correctness check; else every timed one)."""
    t = {}
    for r in rows:
        if r.get("median_us") and (not checked or r.get("check_passed", True) is not False):
            t[(tuple(str(r.get(k)) for k in keys), r["method"])] = r["median_us"]
    out = []
    for (k, m), us in t.items():
        if m == method and (k, base) in t:
            out.append((k, t[(k, base)] / us))
    return out


def geomean(xs) -> float:
    xs = [x for x in xs if x and np.isfinite(x) and x > 0]
    return float(np.exp(np.mean(np.log(xs)))) if xs else float("nan")
