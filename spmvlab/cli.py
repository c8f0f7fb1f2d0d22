"""spmvlab's command line: ``spmvlab info | formats | stats MATRIX | bench MATRIX``.

* ``info``    -- where kernels run (GPU or the numba CUDA simulator), package versions, data;
* ``formats`` -- the registered formats and their encode options;
* ``stats``   -- structure of a matrix and its size in every registered format;
* ``bench``   -- size and encode time per format and, on a GPU, the SpMV (SpMM with ``--k``)
  time of every format's kernel and of the vendor baselines, through ``spmvlab.methods``
  (the objects the experiments time: checked, cold L2, median).

``stats`` and ``bench`` take MATRIX as a file, a SuiteSparse name or a weights name, prune
dense ones with ``--prune``, pass encode options with ``--option``/``--delta-bits`` and write
JSON with ``--json``. Errors from bad input print one line to stderr and exit with status 2
(values that overflow or underflow in ``--dtype`` are such an error unless ``--lossy``
accepts them).
"""
from __future__ import annotations

import argparse
import ast
import importlib.metadata
import os
import platform
import sys
import time
import warnings

import numpy as np

from reference._common import (
    LossyConversionError, OptionError, SpmvlabError, canonical_csr, problem,
)

from . import formats
from .plotting import format_table

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


def format_sizes(A, dtype, lossy: bool = False, *, infos=None, options=None,
                 repeats: int | None = None, progress: bool = False) -> list[dict]:
    """Bytes of ``A`` in every registered format (fast encoders), one dict per format.

    Each dict has ``format``, and either ``nbytes``, ``bytes_per_nnz``,
    ``effective_density`` (nbytes / (rows * cols * value bytes)), ``options`` (the
    encoded matrix's encode options) and ``chosen`` (the options given as ``"auto"``, whose
    value ``options`` shows) or ``error`` (the reason the format could not encode ``A``);
    ``warnings`` lists what the encoder warned, if anything. ``lossy`` is passed to every
    encode.

    infos     the formats (default: every registered one)
    options   format name -> encode options for it (the registry's defaults for the rest)
    repeats   encode this many times and add ``encode_s``, the best wall-clock time, and
              ``encode_repeats`` (the first call may include compiling a fast encoder)
    progress  draw a progress bar over the formats on stderr
    """
    dt = np.dtype(dtype)
    dense = A.shape[0] * A.shape[1] * dt.itemsize
    infos = formats.all_formats() if infos is None else list(infos)
    if progress:
        from .experiment import progress as bar  # noqa: PLC0415

        infos = bar(infos, desc="encode")
    out = []
    for info in infos:
        row = {"format": info.name}
        opts = dict((options or {}).get(info.name, {}))
        try:
            best = float("inf")
            for i in range(repeats or 1):
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    M = info.encode(A, dt, fast=True, lossy=lossy, **opts)
                    best = min(best, time.perf_counter() - t0)
                if i == 0 and seen:
                    row["warnings"] = [" ".join(str(w.message).split()) for w in seen]
        except Exception as exc:  # noqa: BLE001  (report it in the table, keep going)
            msg = " ".join(str(exc).split()) or type(exc).__name__
            row["error"] = f"{type(exc).__name__}: {msg}"
        else:
            nb = int(M.nbytes)
            row.update(nbytes=nb, bytes_per_nnz=nb / A.nnz if A.nnz else float("nan"),
                       effective_density=nb / dense if dense else float("nan"),
                       options={k: getattr(M, k) for k in M.option_names()},
                       chosen=sorted(k for k, v in opts.items() if v == "auto"))
            if repeats:
                row.update(encode_s=best, encode_repeats=int(repeats))
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
    """Registered formats with their capabilities, options and timed methods."""
    infos = formats.all_formats()
    for info in infos:
        print(f"{info.name}: {info.doc}", file=out)
        print(f"    reference {info.reference}, kernels {info.kernels or '-'}, "
              f"fast encoder {info.encoder or '-'}", file=out)
        print(f"    capabilities: {', '.join(sorted(info.capabilities)) or 'reference only'}; "
              f"kernel dtypes: {', '.join(info.kernel_dtypes)}", file=out)
        if info.kernels:
            print(f"    methods: {', '.join(info.methods)} (config {info.config})", file=out)
        if not info.options:
            print("    options: none", file=out)
        for name, opt in info.options.items():
            choices = (f" {list(opt.choices) + (['auto'] if opt.auto else [])}"
                       if opt.choices is not None else "")
            doc = f"  {opt.doc}" if opt.doc else ""
            print(f"    option {name} = {opt.default!r}{choices}{doc}", file=out)
    print(f"{len(infos)} format(s)", file=out)
    return 0


