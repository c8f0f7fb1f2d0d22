"""Save and load encoded matrices: one versioned ``.npz`` layout for every registered format.

    from spmvlab import io
    io.save(M, "w.npz")              # a matrix of any registered format
    M = io.load("w.npz")             # the same matrix, every byte of it, or a typed error

Layout version 1 (:data:`LAYOUT_VERSION`): an uncompressed zip as ``numpy.savez`` writes it,
holding

* ``__spmvlab__.npy``: uint8, the UTF-8 JSON header ``{"spmvlab": "encoded sparse matrix",
  "layout": 1, "format": "<name>", "shape": [rows, cols], "options": {...}, "arrays":
  {"<name>": {"dtype": "<f2", "shape": [n]}, ...}, "checksum": <the matrix's CRC-32>}``;
* ``<name>.npy`` for every array of the format (``SparseFormat.array_names()``).

``load`` trusts nothing in the file. It opens it with ``np.load(..., allow_pickle=False)``
and reads every member itself: the member must be stored uncompressed, its .npy header must
declare exactly the dtype (from an allow-list: the value dtypes, int32, int64, uint8, uint16,
uint32) and shape the JSON header declares, its data must fill that shape exactly (nothing
is allocated beyond what the file holds), and the zip's CRC-32 of the member is checked. It then builds
the matrix with the stored checksum and validates it fully (cheap, expensive, checksum)
before returning it. A damaged, truncated, foreign or other-version file raises
:class:`StreamError`; a file whose matrix is inconsistent raises :class:`FormatError` (a
:class:`ChecksumError` where only the checksum shows it). It never returns a matrix that
differs from the one saved (a flip in a zip timestamp, which nothing reads, changes nothing).
"""
from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np

from reference._common import (
    INDEX_DTYPES, VALUE_DTYPES, FormatError, SparseFormat, SpmvlabError, StreamError, check_size,
    problem, require_encoded,
)

from . import formats

__all__ = ["LAYOUT_VERSION", "save", "load"]

#: the layout this module writes and the only one it reads
LAYOUT_VERSION = 1
MAGIC = "encoded sparse matrix"
HEADER = "__spmvlab__"            # member holding the JSON header
MAX_HEADER_BYTES = 1 << 16
MAX_NPY_HEADER_BYTES = 1 << 16    # a member's .npy header, at most
#: dtypes an array in a file may have, by their .npy name
DTYPES = {d.str: d for d in (*VALUE_DTYPES, *INDEX_DTYPES,
                             *(np.dtype(u) for u in (np.uint8, np.uint16, np.uint32)))}
_HEADER_KEYS = {"spmvlab", "layout", "format", "shape", "options", "arrays", "checksum"}
_FIX = "save the matrix again with spmvlab.io.save"


def save(M: SparseFormat, file) -> None:
    """Write ``M`` (a matrix of any registered format) to ``file``: a path (written to a
    temporary file beside it, then renamed, so a crash leaves no partial file) or a binary
    file object. ``M`` is validated fully first: a file is written only if ``load`` would
    accept it."""
    require_encoded(M, SparseFormat, fix="encode it first, e.g. M = spmvlab.formats.get('csr').encode(A)")
    formats.get(M.format_name)                       # only registered formats can be loaded
    M.validate(expensive=True)
    arrays = dict(M.arrays())
    header = {"spmvlab": MAGIC, "layout": LAYOUT_VERSION, "format": M.format_name,
              "shape": [int(s) for s in M.shape], "options": M.options(),
              "arrays": {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()},
              "checksum": int(M.checksum)}
    text = json.dumps(header, sort_keys=True, default=lambda o: o.item() if isinstance(o, np.generic) else o)
    members = {HEADER: np.frombuffer(text.encode(), dtype=np.uint8), **arrays}
    if hasattr(file, "write"):
        np.savez(file, allow_pickle=False, **members)
        return
    path = os.fspath(file)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, allow_pickle=False, **members)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load(file, format: str | None = None) -> SparseFormat:
    """The matrix :func:`save` wrote to ``file`` (a path or a binary file object), validated
    fully; ``format``: the format it must hold (default: any registered format). Raises
    :class:`StreamError` for a damaged, truncated, foreign, other-version or other-format
    file and :class:`FormatError` for an inconsistent matrix; a missing file raises the
    usual ``FileNotFoundError``."""
    if hasattr(file, "read"):
        return _load(file, format, getattr(file, "name", "file"))
    with open(file, "rb") as fh:
        return _load(fh, format, os.fspath(file))


def _stream(name: str, expected: str, received, fix: str = _FIX) -> StreamError:
    return StreamError(problem(name, expected, received, fix))


