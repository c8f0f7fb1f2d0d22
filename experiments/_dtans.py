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
    "uniform16": (16, "int"),
}


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

def reuse_rows(sibling: str, cfg: dict, needs_gpu: bool):
    """The saved results of experiment ``sibling`` on this machine's device when they were
    measured with the same config by the same committed code (same git hash, neither tree
    dirty) on the same device; else None. Lets fig8/table2/table3 (and table1) take the
    rows fig7 (fig6) measured in the same session instead of measuring twice."""
    from spmvlab import experiment as X
    from spmvlab import runinfo
    meta = runinfo.run_metadata()
    device = X.results_device(meta, needs_gpu)
    path = X.results_path(sibling, device)
    if not os.path.isfile(path):
        return None
    saved = X.load_results(path)
    m = saved.get("meta") or {}
    same = (X._jsonable(cfg) == saved.get("config") and m.get("git_hash") == meta.get("git_hash")
            and meta.get("git_hash") and m.get("git_dirty") is not True
            and meta.get("git_dirty") is not True
            and ((m.get("device") or {}).get("name") == (meta.get("device") or {}).get("name")))
    return saved if same else None


# ---- GPU timing (fig7/fig8/table2/table3, dtans_llm_speed) ------------------------------------

#: the cuSPARSE baselines, the paper's three: CSR and COO through CuPy, and SELL (slices of 32)
#: through a ctypes binding of the device's libcusparse (``spmvlab.methods.cusparse_sell``:
#: CuPy binds no ``cusparseCreateSlicedEll``). The fastest of those timed per matrix is the
#: baseline; a method that fails on a matrix (e.g. SELL where libcusparse lacks it) just drops
#: out of that matrix's choice, and the figures name the baselines the rows actually hold.
BASELINES = ("cusparse", "cusparse_coo", "cusparse_sell")
BASELINE_LABELS = {"cusparse": "CSR", "cusparse_coo": "COO", "cusparse_sell": "SELL"}


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
                log=None) -> list[dict]:
    """Build each method once for ``A`` in ``dtype`` (SpMV, x standard normal with ``seed``),
    check it once on the GPU, then time it warm (no flush) and/or cold (L2 read-flushed
    before every call): one row per method and cache state, the schema of
    ``spmvlab.methods.ROW_KEYS`` plus ``cache`` and ``build_s``. A method that fails gets a row
    with ``error`` (the run goes on).

    ``method_cap_s``: when one call (timed once first) times ``warmup + reps`` would pass it,
    the method runs ``cap_reps`` = max(3, what fits) timed calls after one warm-up instead
    (the row's ``reps`` says how many; ``reps_capped`` is set). ``log(text)``: one line per
    method with its build, check and timing seconds."""
    import gc
    import time

    from spmvlab import methods
    from spmvlab.bench import effective_bandwidth
    p = methods.Problem.make(A, dtype, seed=seed, lossy=True)
    rows = []
    for name in names:
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
            if method_cap_s:
                one = m.time(reps=1, warmup=0, cold=False).median_us * 1e-6
                if one * (reps + warmup) * len(caches) > method_cap_s:
                    n, w, capped = max(3, int(method_cap_s / len(caches) / max(one, 1e-9)) - 1), 1, True
                    base["reps_capped"] = True
            for cache in caches:
                t = m.time(reps=n, warmup=w, cold=cache == "cold", flush="read")
                rows.append(dict(base, cache=cache, impl=m.impl, check_passed=chk.passed,
                                 max_rel_err=chk.max_rel_err, n_bad=chk.n_bad,
                                 median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us,
                                 mean_us=t.mean_us, reps=t.reps, cold=t.cold, flush="read",
                                 bytes=m.nbytes, format_bytes=int(m.format_bytes),
                                 tb_s=effective_bandwidth(m.nbytes, t.median_us), build_s=build_s))
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
        gc.collect()
    return rows


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
    matrices whose fastest baseline does not fit in L2 drawn with a black edge."""
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
                        marker=marker, s=[46 if b else 26 for b in big],
                        edgecolors=["k" if b else "none" for b in big], linewidths=0.9,
                        label=f"{source} ({len(ss)})")
    ax.axhline(1, color="k", lw=1)
    ax.axvline(1, color="k", lw=0.6, ls=":")
    xs = np.geomspace(0.05, 3, 10)
    ax.plot(xs, xs, "k:", lw=0.8, label="time ratio = size ratio")
    ax.set(xscale="log", yscale="log", xlabel="CSR-dtANS bytes / fastest cuSPARSE format's bytes",
           ylabel="CSR-dtANS time / fastest cuSPARSE time", title=title)
    ax.grid(alpha=0.3)
    n_fast = sum(r["faster"] for r in prs)
    ax.text(0.02, 0.02, f"{n_fast} of {len(prs)} faster", transform=ax.transAxes, fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    return sc


#: the GPU experiments' settings (fig7/fig8/table2/table3 share them, so one measurement
#: serves all four): the local matrices; four families at 2^24, four at 2^26 and banded17 at
#: 2^27 (the paper's > 2^25 column); every family at 2^22. ``budget_s``: matrices not begun
#: after that many seconds are skipped (listed in ``skipped``), so a slow host still saves.
GPU_FULL = dict(real=None, synthetic=list(FAMILIES), log2_nnz=[22],
                large=[["stencil5", 26], ["banded17", 26], ["watts20", 26], ["erdos_renyi20", 26],
                       ["banded17", 27], ["stencil5", 24], ["banded17", 24], ["watts20", 24],
                       ["uniform16", 24]],
                dtypes=["float64", "float32"], methods=[*BASELINES, "csr_dtans"],
                caches=["warm", "cold"], reps=20, warmup=3, budget_s=420, method_cap_s=20.0, seed=0)
GPU_QUICK = dict(real=["HB/bcsstk13", "SNAP/ego-Facebook"], synthetic=["stencil5", "watts20"],
                 log2_nnz=[16, 20], large=[], reps=5, budget_s=120)
#: Tables II and III: nnz columns <= 2^20, <= 2^25, > 2^25
GPU_EDGES = (20, 25)


def measure_gpu(cfg: dict, desc: str) -> dict:
    """Every matrix of ``cfg`` in every dtype through :func:`time_matrix`; extras: the
    device's copy bandwidth and L2 size, the wall seconds of each matrix and the matrices
    skipped for ``budget_s``."""
    import time

    from spmvlab import bench, runinfo
    from spmvlab import experiment as X
    jobs = list(matrices_gpu(cfg))
    rows, seconds, skipped = [], {}, []
    info = runinfo.device_info()
    extras = dict(copy_bandwidth=bench.copy_bandwidth(), l2_bytes=info.get("l2_bytes"),
                  matrix_seconds=seconds, skipped=skipped)
    start = time.perf_counter()
    budget = cfg.get("budget_s")

    def log(text):
        print(f"  [{time.perf_counter() - start:.0f} s] {text}", file=sys.stderr, flush=True)

    for name, source, spec, load in X.progress(jobs, total=len(jobs), desc=desc):
        t0 = time.perf_counter()
        if budget and t0 - start > budget:
            skipped.append(name)
            continue
        A = load()
        log(f"{name}: {A.shape[0]}x{A.shape[1]}, {A.nnz} nonzeros, loaded in {time.perf_counter() - t0:.1f} s")
        extra = dict(matrix=name, source=source, family=spec["family"] if spec else "suitesparse")
        for dt in cfg["dtypes"]:
            if budget and time.perf_counter() - start > budget:
                skipped.append(f"{name} {dt}")
                continue
            rows += time_matrix(A, dt, cfg["methods"], reps=cfg["reps"], warmup=cfg["warmup"],
                                caches=cfg["caches"], extra=extra,
                                method_cap_s=cfg.get("method_cap_s"), log=log)
        del A
        seconds[name] = time.perf_counter() - t0
        X.checkpoint(dict(rows=rows, **extras))
    return dict(rows=rows, **extras)


def gpu_results(cfg: dict, desc: str) -> dict:
    """fig7_dtans's saved measurement when it is reusable (:func:`reuse_rows`), else a new
    one; ``rows_from`` says which (``rows_partial``: fig7 was stopped before its end and saved
    what it had, :func:`spmvlab.experiment.checkpoint`)."""
    saved = reuse_rows("fig7_dtans", cfg, True)
    if saved is not None:
        keep = ("copy_bandwidth", "l2_bytes", "matrix_seconds", "skipped")
        part = {"rows_partial": True} if saved.get("partial") else {}
        return dict(rows=saved["rows"], **{k: saved.get(k) for k in keep}, **part,
                    rows_from="fig7_dtans.json of this device", rows_git_hash=saved["meta"]["git_hash"],
                    rows_date=saved["meta"]["date_utc"])
    return dict(measure_gpu(cfg, desc), rows_from="measured here")


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


def speed_summary(rows: list[dict], cache: str, dtypes) -> list[dict]:
    """Per dtype: the best speedup and, for matrices > 2^25 nonzeros, how many are faster and
    the median speedup (the issue's goal: a majority, fp64 cold)."""
    out = []
    prs = pairs(rows, cache)
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


def plot_speed(results: dict, fig_path: str, cache: str, figure: str) -> list[str]:
    """Fig. 7 (warm) / Fig. 8 (cold): one panel per dtype."""
    from spmvlab import plotting as P
    plt = P.pyplot()
    dtypes = results["config"]["dtypes"]
    prs = pairs(results["rows"], cache)
    l2 = results.get("l2_bytes")
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.0 * len(dtypes), 5.0), squeeze=False)
    sc = None
    for ax, dt in zip(axes[0], dtypes):
        sc = scatter(ax, [p for p in prs if p["dtype"] == dt], f"{dt}, {cache} L2", l2) or sc
    if sc is not None:
        fig.colorbar(sc, ax=list(axes[0]), label="average nonzeros per row")
    edge = f"; black edge: fastest format's bytes > L2 ({l2 / 2**20:.0f} MiB)" if l2 else ""
    fig.suptitle(f"dtANS paper {figure}: SpMV, CSR-dtANS vs the fastest of cuSPARSE "
                 f"{baselines_text(results['rows'])}, {P.device_name(results)}\nbelow 1: faster{edge}",
                 fontsize=9)
    return P.savefig(fig, fig_path, tight=False)