# --------------------------------------------------------------------------------------
# What stats and bench share: the matrix, encode options, the size table, --json
# --------------------------------------------------------------------------------------


def _literal(text: str):
    """A command-line value: a Python literal (8, 0.5, True, 'x') or else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _encode_options(args, infos) -> dict[str, dict]:
    """Format name -> the encode options given (``--option [FORMAT.]NAME=VALUE``, repeated,
    and ``--delta-bits B``, its spelling for ``macko.delta_bits``). A NAME goes to every format
    in ``infos`` that has it, a FORMAT.NAME to that format only; unknown names, values
    outside the registry's choices and two different values for one option raise."""
    given = [(f"--option {text}", text) for text in (args.option or [])]
    if args.delta_bits is not None:
        given.append(("--delta-bits", f"macko.delta_bits={args.delta_bits}"))
    out: dict[str, dict] = {}
    if not given:
        return out
    known = "; ".join(f"{i.name}: {', '.join(i.options)}" for i in infos if i.options)
    for flag, text in given:
        key, sep, raw = (t.strip() for t in text.partition("="))
        fmt, _, name = key.rpartition(".")
        if not sep or not name:
            raise OptionError(problem(flag, "NAME=VALUE or FORMAT.NAME=VALUE", repr(text),
                                      "e.g. --option delta_bits=8"))
        targets = [i for i in infos if name in i.options and fmt in ("", i.name)]
        if not targets:
            raise OptionError(problem(
                flag, "an encode option of the formats measured "
                f"({known or 'they have none'})", repr(key),
                "spmvlab formats lists every format's options (bench: see also --formats)"))
        value = _literal(raw)
        for info in targets:
            opt = info.options[name]
            if not opt.allows(value):
                raise OptionError(problem(flag, f"{info.name} {name} one of {list(opt.choices)}"
                                          + (" or auto" if opt.auto else ""), repr(raw)))
            opts = out.setdefault(info.name, {})
            if name in opts and opts[name] != value:
                raise OptionError(problem(flag, f"one value of {info.name} {name}",
                                          f"{opts[name]!r} and {value!r}", "give it once"))
            opts[name] = value
    return out


