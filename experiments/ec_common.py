"""Shared by the EC-SpMV experiments (``*_ec.py``): the paper's Llama2 weight shapes, the
matrices they are measured on and the CPU they ran on. Not an experiment (no NAME).

The paper (Sec. 8) prunes LLaMA2 and OPT weights with SparseGPT; we have neither, so the
matrices are

* ``uniform``: ``datasets.uniform`` at a Llama2 shape (uniformly random positions over the
  whole matrix, standard normal values stored in float16, so they are exact in float32 too);
* a weights name (``datasets.weights_names()``, the all-mpnet-base-v2 layers): the real
  matrix pruned per row by magnitude (``datasets.prune``).
"""
from __future__ import annotations

import os
import platform

import numpy as np

#: Llama2 linear-layer shapes (rows = out features, cols = in features) per model; k/v of
#: 70B are 1024 x 8192 (grouped-query attention). The paper's range, 1024x8192 to 8192x28672.
LLAMA2_SHAPES = {
    "7B": {"q/k/v/o": (4096, 4096), "gate/up": (11008, 4096), "down": (4096, 11008)},
    "13B": {"q/k/v/o": (5120, 5120), "gate/up": (13824, 5120), "down": (5120, 13824)},
    "70B": {"q/o": (8192, 8192), "k/v": (1024, 8192), "gate/up": (28672, 8192),
            "down": (8192, 28672)},
}


def llama2_shapes() -> list[list[int]]:
    """Every distinct Llama2 shape, model by model (7B, 13B, 70B)."""
    out = []
    for layers in LLAMA2_SHAPES.values():
        for s in layers.values():
            if list(s) not in out:
                out.append(list(s))
    return out


def model_of(shape) -> str:
    """``"7B:gate/up"`` for a Llama2 shape, else ``""``."""
    for model, layers in LLAMA2_SHAPES.items():
        for layer, s in layers.items():
            if tuple(s) == tuple(shape):
                return f"{model}:{layer}"
    return ""


def weight_names(names) -> list[str]:
    """``names``, or every weights matrix of the data directory when None ([] without one)."""
    if names is not None:
        return list(names)
    from spmvlab import datasets
    try:
        return list(datasets.weights_names())
    except Exception as exc:          # no data directory: the synthetic matrices only
        import sys
        print(f"real weights unavailable ({exc}); set SPMVLAB_DATA to the data directory",
              file=sys.stderr)
        return []


def matrix(source: str, sparsity: float, shape=None, seed: int = 0):
    """The CSR matrix of ``source``: "uniform" (``shape``, float16 values) or a weights name
    pruned per row by magnitude (float32 values)."""
    import scipy.sparse as sp
    from spmvlab import datasets
    if source == "uniform":
        return datasets.uniform(tuple(shape), sparsity, dtype=np.float16, seed=seed)
    W = datasets.weights(source)
    return sp.csr_matrix(datasets.prune(W, sparsity, method="magnitude", per_row=True))


def cpu_info() -> dict:
    """The CPU the run measured on: model name, logical CPUs, numba's thread count."""
    name = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import numba
        threads = int(numba.get_num_threads())
    except Exception:
        threads = None
    return dict(model=name, logical_cpus=os.cpu_count(), numba_threads=threads,
                machine=platform.machine())


#: the ablation of the paper's Fig. 10 as EC-CSR encode options (``fig10_ec``): delta
#: indexing only (every row one 1-grained block: no extraction, no clipping, no reordering),
#: + hierarchical block extraction, + load balancing (block clipping and reordering: the
#: format's defaults)
ABLATION = {
    "ec_index_only": dict(max_granularity=1, clip=0, reorder=False),
    "ec_extraction": dict(max_granularity=None, clip=0, reorder=False),
    "ec_balanced": dict(max_granularity=None, clip=None, reorder=True),
}


def encode_variants(A, variants: dict, dtype=np.float32, times: dict | None = None) -> dict:
    """{name: ECCSRMatrix} of canonical ``A`` under each option dict of ``variants``
    (``spmvlab.encoders.ec_csr.encode`` options), byte for byte ``encode(A, dtype, **opts)``:
    the extraction (the costly part) runs once per distinct (delta_bits, warp_size,
    vector_size, max_granularity) and is shared by variants differing only in ``clip`` and
    ``reorder``. ``times`` (a dict) gets the seconds of each name (a shared extraction counted
    where it first ran)."""
    import time
    from reference._common import canonical_csr, resolve_dtype
    from reference.block_extraction import assemble_sets, check_options, max_gap_for
    from spmvlab.encoders import ec_csr as E
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt)
    leftovers, out = {}, {}
    for name, o in variants.items():
        t0 = time.perf_counter()
        opts = check_options(o.get("delta_bits", 8), o.get("warp_size", 32), o.get("vector_size", 4),
                             o.get("clip"), o.get("reorder", True), o.get("max_granularity"))
        key = (opts["delta_bits"], opts["warp_size"], opts["vector_size"], opts["max_granularity"])
        if key not in leftovers:
            leftovers[key] = E.extract_leftovers(
                csr.indptr, csr.indices, csr.shape[1], unit=opts["warp_size"] * opts["vector_size"],
                max_gap=max_gap_for(opts["delta_bits"]), max_granularity=opts["max_granularity"])
        out[name] = E.store_sets(csr, assemble_sets(leftovers[key], opts), opts, dt)
        if times is not None:
            times[name] = time.perf_counter() - t0
    return out


def with_values(M, dtype):
    """``M`` (an EC-CSR matrix) with its values cast to ``dtype``: the encoding of the same
    matrix in ``dtype`` when its values are exact there (the blocks depend on the pattern only)."""
    import dataclasses
    dt = np.dtype(dtype)
    return M if M.values.dtype == dt else dataclasses.replace(M, values=M.values.astype(dt), checksum=None)
