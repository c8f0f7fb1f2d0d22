"""spmvlab's command line: ``spmvlab info | formats | stats MATRIX``.

* ``info``    -- where kernels run (GPU or the numba CUDA simulator), package versions, data;
* ``formats`` -- the registered formats and their encode options;
* ``stats``   -- structure of a matrix and its size in every registered format.

Errors from bad input print one line to stderr and exit with status 2.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys

import numpy as np

from reference._common import SpmvlabError

__all__ = ["main", "matrix_stats", "format_sizes"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message):  # noqa: D102
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# --------------------------------------------------------------------------------------
# Statistics (usable from Python too)
# --------------------------------------------------------------------------------------


def matrix_stats(A) -> dict:
    """Structure of a canonical CSR matrix: shape, nnz, density, row lengths, column gaps.

    Column gaps are the differences of consecutive column indices within a row (a row with
    ``m`` nonzeros has ``m - 1`` gaps); ``gap_le16`` is the fraction of them that are <= 16.
    """
    n_rows, n_cols = A.shape
    lengths = np.diff(A.indptr).astype(np.int64)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    gaps = np.diff(A.indices.astype(np.int64))
    gaps = gaps[rows[1:] == rows[:-1]] if gaps.size else gaps
    size = n_rows * n_cols
    return {
        "shape": (n_rows, n_cols),
        "nnz": int(A.nnz),
        "density": A.nnz / size if size else 0.0,
        "row_min": int(lengths.min()) if n_rows else 0,
        "row_mean": float(lengths.mean()) if n_rows else 0.0,
        "row_median": float(np.median(lengths)) if n_rows else 0.0,
        "row_max": int(lengths.max()) if n_rows else 0,
        "empty_rows": int(np.count_nonzero(lengths == 0)),
        "n_gaps": int(gaps.size),
        "gap_le16": float(np.mean(gaps <= 16)) if gaps.size else float("nan"),
        "gap_median": float(np.median(gaps)) if gaps.size else float("nan"),
    }


def format_sizes(A, dtype) -> list[dict]:
    """Bytes of ``A`` in every registered format (fast encoders), one dict per format.

    Each dict has ``format``, and either ``nbytes``, ``bytes_per_nnz`` and
    ``effective_density`` (nbytes / (rows * cols * value bytes)) or ``error`` (the reason the
    format could not encode ``A``).
    """
    from . import formats  # noqa: PLC0415

    dt = np.dtype(dtype)
    dense = A.shape[0] * A.shape[1] * dt.itemsize
    out = []
    for info in formats.all_formats():
        row = {"format": info.name}
        try:
            nb = int(info.encode(A, dt, fast=True).nbytes)
        except Exception as exc:  # noqa: BLE001  (report it in the table, keep going)
            msg = " ".join(str(exc).split()) or type(exc).__name__
            row["error"] = f"{type(exc).__name__}: {msg}"
        else:
            row.update(nbytes=nb, bytes_per_nnz=nb / A.nnz if A.nnz else float("nan"),
                       effective_density=nb / dense if dense else float("nan"))
        out.append(row)
    return out


# --------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _backend_lines() -> list[tuple[str, str]]:
    try:
        from . import _cuda  # noqa: PLC0415  (imports numba.cuda: only when asked)
    except Exception as exc:  # noqa: BLE001
        return [("backend", f"unavailable ({type(exc).__name__}: {exc})")]
    if _cuda.SIMULATOR:
        return [("backend", "numba CUDA simulator (CPU)")]
    try:
        dev = _cuda.cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = ".".join(str(v) for v in dev.compute_capability)
        return [("backend", f"CUDA GPU: {name}"), ("compute capability", cc),
                ("SM count", str(dev.MULTIPROCESSOR_COUNT))]
    except Exception as exc:  # noqa: BLE001  (driver present but unusable)
        return [("backend", f"CUDA unavailable ({type(exc).__name__}: {exc})")]


def _print_table(rows, out) -> None:
    width = max((len(k) for k, _ in rows), default=0)
    for k, v in rows:
        print(f"{k:<{width}}  {v}", file=out)


def cmd_info(args, out) -> int:
    """Backend, versions, data."""
    from . import __version__, datasets  # noqa: PLC0415

    rows = [("spmvlab", __version__)]
    rows += _backend_lines()
    rows.append(("python", platform.python_version()))
    for dist in ("numpy", "scipy", "numba", "numba-cuda"):
        rows.append((dist, _version(dist) or "not installed"))
    cupy = next((f"{v} ({d})" for d in ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x")
                 if (v := _version(d))), None)
    rows.append(("cupy", cupy or "not installed (optional)"))
    rows.append(("torch", _version("torch") or "not installed (optional)"))
    try:
        rows.append(("data dir", str(datasets.data_dir())))
    except SpmvlabError:
        rows.append(("data dir", "not found (set SPMVLAB_DATA)"))
    rows.append(("suitesparse", f"{len(datasets.suitesparse_names())} matrices"))
    rows.append(("weights", f"{len(datasets.weights_names())} matrices"))
    rows.append(("cache dir", str(datasets.cache_dir())))
    _print_table(rows, out)
    return 0


def cmd_formats(args, out) -> int:
    """Registered formats with their options."""
    from . import formats  # noqa: PLC0415

    infos = formats.all_formats()
    for info in infos:
        print(f"{info.name}: {info.doc}", file=out)
        print(f"    reference {info.reference}, kernels {info.kernels or '-'}, "
              f"fast encoder {info.encoder or '-'}", file=out)
        print(f"    kernel dtypes: {', '.join(info.kernel_dtypes)}", file=out)
        if not info.options:
            print("    options: none", file=out)
        for name, opt in info.options.items():
            choices = f" {list(opt.choices)}" if opt.choices is not None else ""
            doc = f"  {opt.doc}" if opt.doc else ""
            print(f"    option {name} = {opt.default!r}{choices}{doc}", file=out)
    print(f"{len(infos)} format(s)", file=out)
    return 0


def cmd_stats(args, out) -> int:
    """Structure of MATRIX and its bytes in every format."""
    from . import datasets  # noqa: PLC0415

    dt = np.dtype(args.dtype)
    A = datasets.load_matrix(args.matrix)
    s = matrix_stats(A)
    r, c = s["shape"]
    rows = [
        ("matrix", args.matrix),
        ("shape", f"{r:,} x {c:,}"),
        ("nnz", f"{s['nnz']:,}"),
        ("density", f"{s['density']:.6g} ({100 * s['density']:.4g}%)"),
        ("row lengths", f"min {s['row_min']}  mean {s['row_mean']:.2f}  median {s['row_median']:g}"
                        f"  max {s['row_max']}  empty rows {s['empty_rows']:,}"),
        ("column gaps", f"<=16: {100 * s['gap_le16']:.1f}%  median {s['gap_median']:g}"
                        f"  ({s['n_gaps']:,} in-row gaps)" if s["n_gaps"] else "none"),
        ("value dtype", f"{dt.name} ({dt.itemsize} bytes)"),
    ]
    _print_table(rows, out)
    print(file=out)
    sizes = format_sizes(A, dt)
    dense = r * c * dt.itemsize
    w = max([len(x["format"]) for x in sizes] + [6])
    print(f"{'format':<{w}}  {'bytes':>14}  {'bytes/nnz':>9}  {'eff. density':>12}", file=out)
    for x in sizes:
        if "error" in x:
            print(f"{x['format']:<{w}}  failed: {x['error']}", file=out)
        else:
            print(f"{x['format']:<{w}}  {x['nbytes']:>14,}  {x['bytes_per_nnz']:>9.3f}  "
                  f"{x['effective_density']:>12.4g}", file=out)
    bpn = dense / s["nnz"] if s["nnz"] else float("nan")
    print(f"{'dense':<{w}}  {dense:>14,}  {bpn:>9.3f}  {1.0:>12.4g}", file=out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="spmvlab", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           parser_class=_Parser)
    sub.add_parser("info", help="backend, package versions and data available").set_defaults(
        func=cmd_info)
    sub.add_parser("formats", help="registered formats and their options").set_defaults(
        func=cmd_formats)
    st = sub.add_parser("stats", help="structure of a matrix and its bytes in every format")
    st.add_argument("matrix", metavar="MATRIX",
                    help="a .mtx/.mtx.gz/.npy file, a SuiteSparse name (HB/bcsstk13) "
                         "or a weights name")
    st.add_argument("--dtype", default="float32", choices=("float16", "float32", "float64"),
                    help="value dtype for the byte counts (default float32)")
    st.set_defaults(func=cmd_stats)
    return p


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, sys.stdout)
    except SpmvlabError as exc:
        msg = " ".join(str(exc).split())
        print(f"spmvlab {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spmvlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