def _stored(A, dt: np.dtype, lossy: bool, err, command: str):
    """``A`` as stored in ``dt`` (canonical CSR). Values that overflow or underflow raise the
    error naming ``--lossy``; with ``lossy`` its warning is printed as one line on ``err``."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            S = canonical_csr(A, dt, lossy)
        except LossyConversionError as exc:
            raise exc.loss.error("MATRIX", accept="pass --lossy") from None
    for w in seen:
        loss = getattr(w.message, "loss", None)
        text = loss.accepted("MATRIX", by="--lossy") if loss is not None else str(w.message)
        print(f"spmvlab {command}: warning: {' '.join(text.split())}", file=err)
    return S


def _matrix(args, dt: np.dtype):
    """MATRIX as stored in ``dt``, pruned first with ``--prune`` (dense sources only)."""
    from . import datasets  # noqa: PLC0415

    if args.prune is None:
        raw = datasets.load_matrix(args.matrix)
    else:
        raw = datasets.prune(datasets.load_dense(args.matrix), args.prune)
    return _stored(raw, dt, args.lossy, sys.stderr, args.command)


def _header(args, s: dict, dt: np.dtype, sizes: list[dict]) -> list[tuple[str, str]]:
    r, c = s["shape"]
    rows = [("matrix", args.matrix)]
    if args.prune is not None:
        rows.append(("pruned", f"{100 * args.prune:g}% of every row zeroed, smallest "
                               "magnitudes first"))
    rows += [
        ("shape", f"{r:,} x {c:,}"),
        ("nnz", f"{s['nnz']:,}"),
        ("density", f"{s['density']:.6g} ({100 * s['density']:.4g}%)"),
        ("row lengths", f"min {s['row_min']}  mean {s['row_mean']:.2f}  median {s['row_median']:g}"
                        f"  max {s['row_max']}  empty rows {s['empty_rows']:,}"),
        ("column gaps", f"<=16: {100 * s['gap_le16']:.1f}%  median {s['gap_median']:g}"
                        f"  ({s['n_gaps']:,} in-row gaps)" if s["n_gaps"] else "none"),
        ("value dtype", f"{dt.name} ({dt.itemsize} bytes)"),
    ]
    opts = "; ".join(f"{x['format']} " + ", ".join(
        f"{k}={v!r}" + (" (auto: the fewest bytes)" if k in x.get("chosen", ()) else "")
        for k, v in x["options"].items()) for x in sizes if x.get("options"))
    if opts:
        rows.append(("options", opts))
    return rows


def _print_warnings(sizes: list[dict], command: str) -> None:
    """What the encoders warned, one line each on stderr."""
    for x in sizes:
        for text in x.get("warnings", ()):
            print(f"spmvlab {command}: warning: {x['format']}: {text}", file=sys.stderr)


def _auto_options(options: dict, infos) -> dict:
    """``options`` with every encode option that takes ``"auto"`` set to it where not given
    (MACKO's ``delta_bits``: ``stats`` and ``bench`` report the width that stores the fewest
    bytes, and the header says it was chosen)."""
    out = {k: dict(v) for k, v in options.items()}
    for info in infos:
        for name, opt in info.options.items():
            if opt.auto:
                out.setdefault(info.name, {}).setdefault(name, "auto")
    return out


def _print_sizes(sizes: list[dict], s: dict, dt: np.dtype, out, notes=None) -> None:
    """The per-format size table (with encode times when the rows have them), dense last."""
    r, c = s["shape"]
    dense = r * c * dt.itemsize
    timed = any("encode_s" in x for x in sizes)
    notes = notes or {}
    w = max([len(x["format"]) for x in sizes] + [6])
    head = f"{'format':<{w}}  {'bytes':>14}  {'bytes/nnz':>9}  {'eff. density':>12}"
    print(head + (f"  {'encode ms':>10}" if timed else "") + ("  note" if notes else ""), file=out)
    for x in sizes:
        if "error" in x:
            print(f"{x['format']:<{w}}  failed: {x['error']}", file=out)
            continue
        line = (f"{x['format']:<{w}}  {x['nbytes']:>14,}  {x['bytes_per_nnz']:>9.3f}  "
                f"{x['effective_density']:>12.4g}")
        if timed:
            line += f"  {1e3 * x['encode_s']:>10.3f}"
        if notes.get(x["format"]):
            line += f"  {notes[x['format']]}"
        print(line, file=out)
    bpn = dense / s["nnz"] if s["nnz"] else float("nan")
    print(f"{'dense':<{w}}  {dense:>14,}  {bpn:>9.3f}  {1.0:>12.4g}", file=out)


def _json_target(args) -> str | None:
    """``--json``'s PATH ("-": stdout), checked before any work: a .json file in an
    existing folder (so a MATRIX taken for PATH is never overwritten)."""
    path = args.json
    if path is None or path == "-":
        return path
    folder = os.path.dirname(os.path.abspath(path))
    if not path.endswith(".json"):
        raise OptionError(problem("--json", "a PATH ending in .json, or none (stdout)", repr(path),
                                  "name a .json file, or put --json after MATRIX"))
    if not os.path.isdir(folder):
        raise OptionError(problem("--json", "a path in an existing folder", repr(path),
                                  f"create {folder} first"))
    return path


def _write_json(path: str, doc: dict, out) -> None:
    from .experiment import to_json  # noqa: PLC0415

    text = to_json(doc)
    if path == "-":
        out.write(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        raise OptionError(problem("--json", "a writable path", f"{path!r} ({exc})")) from None
    print(f"wrote {path}", file=out)


def _run_metadata() -> dict:
    from .runinfo import run_metadata  # noqa: PLC0415  (imports numba.cuda)

    return run_metadata()


def summary(s: dict, sizes: list[dict], dtype, rows: list[dict] | None = None) -> dict:
    """The smallest format and the fastest method for the matrix (``s``: its
    :func:`matrix_stats`; ``sizes``: :func:`format_sizes`; ``rows``: ``bench``'s timing rows,
    None or empty where nothing was timed).

    ``smallest``/``smallest_bytes`` and ``next``/``next_bytes`` (the runner-up; None where
    fewer formats encoded it) over every format that encoded the matrix; ``bytes``: format
    -> bytes of those formats. ``fastest``: ``basis`` ``"measured"`` (the timed method with
    the least median time among those that passed their check: ``method``, ``median_us``,
    ``next``, ``next_us``) or else ``"predicted"`` (the faster of MACKO and CSR-vector as the
    committed GPU runs predict it, :func:`spmvlab.analysis.crossover.predict`, only for a
    matrix of the kind they measured: ``method`` ``"macko"``/``"csr"``) or ``"none"`` (no
    prediction; ``method`` None); ``reason`` says which crossover or why none."""
    from .analysis.crossover import predict  # noqa: PLC0415

    by = {x["format"]: x["nbytes"] for x in sizes if "error" not in x}
    first, second = (sorted(by, key=by.get) + [None, None])[:2]
    out = dict(smallest=first, smallest_bytes=by.get(first), next=second,
               next_bytes=by.get(second), bytes=by)
    timed = sorted((r for r in rows or () if r.get("check_passed") and r.get("median_us")),
                   key=lambda r: r["median_us"])
    if timed:
        out["fastest"] = dict(basis="measured", method=timed[0]["method"],
                              median_us=timed[0]["median_us"],
                              next=timed[1]["method"] if len(timed) > 1 else None,
                              next_us=timed[1]["median_us"] if len(timed) > 1 else None)
    else:
        pred = predict(s, np.dtype(dtype).name)
        out["fastest"] = dict(basis="predicted" if pred["faster"] else "none",
                              method=pred["faster"], reason=pred["reason"])
    return out


def _summary_lines(v: dict) -> list[tuple[str, str]]:
    """``summary``'s two lines: the smallest format, and the fastest method measured or the
    faster of MACKO and CSR-vector predicted (or why there is no prediction)."""
    if v["smallest"] is None:
        rows = [("smallest", "none: no format encoded the matrix")]
    elif v["next"] is None:
        rows = [("smallest", f"{v['smallest']} {v['smallest_bytes']:,} bytes (the only format "
                             "encoded)")]
    else:
        rows = [("smallest", f"{v['smallest']} {v['smallest_bytes']:,} bytes; next {v['next']} "
                             f"{v['next_bytes']:,} bytes "
                             f"({v['next_bytes'] / v['smallest_bytes']:.2f}x); over the "
                             f"{len(v['bytes'])} formats that encoded it")]
    f = v["fastest"]
    if f["basis"] == "measured":
        text = f"{f['method']} {f['median_us']:.2f} us median"
        if f["next"] is not None:
            text += f"; next {f['next']} {f['next_us']:.2f} us"
        rows.append(("fastest (measured)", text + " (timed here, methods that passed their check)"))
    elif f["basis"] == "predicted":
        name = {"macko": "MACKO", "csr": "CSR-vector"}[f["method"]]
        rows.append(("faster (predicted)", f"{name}, of MACKO and CSR-vector: {f['reason']}; "
                                           "`bench` on a GPU times this matrix"))
    else:
        rows.append(("faster (predicted)", f"no prediction of MACKO vs CSR-vector: {f['reason']}"))
    return rows


def cmd_stats(args, out) -> int:
    """Structure of MATRIX (its values as stored in --dtype) and its bytes in every format."""
    dt = np.dtype(args.dtype)
    json_path = _json_target(args)
    infos = formats.all_formats()
    options = _auto_options(_encode_options(args, infos), infos)
    A = _matrix(args, dt)
    s = matrix_stats(A)
    sizes = format_sizes(A, dt, infos=infos, options=options)
    _print_warnings(sizes, args.command)
    if json_path != "-":
        _print_table(_header(args, s, dt, sizes), out)
        print(file=out)
        _print_sizes(sizes, s, dt, out)
    summ = summary(s, sizes, dt)
    if json_path != "-":
        print(file=out)
        _print_table(_summary_lines(summ), out)
    if json_path is not None:
        config = dict(matrix=args.matrix, dtype=dt.name, prune=args.prune, lossy=args.lossy,
                      options=options)
        _write_json(json_path, dict(meta=_run_metadata(), command="stats", config=config,
                                    matrix=s, sizes=sizes, summary=summ), out)
    return 0


# --------------------------------------------------------------------------------------
# bench
# --------------------------------------------------------------------------------------

#: what ``bench`` times besides the formats' own kernels (those a product kind allows)
BASELINES = ("cublas", "cublas_sgemv", "cusparse", "cusparse_coo")
#: methods that multiply the dense matrix, and the most bytes bench lets that matrix take
DENSE_METHODS = ("cublas", "cublas_sgemv", "numba_dense")
DENSE_LIMIT_BYTES = 16 << 30
#: encodes per format; the best wall-clock time is reported
ENCODE_REPEATS = 3


def _split_list(text: str) -> list[str]:
    """'a,b[x=1,y=2],c' -> ['a', 'b[x=1,y=2]', 'c'] (commas inside brackets stay)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _selected_formats(text: str | None) -> list:
    if text is None:
        return formats.all_formats()
    names = _split_list(text)
    unknown = [n for n in names if n not in formats.names()]
    if unknown or not names:
        raise OptionError(problem("--formats", f"comma-separated names among {formats.names()}",
                                  repr(text), "see spmvlab formats"))
    return [formats.get(n) for n in dict.fromkeys(names)]