def _load(fh, want: str | None, where: str) -> SparseFormat:
    try:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        npz = np.load(fh, allow_pickle=False)
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise _stream(where, "an .npz written by spmvlab.io.save", "a single .npy array")
        with npz:
            cls, doc = _read_header(npz.zip, want)
            declared = sum(DTYPES[d["dtype"]].itemsize * math.prod(d["shape"])
                           for d in doc["arrays"].values())
            if declared <= size:        # more than the file holds: the members say so below
                check_size(declared, where, f"a header declaring a {doc['format']} matrix "
                           f"of shape {doc['shape']}", "load a smaller matrix")
            arrays = {n: _read_member(npz.zip, n, DTYPES[d["dtype"]], tuple(d["shape"]), size)
                      for n, d in doc["arrays"].items()}
        M = cls(**arrays, shape=tuple(doc["shape"]), **doc["options"], checksum=doc["checksum"])
    except SpmvlabError:
        raise
    except Exception as exc:        # whatever a damaged file makes zipfile/numpy/json raise
        raise _stream(where, "an .npz written by spmvlab.io.save",
                      f"an unreadable file ({type(exc).__name__}: {exc})") from exc
    try:
        return M.validate(expensive=True)
    except FormatError as exc:
        raise type(exc)(f"{where}: {exc}") from exc


def _read_header(zf: zipfile.ZipFile, want: str | None):
    """(matrix class, header dict) from the JSON header, every key and value checked."""
    raw = _read_member(zf, HEADER, np.dtype(np.uint8), None, MAX_HEADER_BYTES)
    doc = json.loads(raw.tobytes().decode("utf-8"))
    if not isinstance(doc, dict) or set(doc) != _HEADER_KEYS or doc["spmvlab"] != MAGIC:
        raise _stream("header", f"a JSON object with the keys {sorted(_HEADER_KEYS)}", repr(doc)[:200])
    if type(doc["layout"]) is not int or doc["layout"] != LAYOUT_VERSION:
        raise _stream("header layout", f"version {LAYOUT_VERSION} (the one this spmvlab reads)",
                      repr(doc["layout"]), "load it with the spmvlab version that wrote it")
    name = doc["format"]
    if name not in formats.names():
        raise _stream("header format", f"one of {formats.names()}", repr(name))
    if want is not None and name != want:
        raise _stream("header format", f"{want!r} (asked for)", repr(name),
                      f"load it with format={name!r}, or without format=")
    cls = formats.get(name).matrix_class()
    _check(_is_dims(doc["shape"], 2), "header shape", "[rows, cols], two non-negative ints", doc["shape"])
    _check(isinstance(doc["options"], dict) and set(doc["options"]) == set(cls.option_names()),
           "header options", f"the options {sorted(cls.option_names())}", doc["options"])
    ck = doc["checksum"]
    _check(type(ck) is int and 0 <= ck < 2**32, "header checksum", "a CRC-32 (an int in [0, 2**32))", ck)
    arrays = doc["arrays"]
    _check(isinstance(arrays, dict) and set(arrays) == set(cls.array_names()), "header arrays",
           f"the arrays {sorted(cls.array_names())}", arrays)
    for n, d in arrays.items():
        _check(isinstance(d, dict) and set(d) == {"dtype", "shape"} and d["dtype"] in DTYPES
               and _is_dims(d["shape"]), f"header arrays.{n}",
               f"{{'dtype': one of {sorted(DTYPES)}, 'shape': a list of non-negative ints}}", d)
    members = {f"{n}.npy" for n in (HEADER, *arrays)}
    _check(set(zf.namelist()) == members, "members", sorted(members), sorted(zf.namelist()))
    return cls, doc


def _is_dims(v, ndim: int | None = None) -> bool:
    return (isinstance(v, list) and (ndim is None or len(v) == ndim)
            and all(type(e) is int and e >= 0 for e in v))


def _check(ok: bool, name: str, expected, received):
    if not ok:
        raise _stream(name, str(expected), repr(received)[:200])


def _read_member(zf: zipfile.ZipFile, name: str, dtype: np.dtype, shape, limit: int) -> np.ndarray:
    """Member ``<name>.npy`` as a read-only array: stored uncompressed, its .npy header
    declaring ``dtype`` and ``shape`` (None: any 1-D shape) in C order, at most ``limit``
    bytes of data, and exactly that many; the zip's CRC-32 is checked on the way (zipfile
    raises at the end of a member whose bytes do not match it)."""
    member = f"{name}.npy"
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise _stream(member, "a member of the file", "missing") from None
    _check(info.compress_type == zipfile.ZIP_STORED, f"{member} compression", "stored (none)",
           info.compress_type)
    _check(info.file_size <= limit + MAX_NPY_HEADER_BYTES, f"{member} size",
           f"at most {limit + MAX_NPY_HEADER_BYTES} bytes", info.file_size)
    with zf.open(info) as fp:
        version = np.lib.format.read_magic(fp)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        _check(read is not None, f"{member} .npy version", "1.0 or 2.0", version)
        got_shape, fortran, got_dtype = read(fp)
        ok_shape = len(got_shape) == 1 if shape is None else got_shape == shape
        _check(got_dtype == dtype and ok_shape and not fortran, f"{member} .npy header",
               f"dtype {dtype.str}, shape {shape if shape is not None else '(n,)'}, C order",
               (got_dtype.str, got_shape, "Fortran order" if fortran else "C order"))
        nbytes = dtype.itemsize * math.prod(got_shape)
        _check(nbytes <= limit, f"{member} data", f"at most {limit} bytes", nbytes)
        data = fp.read(nbytes)
        _check(len(data) == nbytes, f"{member} data", f"{nbytes} bytes", f"{len(data)} (truncated)")
        _check(fp.read(1) == b"", f"{member} data", "nothing after the array", "more bytes")
    return np.frombuffer(data, dtype=dtype).reshape(got_shape)
