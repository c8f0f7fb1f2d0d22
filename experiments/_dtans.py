"""What the CSR-dtANS experiments share (no NAME: not an experiment): the matrix set (the local
SuiteSparse matrices and seeded synthetic ones), the paper's success tables, and reuse of a
sibling experiment's rows measured by the same code on the same device.

Synthetic matrices (:func:`synthetic_specs`, :func:`build`): families that cover both sides
of the paper's "nonzeros per row <= 10" split, each at target sizes ``2**e`` nonzeros, with
small value alphabets as the collection's integer and pattern matrices have (i.i.d. normal
values would be incompressible and say nothing about the index coding):

=============== ========================================== ========= ============
family          generator (``spmvlab.datasets``)            nnz/row   values
=============== ========================================== ========= ============
stencil5        ``stencil(nx, nx, 5)``                      ~5        laplacian
stencil9        ``stencil(nx, nx, 9)``                      ~9        laplacian
erdos_renyi5    ``erdos_renyi(n, 5)``                       ~5        pattern
barabasi10      ``barabasi_albert(n, 5)``                   ~10       pattern
power_law8      ``power_law(n, n, 8, alpha=2)``             8         int
watts20         ``watts_strogatz(n, 20, p=0.1)``            20        pattern
erdos_renyi20   ``erdos_renyi(n, 20)``                      ~20       pattern
banded17        ``banded(n, 8)``                            ~17       laplacian
power_law32     ``power_law(n, n, 32, alpha=2)``            32        int
uniform16       ``uniform((n, n), 1 - 16 / n)``             16        int
stencil27       ``stencil(nx, nx, 27, nz=nx)`` (3-D)        ~27       laplacian
=============== ========================================== ========= ============

Values: ``pattern`` all 1; ``laplacian`` -1 off the diagonal and the row's off-diagonal count
on it (a graph Laplacian: a handful of integers); ``int`` integers 1..16 with probability
proportional to ``2**-k`` (seeded). Sizes are targets: a stencil's grid side is rounded, a
graph's edge count is random.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import scipy.sparse as sp

#: family -> (nonzeros per row it aims at, value scheme)
FAMILIES = {
    "stencil5": (5, "laplacian"), "stencil9": (9, "laplacian"), "erdos_renyi5": (5, "pattern"),
    "barabasi10": (10, "pattern"), "power_law8": (8, "int"), "watts20": (20, "pattern"),
    "erdos_renyi20": (20, "pattern"), "banded17": (17, "laplacian"), "power_law32": (32, "int"),
    "uniform16": (16, "int"), "stencil27": (27, "laplacian"),
}


#: the families of the committed CPU runs (results/cpu/fig6_dtans.json and table1_dtans.json),
#: measured before stencil27 joined
COMMITTED_FAMILIES = ["stencil5", "stencil9", "erdos_renyi5", "barabasi10", "power_law8", "watts20",
                      "erdos_renyi20", "banded17", "power_law32", "uniform16"]


def synthetic_specs(families, log2_nnz, seed: int = 0) -> list[dict]:
    """One spec per family and target size ``2**e`` (e in ``log2_nnz``), seeds ``seed + i``."""
    out = []
    for i, (fam, e) in enumerate((f, e) for e in log2_nnz for f in families):
        per_row, values = FAMILIES[fam]
        out.append(dict(name=f"{fam}_2^{e}", family=fam, log2_nnz=int(e), per_row=per_row,
                        values=values, seed=int(seed) + i))
    return out


def _values(A: sp.csr_matrix, scheme: str, rng) -> sp.csr_matrix:
    A = A.astype(np.float64)
    if scheme == "pattern":
        A.data[:] = 1.0
    elif scheme == "laplacian":
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        diag = rows == A.indices
        off = np.diff(A.indptr) - np.bincount(rows[diag], minlength=A.shape[0])
        A.data[:] = -1.0
        A.data[diag] = off[rows[diag]].astype(np.float64)
        A.data[A.data == 0] = 1.0            # an isolated diagonal entry (no zero stored)
    elif scheme == "int":
        k = np.arange(1, 17)
        p = 2.0 ** -k
        A.data[:] = rng.choice(k, size=A.nnz, p=p / p.sum()).astype(np.float64)
    else:
        raise ValueError(scheme)
    return A


def build(spec: dict) -> sp.csr_matrix:
    """The float64 CSR matrix of a synthetic spec."""
    from spmvlab import datasets as ds
    fam, nnz, seed = spec["family"], 2 ** spec["log2_nnz"], spec["seed"]
    per_row = FAMILIES[fam][0]
    n = max(2 * per_row + 2, int(round(nnz / per_row)))
    if fam in ("stencil5", "stencil9"):
        side = max(8, int(round(math.sqrt(nnz / per_row))))
        A = ds.stencil(side, side, points=per_row, dtype=np.float64, seed=seed)
    elif fam == "stencil27":                 # 3-D: a cube of side (nnz / 27)^(1/3)
        side = max(4, int(round((nnz / per_row) ** (1 / 3))))
        A = ds.stencil(side, side, points=per_row, dtype=np.float64, seed=seed, nz=side)
    elif fam.startswith("erdos_renyi"):
        A = ds.erdos_renyi(n, per_row, dtype=np.float64, seed=seed)
    elif fam == "barabasi10":
        A = ds.barabasi_albert(n, per_row / 2, dtype=np.float64, seed=seed)
    elif fam == "watts20":
        A = ds.watts_strogatz(max(n, 2 * per_row + 2), per_row, p=0.1, dtype=np.float64, seed=seed)
    elif fam == "banded17":
        A = ds.banded(n, (per_row - 1) // 2, dtype=np.float64, seed=seed)
    elif fam.startswith("power_law"):
        A = ds.power_law(n, n, per_row, alpha=2.0, dtype=np.float64, seed=seed)
    elif fam == "uniform16":
        A = ds.uniform((n, n), 1.0 - per_row / n, dtype=np.float64, seed=seed)
    else:
        raise ValueError(fam)
    return _values(A, spec["values"], np.random.default_rng(seed + 7919))


def real_matrices(names=None) -> list[str]:
    """The local SuiteSparse matrices (``names`` None: every one found)."""
    from spmvlab import datasets as ds
    return list(ds.suitesparse_names()) if names is None else list(names)


def load_real(name: str) -> sp.csr_matrix:
    from spmvlab import datasets as ds
    return ds.suitesparse(name, dtype=np.float64, download=False)


def matrices(cfg: dict):
    """Yield (name, source, spec-or-None, loader) of the configuration's matrices, real ones
    first (``cfg["real"]``: None for all local ones, [] for none; ``cfg["synthetic"]``: the
    families, ``cfg["log2_nnz"]``: their sizes)."""
    real = cfg.get("real")
    if real is None or real:
        try:
            names = real_matrices(real)
        except Exception as exc:             # no data directory: synthetic matrices only
            import sys
            print(f"SuiteSparse matrices unavailable ({exc}); synthetic only", file=sys.stderr)
            names = []
        for n in names:
            yield n, "suitesparse", None, (lambda n=n: load_real(n))
    for spec in synthetic_specs(cfg["synthetic"], cfg["log2_nnz"], cfg["seed"]):
        yield spec["name"], "synthetic", spec, (lambda s=spec: build(s))


# ---- the paper's success tables ----------------------------------------------------------------

def cells(rows: list[dict], ok_key: str, edges: tuple, split: float = 10.0) -> list[dict]:
    """Table I/II/III cells: rows grouped by nonzeros per row (<= ``split`` or above) and
    total nonzeros (<= 2**edges[0], <= 2**edges[1], above), the count of rows whose
    ``ok_key`` is true out of the rows in the cell. Rows without ``ok_key`` are left out."""
    labels = [f"<= 2^{edges[0]}", f"<= 2^{edges[1]}", f"> 2^{edges[1]}"]
    out = []
    for lo_hi, test in ((f"<= {split:g}", lambda r: r["nnz_per_row"] <= split),
                        (f"> {split:g}", lambda r: r["nnz_per_row"] > split)):
        for j, lab in enumerate(labels):
            lo = -1 if j == 0 else 2 ** edges[j - 1]
            hi = 2 ** edges[j] if j < 2 else math.inf
            rs = [r for r in rows if ok_key in r and r[ok_key] is not None and test(r)
                  and lo < r["nnz"] <= hi]
            k = sum(bool(r[ok_key]) for r in rs)
            out.append(dict(nnz_per_row=lo_hi, nnz=lab, success=k, total=len(rs),
                            rate=(k / len(rs)) if rs else None))
    return out


def cell_text(c: dict) -> str:
    return f"{c['success']}/{c['total']}" + (f" = {c['rate']:.2f}" if c["total"] else "")


# ---- reuse of a sibling's measurement ------------------------------------------------------------

#: the experiment whose rows fig8_dtans, table2_dtans and table3_dtans are made from
SIBLING = "fig7_dtans"

#: config keys that do not change what a row measures (time limits, and how much a reuser may
#: measure itself): a sibling's rows are reused when the rest of the config agrees
#: settings that change no row of the paper's methods (``variants`` only adds rows of its own)
UNCOMPARED_KEYS = ("budget_s", "method_cap_s", "measure_missing_s", "variants")


def _compared(cfg: dict) -> dict:
    from spmvlab import experiment as X
    return {k: v for k, v in X.R._jsonable(cfg).items() if k not in UNCOMPARED_KEYS}


def _saved_runs(sibling: str, device: str):
    """(path, results) of ``device``'s saved runs of experiment ``sibling``: the full run's
    file, then the ``--quick`` one, those that exist."""
    from spmvlab import experiment as X
    for quick in (False, True):
        path = X.results_path(sibling, device, quick)
        if os.path.isfile(path):
            yield path, X.load_results(path)


def reuse_state(sibling: str, cfg: dict, needs_gpu: bool) -> tuple:
    """(saved results of experiment ``sibling`` on this machine's device, None) when they
    were measured with the same config (apart from :data:`UNCOMPARED_KEYS`) by the same
    committed code (same git hash, neither tree dirty) on the same device, else (None, why
    not). The full run's file is looked at, then the ``--quick`` one. Saved results may be
    partial (``"partial": true``: the sibling was stopped and kept what it had)."""
    from spmvlab import experiment as X
    from spmvlab import runinfo
    meta = runinfo.run_metadata()
    device = X.results_device(meta, needs_gpu)
    why = []
    for path, saved in _saved_runs(sibling, device):
        m = saved.get("meta") or {}
        checks = (
            (_compared(cfg) == _compared(saved.get("config") or {}), "another config"),
            (bool(meta.get("git_hash")) and m.get("git_hash") == meta.get("git_hash"),
             f"commit {str(m.get('git_hash'))[:10]}, this is {str(meta.get('git_hash'))[:10]}"),
            (m.get("git_dirty") is not True and meta.get("git_dirty") is not True,
             "a tree with uncommitted changes"),
            ((m.get("device") or {}).get("name") == (meta.get("device") or {}).get("name"),
             f"device {(m.get('device') or {}).get('name')}"),
        )
        bad = [text for ok, text in checks if not ok]
        if not bad:
            return saved, None
        why.append(f"{X.R.rel(path)}: {', '.join(bad)}")
    return None, ("; ".join(why) if why else
                  f"no {sibling} results for {device} (results/{device}/{sibling}.json)")


def reuse_rows(sibling: str, cfg: dict, needs_gpu: bool):
    """The saved results of :func:`reuse_state`, or None. Lets fig8/table2/table3 (and
    table1) take the rows fig7 (fig6) measured in the same session instead of measuring
    twice."""
    return reuse_state(sibling, cfg, needs_gpu)[0]


# ---- GPU timing (fig7/fig8/table2/table3, dtans_llm_speed) ------------------------------------

#: the cuSPARSE baselines, the paper's three: CSR and COO through CuPy, and SELL (slices of 32)
#: through a ctypes binding of the device's libcusparse (``spmvlab.methods.cusparse_sell``:
#: CuPy binds no ``cusparseCreateSlicedEll``). The fastest of those timed per matrix is the
#: baseline; a method that fails on a matrix (e.g. SELL where libcusparse lacks it) just drops
#: out of that matrix's choice, and the figures name the baselines the rows actually hold.
BASELINES = ("cusparse", "cusparse_coo", "cusparse_sell")
BASELINE_LABELS = {"cusparse": "CSR", "cusparse_coo": "COO", "cusparse_sell": "SELL"}
#: beyond the paper: CSR-dtANS with each row's first delta taken from its row index
#: (``first_delta="diagonal"``: banded and stencil rows stop escaping their first column) and
#: short rows packed several to a lane (``rows_per_lane="auto"``: only where x's gathers are
#: local and enough streams remain, ``reference.csr_dtans.choose_rows_per_lane``), timed beside
#: the paper's layout (the config's ``variants``) and reported apart; the figures and tables
#: stay the paper's layout. Its rows record the layout chosen (``stored_options``).
PACKED = "csr_dtans[first_delta=diagonal,rows_per_lane=auto]"


def baselines_timed(rows: list[dict], baselines=BASELINES) -> list[str]:
    """The baselines with at least one checked timing in ``rows``, in ``baselines`` order."""
    have = {r["method"] for r in rows if "median_us" in r and r.get("check_passed", True)}
    return [b for b in baselines if b in have]


def baselines_text(rows: list[dict] | None = None, timed: list[str] | None = None) -> str:
    """"CSR / COO / SELL" for the baselines timed in ``rows`` (or the names ``timed``), with
    those missing named."""
    timed = baselines_timed(rows or []) if timed is None else timed
    text = " / ".join(BASELINE_LABELS[b] for b in timed) or "none"
    missing = [BASELINE_LABELS[b] for b in BASELINES if b not in timed]
    return text + (f" (no {' / '.join(missing)} timing in this run)" if missing else "")


def matrices_gpu(cfg: dict):
    """The local matrices, then the ``large`` (family, log2 nnz) pairs of the config (the
    paper's > 2^25 column first, so a run cut short by ``budget_s`` keeps them), then every
    family at ``log2_nnz``."""
    real = cfg.get("real")
    if real is None or real:
        yield from matrices(dict(cfg, synthetic=[], log2_nnz=[]))
    for i, (fam, e) in enumerate(cfg.get("large") or []):
        spec = synthetic_specs([fam], [e], cfg["seed"] + 1000 + i)[0]
        yield spec["name"], "synthetic", spec, (lambda s=spec: build(s))
    yield from matrices(dict(cfg, real=[]))


def time_matrix(A, dtype, names, *, reps: int, warmup: int, caches=("warm", "cold"),
                extra=None, seed: int = 1, method_cap_s: float | None = None,
                log=None, deadline: float | None = None, skipped: list | None = None,
                into: list | None = None) -> list[dict]:
    """Build each method once for ``A`` in ``dtype`` (SpMV, x standard normal with ``seed``),
    check it once on the GPU, then time it warm (no flush) and/or cold (L2 read-flushed
    before every call): one row per method and cache state, the schema of
    ``spmvlab.methods.ROW_KEYS`` plus ``cache`` and where the wall time went: ``problem_s``
    (the problem in this dtype: x and the float64 product, shared by the methods),
    ``build_s``, ``check_s`` and ``time_s`` (this cache state's timed calls, probe included in
    the first). A method that fails gets a row with ``error`` (the run goes on).

    ``method_cap_s``: when one call (timed once first) times ``warmup + reps`` would pass it,
    the method runs ``cap_reps`` = max(3, what fits) timed calls after one warm-up instead
    (the row's ``reps`` says how many; ``reps_capped`` is set). ``log(text)``: one line per
    method with its build, check and timing seconds. ``deadline`` (a ``time.perf_counter()``
    value): methods not begun by then are not built; "<matrix> <dtype> <method>" goes to
    ``skipped``. ``into``: a list the rows are appended to as they are made (so a caller
    stopped by a signal keeps the rows of the methods done)."""
    import time

    from spmvlab import methods
    from spmvlab.bench import effective_bandwidth
    t_p = time.perf_counter()
    p = methods.Problem.make(A, dtype, seed=seed, lossy=True)
    problem_s = time.perf_counter() - t_p
    rows = [] if into is None else into
    first = len(rows)
    for name in names:
        if deadline is not None and time.perf_counter() > deadline:
            what = f"{(extra or {}).get('matrix', '')} {p.dtype.name} {name}".strip()
            if skipped is not None:
                skipped.append(what)
            if log:
                log(f"{what}: skipped (time budget)")
            continue
        spec = methods.resolve(name)
        base = dict(extra or {}, method=spec.name, kind=p.kind, k=p.k, dtype=p.dtype.name,
                    shape=list(p.shape), nnz=int(p.A.nnz))
        m = None
        try:
            t0 = time.perf_counter()
            m = methods.build(spec, p)
            build_s = time.perf_counter() - t0
            chk = m.check()
            check_s = time.perf_counter() - t0 - build_s
            n, w, capped = reps, warmup, False
            t1 = time.perf_counter()
            if method_cap_s:
                one = m.time(reps=1, warmup=0, cold=False).median_us * 1e-6
                if one * (reps + warmup) * len(caches) > method_cap_s:
                    n, w, capped = max(3, int(method_cap_s / len(caches) / max(one, 1e-9)) - 1), 1, True
                    base["reps_capped"] = True
            for cache in caches:
                t = m.time(reps=n, warmup=w, cold=cache == "cold", flush="read")
                time_s, t1 = time.perf_counter() - t1, time.perf_counter()
                rows.append(dict(base, cache=cache, impl=m.impl, check_passed=chk.passed,
                                 max_rel_err=chk.max_rel_err, n_bad=chk.n_bad,
                                 median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us,
                                 mean_us=t.mean_us, reps=t.reps, cold=t.cold, flush="read",
                                 bytes=m.nbytes, format_bytes=int(m.format_bytes),
                                 **({"stored_options": m.stored_options}
                                    if getattr(m, "stored_options", None) else {}),
                                 tb_s=effective_bandwidth(m.nbytes, t.median_us),
                                 problem_s=problem_s, build_s=build_s, check_s=check_s,
                                 time_s=time_s))
            if log:
                log(f"{base.get('matrix', '')} {p.dtype.name} {spec.name}: build {build_s:.1f} s, check "
                    f"{check_s:.1f} s, timing {time.perf_counter() - t0 - build_s - check_s:.1f} s"
                    + (f" ({n} reps, capped)" if capped else ""))
        except Exception as exc:                 # noqa: BLE001 - recorded, the sweep goes on
            rows.append(dict(base, error=f"{type(exc).__name__}: {exc}"))
            if log:
                log(f"{base.get('matrix', '')} {p.dtype.name} {spec.name}: {type(exc).__name__}")
        if m is not None:
            m.close()
        m = None
        methods.release()
    return rows[first:]


def pairs(rows: list[dict], cache: str, ours: str = "csr_dtans", baselines=BASELINES) -> list[dict]:
    """Per (matrix, dtype) at ``cache``: CSR-dtANS against the fastest baseline: ``speedup``
    (baseline time / ours), ``size_ratio`` (our bytes / that baseline's bytes), ``baseline``
    (its name), ``fits_l2`` (the baseline's bytes below ``l2_bytes`` when rows carry it)."""
    groups: dict = {}
    for r in rows:
        if r.get("cache") == cache and "median_us" in r and r.get("check_passed", True):
            groups.setdefault((r["matrix"], r["dtype"]), {})[r["method"]] = r
    out = []
    for (mat, dt), g in groups.items():
        b = [g[n] for n in baselines if n in g]
        if ours not in g or not b:
            continue
        fast = min(b, key=lambda r: r["median_us"])
        o = g[ours]
        out.append(dict(matrix=mat, dtype=dt, cache=cache, source=o.get("source"),
                        family=o.get("family"), nnz=o["nnz"],
                        nnz_per_row=o["nnz"] / max(o["shape"][0], 1), baseline=fast["method"],
                        baseline_us=fast["median_us"], dtans_us=o["median_us"],
                        speedup=fast["median_us"] / o["median_us"],
                        size_ratio=o["format_bytes"] / fast["format_bytes"],
                        baseline_bytes=fast["format_bytes"], dtans_bytes=o["format_bytes"],
                        faster=bool(o["median_us"] < fast["median_us"]),
                        symbols_per_s=2 * o["nnz"] / (o["median_us"] * 1e-6),
                        dtans_tb_s=o.get("tb_s"), baseline_tb_s=fast.get("tb_s")))
    return out


def scatter(ax, prs: list[dict], title: str, l2_bytes=None):
    """Fig. 7/8 panel: relative runtime against relative size, coloured by nonzeros per row;
    matrices whose fastest baseline does not fit in L2 drawn larger with a black edge. The
    ratio axes and the legend are the caller's (:func:`plot_speed`)."""
    import matplotlib.colors as mcolors
    norm = mcolors.LogNorm(vmin=1, vmax=64)
    sc = None
    for source, marker in (("suitesparse", "o"), ("synthetic", "^")):
        ss = [r for r in prs if r["source"] == source]
        if not ss:
            continue
        big = [bool(l2_bytes) and r["baseline_bytes"] > l2_bytes for r in ss]
        sc = ax.scatter([r["size_ratio"] for r in ss], [1 / r["speedup"] for r in ss],
                        c=[max(r["nnz_per_row"], 1) for r in ss], cmap="plasma", norm=norm,
                        marker=marker, s=[30 if b else 14 for b in big], zorder=3,
                        edgecolors=["k" if b else "none" for b in big], linewidths=0.6)
    xs = np.geomspace(0.05, 3, 10)
    ax.plot(xs, xs, "k:", lw=0.8, zorder=2)
    ax.set(xlabel="CSR-dtANS bytes / fastest\ncuSPARSE format's bytes", title=title)
    n_fast = sum(r["faster"] for r in prs)
    ax.text(0.03, 0.97, f"{n_fast} of {len(prs)} faster", transform=ax.transAxes, fontsize=7,
            va="top")
    return sc


#: the GPU experiments' settings (fig7/fig8/table2/table3 share them, so one measurement
#: serves all four): the local matrices; four families at 2^24, eight at 2^26 and banded17 at
#: 2^27 (the paper's > 2^25 column); every family at 2^22. ``budget_s``: matrices, value
#: types and methods not begun after that many seconds (and matrices expected to end after
#: it) are skipped (listed in ``skipped``), so a slow host still saves; ``method_cap_s``: a
#: method whose ``warmup + reps`` calls in both cache states would take longer runs fewer
#: reps (at least 3; ``reps_capped``); ``measure_missing_s``: seconds fig8/table2/table3 may
#: spend measuring what fig7's saved rows miss (0: none, they use fig7's rows as they are).
GPU_FULL = dict(real=None, synthetic=list(FAMILIES), log2_nnz=[22],
                large=[["stencil5", 26], ["banded17", 26], ["watts20", 26], ["erdos_renyi20", 26],
                       ["stencil9", 26], ["stencil27", 26], ["erdos_renyi5", 26],
                       ["power_law8", 26], ["banded17", 27], ["stencil5", 24], ["banded17", 24], ["watts20", 24],
                       ["uniform16", 24]],
                dtypes=["float64", "float32"], methods=[*BASELINES, "csr_dtans"],
                caches=["warm", "cold"], reps=20, warmup=3, budget_s=530, method_cap_s=5.0,
                measure_missing_s=0.0, seed=0, variants=[PACKED])
GPU_QUICK = dict(real=["HB/bcsstk13", "SNAP/ego-Facebook"], synthetic=["stencil5", "watts20"],
                 log2_nnz=[16, 20], large=[], reps=5, budget_s=120, measure_missing_s=120.0)
#: Tables II and III: nnz columns <= 2^20, <= 2^25, > 2^25
GPU_EDGES = (20, 25)


#: seconds per nonzero and value type a matrix is expected to take (generation, encoding,
#: SELL layout, uploads, checks and timing), until the run has measured a matrix of >= 2^20
#: nonzeros (then :func:`expected_s_per_nnz`). A rough prior, per target nonzero: the host
#: work (generation, encoding, SELL layout) dominates a matrix's time.
PRIOR_S_PER_NNZ = 0.5e-6


def expected_s_per_nnz(rates: list[tuple[int, float]]) -> float:
    """Seconds per nonzero and value type the next synthetic matrix is expected to take, from
    the (nonzeros, seconds per nonzero and value type) of the matrices of >= 2^20 nonzeros
    measured so far: the median over those of at least half the largest one's nonzeros
    (small matrices' fixed costs would overstate it, and a matrix that first needs a
    kernel compiled, such as the first packed one, would charge that to every later one if
    it stood alone); :data:`PRIOR_S_PER_NNZ` before any."""
    if not rates:
        return PRIOR_S_PER_NNZ
    top = max(n for n, _ in rates)
    return float(np.median([r for n, r in rates if 2 * n >= top]))


def missing(cfg: dict, rows: list[dict]) -> dict:
    """{matrix: {dtype: [methods]}} of the config's (matrix, dtype, method) with no row in
    ``rows`` (a timing or an error): what a run stopped early left out."""
    have = {(r.get("matrix"), r.get("dtype"), r.get("method")) for r in rows}
    out: dict = {}
    for name, _, _, _ in matrices_gpu(cfg):
        for dt in cfg["dtypes"]:
            ms = [m for m in cfg["methods"] if (name, dt, m) not in have]
            if ms:
                out.setdefault(name, {})[dt] = ms
    return out


def measure_gpu(cfg: dict, desc: str, only: dict | None = None, checkpoint=None) -> dict:
    """Every matrix of ``cfg`` in every dtype through :func:`time_matrix` (``only``: just the
    {matrix: {dtype: [methods]}} given, :func:`missing`); extras: the device's copy
    bandwidth and L2 size, the wall seconds of each matrix (``matrix_seconds``; of them its
    generation or reading, ``load_seconds``; the rest by row: :func:`time_matrix`), the
    matrices done (``done``) and what was skipped for ``budget_s`` (``skipped``: a matrix
    not begun, "<matrix> <dtype>" or "<matrix> <dtype> <method>").

    Bounds: no matrix is begun after ``budget_s``, nor one expected to end after it (its
    target nonzeros times :func:`expected_s_per_nnz` of the matrices measured so far); no
    value type or method is begun after it. The results are saved after every matrix
    (:func:`spmvlab.experiment.checkpoint`); stopped by a signal (SIGTERM from
    ``timeout``) or Ctrl-C, the rows so far (the current matrix's methods done included)
    are saved with ``stopped``, then the stop goes on. ``checkpoint``: what saves them
    (default :func:`spmvlab.experiment.checkpoint`; the reusers, whose rows are not timing
    rows, pass one that does nothing)."""
    import time

    from spmvlab import bench, runinfo
    from spmvlab import experiment as X
    save = X.checkpoint if checkpoint is None else checkpoint
    jobs = [j for j in matrices_gpu(cfg) if only is None or j[0] in only]
    rows, seconds, skipped, done = [], {}, [], []
    info = runinfo.device_info()
    loads = {}
    extras = dict(copy_bandwidth=bench.copy_bandwidth(), l2_bytes=info.get("l2_bytes"),
                  matrix_seconds=seconds, load_seconds=loads, skipped=skipped, done=done)
    start = time.perf_counter()
    budget = cfg.get("budget_s")
    deadline = start + budget if budget else None
    rates = []

    def log(text):
        print(f"  [{time.perf_counter() - start:.0f} s] {text}", file=sys.stderr, flush=True)

    def left():
        return math.inf if deadline is None else deadline - time.perf_counter()

    current, inflight = None, []
    try:
        for name, source, spec, load in X.progress(jobs, total=len(jobs), desc=desc):
            t0 = time.perf_counter()
            dtypes = list((only or {}).get(name) or cfg["dtypes"])
            if left() <= 0:
                skipped.append(name)
                continue
            if spec is not None:
                rate = expected_s_per_nnz(rates)
                est = rate * 2 ** spec["log2_nnz"] * len(dtypes)
                if est > left():
                    skipped.append(name)
                    log(f"{name}: skipped, expected to take ~{est:.0f} s with {left():.0f} s of the "
                        f"budget left")
                    continue
            current = name
            A = load()
            loads[name] = time.perf_counter() - t0
            log(f"{name}: {A.shape[0]}x{A.shape[1]}, {A.nnz} nonzeros, loaded in {loads[name]:.1f} s")
            extra = dict(matrix=name, source=source, family=spec["family"] if spec else "suitesparse")
            for dt in dtypes:
                if left() <= 0:
                    skipped.append(f"{name} {dt}")
                    continue
                names = (only or {}).get(name, {}).get(dt) or [*cfg["methods"],
                                                                *cfg.get("variants", [])]
                inflight = []
                rows += time_matrix(A, dt, names, reps=cfg["reps"], warmup=cfg["warmup"],
                                    caches=cfg["caches"], extra=extra,
                                    method_cap_s=cfg.get("method_cap_s"), log=log,
                                    deadline=deadline, skipped=skipped, into=inflight)
                inflight = []
            seconds[name] = time.perf_counter() - t0
            if A.nnz >= 2 ** 20:
                rates.append((A.nnz, seconds[name] / (A.nnz * len(dtypes))))
            del A
            done.append(name)
            current = None
            save(dict(rows=rows, **extras))
    except KeyboardInterrupt as exc:         # SIGTERM (experiment.Stopped) or Ctrl-C
        extras["stopped"] = dict(reason=str(exc) or type(exc).__name__, matrix=current,
                                 after_s=round(time.perf_counter() - start, 1))
        tail = rows[len(rows) - len(inflight):] if inflight else []
        rows += [r for r in inflight if all(r is not q for q in tail)]   # the methods done
        log(f"stopped ({extras['stopped']['reason']}) in {current}: saving {len(rows)} rows")
        save(dict(rows=rows, **extras))
        raise
    return dict(rows=rows, **extras)


def gpu_cli(p, reuser: bool = False):
    """The GPU experiments' flags (config overrides): time limits, and for fig8/table2/table3
    how long they may measure what fig7's rows miss."""
    p.add_argument("--budget-s", type=float,
                   help="seconds after which no matrix, value type or method is begun (skipped ones "
                        "are listed under 'skipped')")
    p.add_argument("--method-cap-s", type=float,
                   help="seconds one method's timed calls (both cache states) may take before its "
                        "reps are cut (at least 3; 'reps_capped')")
    if reuser:
        p.add_argument("--measure-missing-s", type=float,
                       help="seconds this may spend measuring the matrices fig7_dtans's saved rows "
                            "miss, or all of them without reusable fig7 results (0: measure nothing, "
                            "fail at once without fig7 results)")


def gpu_results(cfg: dict, desc: str) -> dict:
    """fig7_dtans's saved rows when they are reusable (:func:`reuse_state`), plus what they
    miss (:func:`missing`: fig7 stopped early) measured here within ``measure_missing_s``
    seconds; ``rows_from`` says where the rows came from, ``rows_partial`` that fig7's file
    was partial, ``not_measured`` what is still missing. With ``measure_missing_s`` 0 (the
    full config's default) nothing is measured here: fig7's rows, partial or not, are used
    as they are, and without reusable fig7 results this raises :class:`OptionError` at once
    (run ``experiments/fig7_dtans.py`` first, or pass ``--measure-missing-s SECONDS``)."""
    from reference._common import OptionError, problem
    saved, why = reuse_state(SIBLING, cfg, True)
    rows = list(saved["rows"]) if saved is not None else []
    todo = missing(cfg, rows)
    allow = float(cfg.get("measure_missing_s") or 0)
    if saved is None and not allow:
        raise OptionError(problem(
            f"{desc}: fig7_dtans's rows", "results/<this device>/fig7_dtans.json of this commit, "
            "config and GPU", why, "run experiments/fig7_dtans.py first (fig8/table2/table3 reuse "
            "its rows), or pass --measure-missing-s SECONDS to measure here"))
    out = {} if saved is None else _from_saved(saved, "fig7_dtans.json of this device")
    if todo and allow:
        new = measure_gpu(dict(cfg, budget_s=min(allow, cfg.get("budget_s") or allow)), desc,
                          only=todo if saved is not None else None, checkpoint=lambda res: None)
        rows += new.pop("rows")
        if saved is None:
            out.update(new, rows_from="measured here")
        else:
            out["rows_from"] += f" + {len(new['done'])} matrices measured here"
            out["measured_here"] = new["done"]
            for k in ("copy_bandwidth", "l2_bytes"):
                out[k] = out[k] or new[k]
        todo = missing(cfg, rows)
    if todo:
        out["not_measured"] = _not_measured(todo)
    return dict(out, rows=rows)


def _not_measured(todo: dict) -> list[str]:
    """"<matrix> <dtype>" of each pair :func:`missing` lists."""
    return sorted(f"{m} {dt}" for m, d in todo.items() for dt in d)


def _from_saved(saved: dict, where: str) -> dict:
    """What a reuser keeps of fig7_dtans's saved results besides the rows, and where they
    came from (``rows_from``, the commit and date that measured them)."""
    keep = ("copy_bandwidth", "l2_bytes", "matrix_seconds", "load_seconds", "skipped")
    out = {k: saved.get(k) for k in keep}
    out.update(rows_from=where, rows_git_hash=saved["meta"]["git_hash"],
               rows_date=saved["meta"]["date_utc"])
    if saved.get("partial"):
        out["rows_partial"] = True
    return out


def reuser(name: str, finish):
    """``(measure, derive)`` of an experiment made from fig7_dtans's rows; ``finish(res,
    cfg)`` turns fig7's rows (``res["rows"]``, with :func:`_from_saved`'s extras) into this
    experiment's results. ``measure`` runs on a GPU (:func:`gpu_results`: fig7's rows of this
    commit, or measured here); ``derive(cfg, device)`` runs on any machine
    (``experiment.derive_run``) from ``device``'s saved fig7_dtans results when their config
    agrees with ``cfg`` (apart from :data:`UNCOMPARED_KEYS`), whatever commit measured them:
    the results then carry that run's meta (its GPU, commit and date), so a figure or table
    changed after the measurement is remade without a GPU. None when no such results."""
    def measure(cfg: dict) -> dict:
        return finish(gpu_results(cfg, name), cfg)

    def derive(cfg: dict, device: str | None = None) -> dict | None:
        from spmvlab import runinfo
        dev = device or runinfo.device_slug(runinfo.device_info())
        for _, saved in _saved_runs(SIBLING, dev):
            if _compared(cfg) != _compared(saved.get("config") or {}):
                continue
            res = dict(_from_saved(saved, f"{SIBLING}.json of {dev}"), rows=list(saved["rows"]))
            todo = missing(cfg, res["rows"])
            if todo:
                res["not_measured"] = _not_measured(todo)
            return dict(finish(res, cfg), source=dict(experiment=SIBLING, meta=saved["meta"]))
        return None
    return measure, derive


def run_state(results: dict) -> list[str]:
    """Lines saying how complete a GPU run's results are: partial (stopped, with where),
    where the rows came from, what was skipped for the budget or is not measured, and the
    methods whose reps were cut (``reps_capped``)."""
    out = []
    if results.get("partial") or results.get("rows_partial"):
        st = results.get("stopped") or {}
        out.append("PARTIAL results: " + (f"stopped ({st.get('reason')}) in {st.get('matrix')} after "
                                          f"{st.get('after_s')} s; " if st else "")
                   + f"{len(results.get('done') or results.get('matrix_seconds') or [])} matrices done")
    if results.get("rows_from"):
        out.append(f"rows from {results['rows_from']}" + (" (partial)" if results.get("rows_partial") else ""))
    for key in ("skipped", "not_measured"):
        if results.get(key):
            vals = results[key]
            out.append(f"{key} ({len(vals)}): {', '.join(vals[:12])}{' ...' if len(vals) > 12 else ''}")
    capped = sorted({f"{r.get('matrix')} {r.get('dtype')} {r.get('method')} ({r.get('reps')} reps)"
                     for r in results.get("rows") or [] if r.get("reps_capped")})
    if capped:
        out.append(f"reps capped ({len(capped)}): {', '.join(capped[:12])}{' ...' if len(capped) > 12 else ''}")
    return out


def wall_split(results: dict) -> str | None:
    """One line: where a GPU run's wall seconds went (``matrix_seconds`` in all: loading or
    generating the matrices, the problems, the methods' builds, checks and timed calls, and
    the rest), from the rows' ``problem_s`` / ``build_s`` / ``check_s`` / ``time_s``; None
    for results without them (runs before they were recorded)."""
    rows = [r for r in results.get("rows") or [] if "time_s" in r]
    if not rows:
        return None
    once = {}
    for r in rows:                       # build and check: once per method (both cache rows)
        once[(r["matrix"], r["dtype"], r["method"])] = (r["problem_s"], r["build_s"], r["check_s"])
    problems = {(m, dt): v[0] for (m, dt, _), v in once.items()}
    parts = dict(loading=sum((results.get("load_seconds") or {}).values()),
                 problems=sum(problems.values()), builds=sum(v[1] for v in once.values()),
                 checks=sum(v[2] for v in once.values()), timing=sum(r["time_s"] for r in rows))
    total = sum((results.get("matrix_seconds") or {}).values())
    parts["other"] = total - sum(parts.values())
    return f"wall {total:.0f} s: " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())


def speed_cells(rows: list[dict], cache: str, dtypes) -> list[dict]:
    """Tables II/III: share of matrices where CSR-dtANS is faster than the fastest baseline."""
    out = []
    prs = pairs(rows, cache)
    for dt in dtypes:
        for src in ("all", "suitesparse", "synthetic"):
            ps = [p for p in prs if p["dtype"] == dt and (src == "all" or p["source"] == src)]
            for c in cells(ps, "faster", GPU_EDGES):
                out.append(dict(c, dtype=dt, cache=cache, source=src))
    return out


def speed_summary(rows: list[dict], cache: str, dtypes, ours: str = "csr_dtans") -> list[dict]:
    """Per dtype: the best speedup of ``ours`` and, for matrices > 2^25 nonzeros, how many
    are faster and the median speedup (the issue's goal: a majority, fp64 cold)."""
    out = []
    prs = pairs(rows, cache, ours)
    for dt in dtypes:
        ps = [p for p in prs if p["dtype"] == dt]
        if not ps:
            continue
        best = max(ps, key=lambda p: p["speedup"])
        big = [p for p in ps if p["nnz"] > 2 ** GPU_EDGES[1]]
        out.append(dict(dtype=dt, cache=cache, matrices=len(ps), faster=sum(p["faster"] for p in ps),
                        best_speedup=best["speedup"], best_matrix=best["matrix"],
                        large=len(big), large_faster=sum(p["faster"] for p in big),
                        large_median_speedup=float(np.median([p["speedup"] for p in big])) if big else None))
    return out


def summary_lines(results: dict, cache: str) -> list[str]:
    """The reports' summary: per dtype, the paper's layout and each of the config's
    ``variants`` whose rows the results hold, against the fastest baseline."""
    out = []
    for ours in ["csr_dtans", *(results["config"].get("variants") or [])]:
        for s in speed_summary(results["rows"], cache, results["config"]["dtypes"], ours):
            out.append(f"{cache} {s['dtype']} {ours}: {s['faster']}/{s['matrices']} faster, best "
                       f"{s['best_speedup']:.2f}x ({s['best_matrix']}); > 2^25 nnz: "
                       f"{s['large_faster']}/{s['large']} faster, median "
                       f"{s['large_median_speedup'] or float('nan'):.2f}x")
    return out


def plot_speed(results: dict, fig_path: str, cache: str, figure: str) -> list[str]:
    """Fig. 7 (warm) / Fig. 8 (cold): one panel per dtype, both on the same ratio axes."""
    from matplotlib.lines import Line2D

    from spmvlab import plotting as P
    plt = P.pyplot()
    dtypes = results["config"]["dtypes"]
    prs = pairs(results["rows"], cache)
    l2 = results.get("l2_bytes")
    fig, axes = plt.subplots(1, len(dtypes), figsize=(P.PAGE_WIDTH, 3.5), squeeze=False,
                             sharex=True, sharey=True)
    sc = None
    for ax, dt in zip(axes[0], dtypes):
        sc = scatter(ax, [p for p in prs if p["dtype"] == dt], f"{dt}, {cache} L2", l2) or sc
    P.ratio_axis(axes[0][0], [p["size_ratio"] for p in prs], axis="x")
    P.ratio_axis(axes[0][0], [1 / p["speedup"] for p in prs])
    for ax in axes[0][1:]:
        ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
        ax.axvline(1.0, color="black", lw=0.9, ls="--", zorder=1)
    axes[0][0].set_ylabel("CSR-dtANS time / fastest cuSPARSE time")
    n = {src: len({p["matrix"] for p in prs if p["source"] == src}) for src in ("suitesparse", "synthetic")}
    handles = [Line2D([], [], ls="none", marker="o", mfc="0.6", mec="none", ms=4,
                      label=f"SuiteSparse ({n['suitesparse']})"),
               Line2D([], [], ls="none", marker="^", mfc="0.6", mec="none", ms=4,
                      label=f"synthetic ({n['synthetic']})"),
               Line2D([], [], color="k", ls=":", lw=0.8, label="time ratio = size ratio")]
    if l2:
        handles.append(Line2D([], [], ls="none", marker="o", mfc="0.6", mec="k", mew=0.6, ms=5.5,
                              label=f"fastest format's bytes > L2 ({l2 / 2**20:.0f} MiB)"))
    fig.suptitle(f"dtANS paper {figure}: SpMV, CSR-dtANS vs the fastest of cuSPARSE "
                 f"{baselines_text(results['rows'])},\n{P.device_name(results)}; below 1x: faster")
    fig.tight_layout(rect=(0, 0.09, 0.9, 1))
    if sc is not None:
        bar = fig.colorbar(sc, cax=fig.add_axes((0.91, 0.25, 0.015, 0.6)),
                           label="average nonzeros per row")
        bar.set_ticks([1, 2, 4, 8, 16, 32, 64], labels=["1", "2", "4", "8", "16", "32", "64"])
        bar.ax.minorticks_off()
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.45, 0.0))
    return P.savefig(fig, fig_path, tight=False)


def plot_cells(results: dict, fig_path: str, title: str) -> list[str]:
    """Tables I-III drawn as text tables, one per dtype (rows ``cells`` of the results)."""
    from spmvlab import plotting as P
    plt = P.pyplot()
    rows = results["rows"]
    dtypes = results["config"]["dtypes"]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(P.PAGE_WIDTH, 2.2), squeeze=False,
                             gridspec_kw=dict(left=0.005, right=0.995, top=0.68, bottom=0.02,
                                              wspace=0.04))
    for ax, dt in zip(axes[0], dtypes):
        ax.axis("off")
        cs = [r for r in rows if r["dtype"] == dt]
        cols = list(dict.fromkeys(c["nnz"] for c in cs))
        body = [["\n".join(f"{s[:5]}: {cell_text(c)}" for s in ("all", "suitesparse", "synthetic")
                           for c in cs if c["source"] == s and c["nnz_per_row"] == pr and c["nnz"] == col)
                 for col in cols] for pr in ("<= 10", "> 10")]
        if cols:
            t = ax.table(cellText=body, rowLabels=["nnz/row\n<= 10", "nnz/row\n> 10"],
                         colLabels=[f"nnz {c}" for c in cols], cellLoc="center",
                         bbox=[0.13, 0.0, 0.87, 1.0])
            t.auto_set_font_size(False)
            t.set_fontsize(6.5)
            for (r_, _), cell in t.get_celld().items():
                cell.set_height(0.4 if r_ == 0 else 1.0)     # relative: the header one line
        ax.set_title(dt)
    fig.suptitle(f"{title}\n({P.device_name(results)}): successes/matrices, all, "
                 "SuiteSparse (suite) and synthetic (synth)")
    return P.savefig(fig, fig_path, tight=False)


# ---------------------------------------------------------------------------------------------
# the experiments that reuse fig7_dtans's rows (fig8_dtans, table2_dtans, table3_dtans)
# ---------------------------------------------------------------------------------------------

def reuser_config(name: str):
    """The ``config`` of an experiment made from fig7_dtans's rows: fig7_dtans's settings."""
    from spmvlab import experiment as X  # noqa: PLC0415

    def config(quick: bool = False, **overrides) -> dict:
        """fig7_dtans's settings."""
        return X.make_config(name, GPU_FULL, GPU_QUICK, quick, overrides)
    return config


def reuser_cli(p):
    """The flags of an experiment made from fig7_dtans's rows."""
    gpu_cli(p, reuser=True)


def speed_table(name: str, cache: str, table: str):
    """``(measure, plot, report, derive)`` of the paper's speed tables (Table II, warm L2; Table III,
    cold): the share of matrices on which CSR-dtANS SpMV is faster than the fastest cuSPARSE
    format, by total nonzeros and nonzeros per row, from fig7_dtans's ``cache`` rows."""
    from spmvlab import plotting as P  # noqa: PLC0415

    def finish(res: dict, cfg: dict) -> dict:
        timing = res.pop("rows")
        return dict(res, rows=speed_cells(timing, cache, cfg["dtypes"]),
                    summary=speed_summary(timing, cache, cfg["dtypes"]),
                    baselines=baselines_timed(timing), pairs=pairs(timing, cache))

    measure, derive = reuser(name, finish)

    def plot(results: dict, fig_path: str) -> list[str]:
        timed = results.get("baselines", ["cusparse", "cusparse_coo"])   # files before SELL: CSR/COO
        return plot_cells(results, fig_path, f"dtANS paper {table}: CSR-dtANS SpMV faster than "
                          f"the fastest of cuSPARSE {baselines_text(timed=timed)}, {cache} L2")

    def report(results: dict):
        for line in run_state(results):
            print(line)
        print(P.format_table([r for r in results["rows"] if r["source"] in ("all", "suitesparse")],
                             [("dtype", "dtype", ""), ("source", "source", ""),
                              ("nnz_per_row", "nnz/row", ""), ("nnz", "nnz", ""),
                              ("success", "faster", ""), ("total", "of", ""), ("rate", "rate", ".2f")]))
        for s in results.get("summary") or []:
            print(f"{s['dtype']}: best {s['best_speedup']:.2f}x ({s['best_matrix']}); > 2^25 nnz: "
                  f"{s['large_faster']}/{s['large']} faster")

    return measure, plot, report, derive