def _untimed(info, dt: np.dtype, kind: str) -> str | None:
    """Why a format's kernel cannot time this product (None: it can)."""
    if not info.kernels:
        return "size only: no GPU kernel"
    if kind not in info.capabilities:
        return f"size only: no {'SpMM' if kind == 'spmm' else 'SpMV'} kernel"
    if not info.supports_dtype(dt):
        return f"size only: kernels take {', '.join(info.kernel_dtypes)}, not {dt.name}"
    return None


def _format_spec(info, options: dict):
    """The format's default method with the encode options given, named after them."""
    from . import methods  # noqa: PLC0415

    opts = options.get(info.name)
    if not opts:
        return methods.resolve(info.name)
    label = f"{info.name}[{','.join(f'{k}={v!r}' for k, v in opts.items())}]"
    return methods.format_method(info.name, label, options=opts)


def _timed_specs(args, infos, options: dict, dt: np.dtype, kind: str) -> list:
    """The methods to time: ``--methods`` (a plain format name gets the encode options
    given), else every format kernel that takes this product and the baselines."""
    from . import methods  # noqa: PLC0415

    if args.methods is None:
        specs = [_format_spec(i, options) for i in infos if _untimed(i, dt, kind) is None]
        return specs + [methods.resolve(b) for b in BASELINES if kind in methods.resolve(b).kinds]
    names = _split_list(args.methods)
    if not names:
        raise OptionError(problem("--methods", f"comma-separated names among {methods.names()}",
                                  repr(args.methods)))
    specs = []
    for n in dict.fromkeys(names):
        try:
            specs.append(_format_spec(formats.get(n), options) if n in formats.names()
                         else methods.resolve(n))
        except OptionError as exc:
            raise OptionError(problem("--methods", f"names among {methods.names()} or "
                                      "FORMAT[key=value,...]", repr(n),
                                      str(exc) if "[" in n else None)) from None
    return specs


