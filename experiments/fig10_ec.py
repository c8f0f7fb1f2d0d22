"""EC-SpMV paper, Fig. 10: the ablation. SpMV time of three EC-CSR variants, each step adding
one of the paper's optimisations, against CSR-vector, cuSPARSE and cuBLAS:

    ec_index_only   delta indices only: every row one 1-grained block (encode option
                    max_granularity=1), no clipping (clip=0), no reordering (reorder=False)
    ec_extraction   + hierarchical block extraction (max_granularity=None), clip=0, reorder=False
    ec_balanced     + load balancing: block clipping (dynamic threshold) and reordering (the
                    format's defaults; what fig7_ec measures)

The variants are encode options of the ``ec_csr`` format (``ec_common.ABLATION``; by name:
``ec_csr[max_granularity=1,clip=0,reorder=False]`` etc.), the kernel and its config are the
same. The extraction is run once per matrix and shared by the last two variants
(``ec_common.encode_variants``, byte for byte the encoder's output). The paper's reference
point, AlphaSparse, is not available: its "index compression only" gain is measured here
against our CSR-vector (the same kernel family with int32 column indices) and cuSPARSE.

Matrices: ``datasets.uniform`` at Llama2 shapes, seeded; FP32 (the paper's panel: FP32 on an RTX
3080 Ti) and FP16; median of ``reps`` cold-L2 calls, every method checked on the GPU first.
FULL is sized for minutes on an H200 host (docs/experiments.md lists each saved run's
duration).

    python experiments/fig10_ec.py [--quick] [--shapes 4096x11008] [--sparsities 0.7]
"""
from __future__ import annotations

import math
import sys

from spmvlab import experiment as X
from spmvlab import plotting as P

from experiments import ec_common as EC
from experiments import fig7_ec

NAME = "fig10_ec"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "sparsities")
VARIANTS = list(EC.ABLATION)
#: the ablation steps are settings of EC-CSR: its colour, lighter the fewer steps (the last one
#: is ``ec_csr`` itself); the baselines are drawn as ``plotting.METHODS``
STEPS = {"ec_index_only": ("EC-CSR, index compression only", "#d9c3e8"),
         "ec_extraction": ("EC-CSR + block extraction", "#b48bd1"),
         "ec_balanced": ("EC-CSR + load balancing (default)", P.METHODS["ec_csr"][1])}
FULL = dict(shapes=[[4096, 11008], [11008, 4096], [8192, 8192], [8192, 28672]],
            sparsities=[0.7, 0.8, 0.9], dtypes=["float32", "float16"],
            baselines=["cublas", "cusparse", "csr_vector"], reps=50, warmup=5, seed=0)
QUICK = dict(shapes=[[1024, 4096]], sparsities=[0.7], dtypes=["float32"], reps=10)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--shapes", type=X.shapes, help="matrix shapes, RxC,...")
    p.add_argument("--sparsities", type=X.floats, help="sparsities, e.g. 0.7,0.9")
    p.add_argument("--reps", type=int, help="timed calls per method (median kept)")


def measure(cfg: dict) -> dict:
    from spmvlab import methods
    jobs = [(tuple(s), sp) for s in cfg["shapes"] for sp in cfg["sparsities"]]
    rows = []
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = EC.matrix("uniform", sparsity, shape, cfg["seed"])
        specs, enc_s = fig7_ec.ec_methods(A, EC.ABLATION)
        for dtype in cfg["dtypes"]:
            got = methods.measure(A, dtype, specs + list(cfg["baselines"]), reps=cfg["reps"],
                                  warmup=cfg["warmup"], extra=dict(sparsity=sparsity),
                                  keep_going=True)
            for r in got:
                if r["method"] in enc_s:
                    r.update(encode_s=enc_s[r["method"]], options=EC.ABLATION[r["method"]])
            rows += got
        del A, specs
        X.checkpoint(dict(rows=rows))            # a run stopped by a time limit keeps these
    return dict(rows=rows)


