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