def _time(A, dt: np.dtype, specs: list, args) -> tuple[dict, list[dict]]:
    """(device copy bandwidth, one results row per method): ``spmvlab.methods`` on the GPU."""
    from . import bench, methods  # noqa: PLC0415
    from .experiment import progress  # noqa: PLC0415

    copy = bench.copy_bandwidth()
    p = methods.Problem.make(A, dt, k=args.k)
    dense = p.shape[0] * p.shape[1] * dt.itemsize
    rows = []
    for spec in progress(specs, desc="time"):
        if spec.name in DENSE_METHODS and dense > DENSE_LIMIT_BYTES:
            rows.append(dict(method=spec.name, kind=p.kind, k=p.k, dtype=dt.name,
                             shape=list(p.shape), nnz=int(p.A.nnz),
                             error=f"skipped: the dense matrix takes {dense / 2**30:.1f} GiB, "
                                   f"over bench's {DENSE_LIMIT_BYTES / 2**30:.0f} GiB"))
            continue
        rows += methods.measure_problem(p, [spec], reps=args.reps, keep_going=True)
    return copy, methods.add_speedups(rows)


TIMING_COLUMNS = [("method", "method", ""), ("check_passed", "ok", ""),
                  ("median_us", "median us", ".2f"), ("p10_us", "p10 us", ".2f"),
                  ("p90_us", "p90 us", ".2f"), ("tb_s", "TB/s", ".3f"),
                  ("speedup_vs_cublas", "x cuBLAS", ".2f"),
                  ("speedup_vs_cusparse", "x cuSPARSE", ".2f"),
                  ("format_bytes", "matrix bytes", ",")]