def gains(results: dict) -> list[dict]:
    """Per (dtype, sparsity, shape): each step's speedup over the one before
    (``extraction_gain`` = index_only / extraction time, ``balancing_gain`` = extraction /
    balanced) and ``index_vs_csr_vector`` = CSR-vector / index_only time; plus one row per
    (dtype, sparsity) with ``shape`` "geomean" over the shapes."""
    t = {(r["method"], r["dtype"], r["sparsity"], tuple(r["shape"])): r["median_us"]
         for r in results["rows"] if r.get("median_us") and r.get("check_passed")}
    keys = sorted({k[1:] for k in t})
    out = []
    for dt, s, shape in keys:
        get = lambda m: t.get((m, dt, s, shape))   # noqa: E731
        o = dict(dtype=dt, sparsity=s, shape=list(shape))
        for name, a, b in (("index_vs_csr_vector", "csr_vector", "ec_index_only"),
                           ("index_vs_cusparse", "cusparse", "ec_index_only"),
                           ("extraction_gain", "ec_index_only", "ec_extraction"),
                           ("balancing_gain", "ec_extraction", "ec_balanced"),
                           ("balanced_vs_cublas", "cublas", "ec_balanced")):
            if get(a) and get(b):
                o[name] = get(a) / get(b)
        out.append(o)
    for dt, s in sorted({(o["dtype"], o["sparsity"]) for o in out}):
        sub = [o for o in out if o["dtype"] == dt and o["sparsity"] == s and o["shape"] != "geomean"]
        g = dict(dtype=dt, sparsity=s, shape="geomean")
        for name in ("index_vs_csr_vector", "index_vs_cusparse", "extraction_gain",
                     "balancing_gain", "balanced_vs_cublas"):
            v = [o[name] for o in sub if name in o]
            if v:
                g[name] = math.exp(sum(math.log(x) for x in v) / len(v))
        out.append(g)
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """A panel per dtype (row) and sparsity (column): per shape a bar per variant and baseline
    from the 1x line (cuBLAS in the same run) to its speedup; every panel on one ratio axis."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("median_us")]
    shapes = [tuple(s) for s in cfg["shapes"]]
    meths = VARIANTS + [b for b in cfg["baselines"] if b != "cublas"]
    fig, axes = plt.subplots(len(cfg["dtypes"]), len(cfg["sparsities"]), squeeze=False, sharey=True,
                             figsize=(P.PAGE_WIDTH, 2.0 * len(cfg["dtypes"]) + 0.9))
    width = 0.8 / len(meths)
    for i, dt in enumerate(cfg["dtypes"]):
        for j, s in enumerate(cfg["sparsities"]):
            ax = axes[i][j]
            for m_i, m in enumerate(meths):
                pts = [(x, r["speedup_vs_cublas"]) for x, shape in enumerate(shapes)
                       for r in rows if r["method"] == m and r["dtype"] == dt and r["sparsity"] == s
                       and tuple(r["shape"]) == shape and r.get("speedup_vs_cublas")]
                style = dict(label=STEPS[m][0], color=STEPS[m][1]) if m in STEPS else P.bar_style(m)
                style.update(edgecolor=style["color"], linewidth=0.6)   # a bar at ~1x still shows
                P.ratio_bars(ax, [x + (m_i - (len(meths) - 1) / 2) * width for x, _ in pts],
                             [y for _, y in pts], width, **style)
            if (i, j) != (0, 0):
                ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
            ax.set_xticks(range(len(shapes)), [f"{a}x{b}" for a, b in shapes], rotation=30,
                          fontsize=6.5, ha="right")
            ax.set_title(f"SpMV {'FP32' if dt == 'float32' else 'FP16'}, {100 * s:.0f} % sparse")
            ax.grid(axis="x", visible=False)
            if j == 0:
                ax.set_ylabel("speedup over cuBLAS")
    P.ratio_axis(axes[0][0], [r["speedup_vs_cublas"] for r in rows if r["method"] in meths
                              and r.get("speedup_vs_cublas")], line_label="cuBLAS (same run)")
    fig.suptitle(f"EC-SpMV ablation, cold L2, {P.device_name(results)}")
    P.legend_below(fig, axes[0][:1], ncol=3, room=0.1)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(results["rows"], P.TIMING_COLUMNS)
    cols = [("dtype", "values", ""), ("sparsity", "sparsity", ".2f"), ("shape", "shape", ""),
            ("index_vs_csr_vector", "index/CSR-vec", ".2f"), ("extraction_gain", "+extract", ".2f"),
            ("balancing_gain", "+balance", ".2f"), ("balanced_vs_cublas", "x cuBLAS", ".2f")]
    print(P.format_table(gains(results), cols))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