def plot_cells(results: dict, fig_path: str, title: str) -> list[str]:
    """Tables I-III drawn as text tables, one per dtype (rows ``cells`` of the results)."""
    from spmvlab import plotting as P
    plt = P.pyplot()
    rows = results["rows"]
    dtypes = results["config"]["dtypes"]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.2 * len(dtypes), 3.4), squeeze=False)
    for ax, dt in zip(axes[0], dtypes):
        ax.axis("off")
        cs = [r for r in rows if r["dtype"] == dt]
        cols = list(dict.fromkeys(c["nnz"] for c in cs))
        body = [["\n".join(f"{s[:5]}: {cell_text(c)}" for s in ("all", "suitesparse", "synthetic")
                           for c in cs if c["source"] == s and c["nnz_per_row"] == pr and c["nnz"] == col)
                 for col in cols] for pr in ("<= 10", "> 10")]
        if cols:
            t = ax.table(cellText=body, rowLabels=["nnz/row <= 10", "nnz/row > 10"],
                         colLabels=[f"nnz {c}" for c in cols], loc="center", cellLoc="center")
            t.auto_set_font_size(False)
            t.set_fontsize(8)
            t.scale(1.0, 3.4)
        ax.set_title(dt, fontsize=10)
    fig.suptitle(f"{title} ({P.device_name(results)}): successes/matrices", fontsize=10)
    return P.savefig(fig, fig_path)