def _device_line(copy: dict | None) -> tuple[str, str]:
    if copy is None:
        return ("timing", "no CUDA GPU (numba CUDA simulator): sizes and encode times only, "
                          "no SpMV times")
    name = dict(_backend_lines()).get("backend", "CUDA GPU")
    return ("device", f"{name}; device-to-device copy {copy['tb_s']:.2f} TB/s (read + write)")


def cmd_bench(args, out) -> int:
    """Sizes and encode times of MATRIX in each format; on a GPU also each format's SpMV
    (SpMM with --k) time against the vendor baselines."""
    from .experiment import gpu_available  # noqa: PLC0415

    dt = np.dtype(args.dtype)
    json_path = _json_target(args)
    infos = _selected_formats(args.formats)
    options = _auto_options(_encode_options(args, infos), infos)
    kind = "spmv" if args.k is None else "spmm"
    specs = _timed_specs(args, infos, options, dt, kind)
    A = _matrix(args, dt)
    s = matrix_stats(A)
    sizes = format_sizes(A, dt, infos=infos, options=options, repeats=ENCODE_REPEATS,
                         progress=True)
    _print_warnings(sizes, args.command)
    notes = {i.name: why for i in infos if (why := _untimed(i, dt, kind))}
    for x in sizes:
        x["note"] = notes.get(x["format"])
    copy, rows = _time(A, dt, specs, args) if gpu_available() else (None, [])
    product = "SpMV (y = A x)" if kind == "spmv" else f"SpMM (Y = A X, {args.k} columns)"
    device = _device_line(copy)
    summ = summary(s, sizes, dt, rows)
    if json_path != "-":
        head = _header(args, s, dt, sizes)
        head.append(("encode", f"fast encoders, best of {ENCODE_REPEATS} (wall clock)"))
        head.append(device)
        if copy is not None:
            head.append(("timed", f"{product}, {args.reps} calls each, L2 flushed, median"))
        _print_table(head, out)
        print(file=out)
        _print_sizes(sizes, s, dt, out, notes)
        if copy is not None:
            print(file=out)
            print(format_table([r for r in rows if "error" not in r], TIMING_COLUMNS), file=out)
            for r in rows:
                if "error" in r:
                    print(f"{r['method']}: not timed: {' '.join(r['error'].split())}", file=out)
        print(file=out)
        _print_table(_summary_lines(summ), out)
    elif copy is None:
        print(f"spmvlab bench: {device[1]}", file=sys.stderr)
    if json_path is not None:
        config = dict(matrix=args.matrix, dtype=dt.name, prune=args.prune, lossy=args.lossy,
                      options=options, formats=[i.name for i in infos], kind=kind, k=args.k,
                      methods=[sp.name for sp in specs], reps=args.reps,
                      encode_repeats=ENCODE_REPEATS)
        _write_json(json_path, dict(meta=_run_metadata(), command="bench", config=config,
                                    matrix=s, sizes=sizes, gpu=copy is not None,
                                    timing_note=None if copy is not None else device[1],
                                    copy_bandwidth=copy, rows=rows, summary=summ), out)
    return 0


