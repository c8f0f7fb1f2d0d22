"""Write the pinned encodings ``tests/golden/<fmt>/<case>.json`` for formats that have none.

    python tests/golden/make_golden.py            # missing files only (new formats, layouts)
    python tests/golden/make_golden.py macko      # (re)write one format's, after review

Each file holds a small input (shape, coordinates, float64 values as hex), the value dtype,
the encode options and every array of the reference encoding as hex bytes with its dtype.
``tests/test_formats.py::test_golden_encoding`` re-encodes the input with the reference and
the fast encoder and compares every byte. Existing files are rewritten only when the format
is named on the command line: a golden file changes only by a deliberate, reviewed commit.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _hex(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.name, "shape": list(a.shape), "hex": a.tobytes().hex()}


def cases() -> dict[str, tuple[sp.coo_matrix, str]]:
    """name -> (input, value dtype): a few small matrices with the usual edge cases."""
    rng = np.random.default_rng(20261123)
    small = sp.random(5, 37, density=0.3, random_state=rng, format="coo",
                      data_rvs=lambda n: np.round(rng.standard_normal(n), 3))
    edges = np.zeros((4, 45))
    edges[0, [0, 1, 17, 44]] = [1.5, -2.0, np.nan, 4.0]      # row 1 empty, NaN and Inf values
    edges[2, [16, 33]] = [np.inf, 6.25]
    edges[3, 44] = -0.5
    wide = np.zeros((2, 300))
    wide[0, [3, 299]] = [1.0, 2.0]                             # long gaps
    wide[1, 150] = 3.0
    return {"small_f32": (small, "float32"), "edges_f16": (sp.coo_matrix(edges), "float16"),
            "edges_f64": (sp.coo_matrix(edges), "float64"), "wide_f32": (sp.coo_matrix(wide), "float32"),
            "empty_f32": (sp.coo_matrix((3, 4)), "float32")}


#: layouts beyond the option grid that get files of their own
EXTRA_LAYOUTS = {"csr_dtans": [{"params": "paper", "lanes_per_row": 4, "rows_per_lane": 1},
                               {"params": "paper", "lanes_per_row": 1, "rows_per_lane": 4},
                               {"params": "paper", "lanes_per_row": 1, "rows_per_lane": 1,
                                "first_delta": "diagonal"}]}
#: options added after a format's files were written: left out of file names and documents
#: at their default, so the earlier files stay what they were
ADDED_LATER = {"csr_dtans": ("lanes_per_row", "rows_per_lane", "first_delta")}


def write(info, rewrite: bool) -> list[str]:
    """The golden files of ``info``'s option grid and extra layouts; existing ones only with
    ``rewrite``."""
    out_dir = os.path.join(HERE, info.name)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    defaults = {k: o.default for k, o in info.options.items()}
    for opts in info.option_grid() + EXTRA_LAYOUTS.get(info.name, []):
        later = ADDED_LATER.get(info.name, ())
        grid = {k: v for k, v in opts.items() if k not in later or v != defaults[k]}
        suffix = "".join(f"_{k}{v}" for k, v in grid.items())
        for name, (A, dtype) in cases().items():
            path = os.path.join(out_dir, f"{name}{suffix}.json")
            if os.path.exists(path) and not rewrite:
                continue
            M = info.encode(A, dtype=dtype, **opts)
            doc = {"format": info.name, "dtype": dtype, "options": grid,
                   "input": {"shape": list(A.shape), "rows": A.row.tolist(), "cols": A.col.tolist(),
                             "values": _hex(A.data.astype(np.float64))},
                   "arrays": {n: _hex(a) for n, a in M.arrays()}}
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
            written.append(os.path.relpath(path, ROOT))
    return written


def main(argv: list[str]) -> int:
    from spmvlab import formats
    for info in formats.all_formats():
        have = os.path.isdir(os.path.join(HERE, info.name)) and os.listdir(os.path.join(HERE, info.name))
        if (argv and info.name in argv) or not argv:
            for p in write(info, rewrite=bool(argv)):
                print("wrote", p)
            if not argv and have:
                print(f"kept {info.name}'s existing files (name it to rewrite them)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