# --------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------


def _count(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, received {text!r}")
    return v


def _delta_bits(text: str):
    """argparse type: 'auto' or an integer (the registry checks the value)."""
    try:
        return "auto" if text == "auto" else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 1, 2, 4, 8 or auto, received {text!r}") from None


def _fraction(text: str) -> float:
    """argparse type: a number in [0, 1]."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1] (0.75 zeroes 75% of "
                                         f"every row), received {text!r}")
    return v


def _matrix_args(p) -> None:
    """MATRIX and the flags stats and bench share."""
    p.add_argument("matrix", metavar="MATRIX",
                   help="a .mtx/.mtx.gz/.npy file, a SuiteSparse name (HB/bcsstk13) "
                        "or a weights name")
    p.add_argument("--dtype", default="float32", choices=formats.ALL_DTYPES,
                   help="value dtype the matrix is stored in (default float32)")
    p.add_argument("--lossy", action="store_true",
                   help="accept values that overflow (stored as +-inf) or underflow (zeros "
                        "dropped, subnormals kept) in --dtype instead of failing")
    p.add_argument("--prune", type=_fraction, metavar="SPARSITY",
                   help="zero this fraction of every row, smallest magnitudes first "
                        "(dense .npy files and weights only)")
    p.add_argument("--delta-bits", type=_delta_bits, metavar="B",
                   help="MACKO's bits per column step, 1, 2, 4 or 8 (the same as --option "
                        "delta_bits=B; default 'auto': the width that stores the fewest bytes)")
    p.add_argument("--option", action="append", metavar="[FORMAT.]NAME=VALUE",
                   help="an encode option (repeatable), for every format that has NAME or "
                        "for FORMAT only; spmvlab formats lists them")
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="write the results and run metadata as JSON to PATH (a .json file) "
                        "or, with no PATH, to stdout instead of the tables")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="spmvlab", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           parser_class=_Parser)
    sub.add_parser("info", help="backend, package versions and data available").set_defaults(
        func=cmd_info)
    sub.add_parser("formats", help="registered formats and their options").set_defaults(
        func=cmd_formats)
    st = sub.add_parser("stats", help="structure of a matrix and its bytes in every format")
    _matrix_args(st)
    st.set_defaults(func=cmd_stats)
    be = sub.add_parser("bench", help="bytes and encode time per format; on a GPU also "
                                      "SpMV/SpMM times against cuBLAS and cuSPARSE")
    _matrix_args(be)
    be.add_argument("--formats", metavar="LIST",
                    help=f"comma-separated formats to encode and time (default all: "
                         f"{','.join(formats.names())})")
    be.add_argument("--methods", metavar="LIST",
                    help="comma-separated methods to time instead of the formats' defaults and "
                         f"the baselines {','.join(BASELINES)} (any spmvlab.methods name, e.g. "
                         "csr_scalar or macko[prefetch=0]; dense baselines are skipped above "
                         f"{DENSE_LIMIT_BYTES >> 30} GiB)")
    be.add_argument("--k", type=_count, metavar="N",
                    help="time SpMM with N right-hand sides instead of SpMV")
    be.add_argument("--reps", type=_count, default=60, metavar="R",
                    help="timed calls per method on a GPU (default 60; the median is reported)")
    be.set_defaults(func=cmd_bench)
    p.commands = sub.choices
    return p


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:        # reported by the command's own parser, so its --help is the one named
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
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
