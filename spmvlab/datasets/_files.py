"""Reading matrix files a user names: Matrix Market (``.mtx``, ``.mtx.gz``) and ``.npy``.

Nothing in a file is trusted. Its header is read and checked first (the banner, the sizes it
declares), what honouring it would allocate is computed and compared with the memory limit
(``reference._common.check_size``), and only then is the body read. A file that is not what
its name says, is cut short or declares more than it holds raises :class:`DatasetError`
naming the file; one that would need more memory than the limit raises ``SizeLimitError``.
"""
from __future__ import annotations

import dataclasses
import gzip
import math
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from reference._common import canonical_csr, check_size, problem, value_dtype

from ..errors import DatasetError

__all__ = ["MtxHeader", "mtx_header", "read_mtx", "read_npy"]

#: the layouts, fields and symmetries of the Matrix Market banner
MTX_LAYOUTS = ("coordinate", "array")
MTX_FIELDS = ("real", "double", "integer", "complex", "pattern")
MTX_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
#: the comment lines read before the size line, at most (SuiteSparse files have a few dozen)
MTX_MAX_HEADER_BYTES = 1 << 24
#: the fewest bytes one entry takes in the body: "1 1\n" (coordinate), "0\n" (array)
_MIN_ENTRY_BYTES = {"coordinate": 4, "array": 2}
#: bytes scipy's reader holds per entry of a coordinate file: row and column (int64), value
_ENTRY_BYTES = {"real": 24, "double": 24, "integer": 24, "pattern": 24, "complex": 32}


@dataclasses.dataclass(frozen=True)
class MtxHeader:
    """What a Matrix Market file declares before its body."""

    layout: str          # "coordinate" or "array"
    field: str           # "real", "integer", "complex", "pattern"
    symmetry: str        # "general", "symmetric", "skew-symmetric", "hermitian"
    shape: tuple         # (rows, cols)
    entries: int         # lines of the body: listed entries (coordinate) or values (array)
    body_offset: int     # bytes before the body (decompressed)

    @property
    def stored_entries(self) -> int:
        """Entries of the whole matrix at most (a symmetric file lists one triangle)."""
        return self.entries * (1 if self.symmetry == "general" else 2)

    def bytes_needed(self) -> int:
        """What reading it allocates, about: scipy's arrays and the CSR row pointers."""
        rows, cols = self.shape
        if self.layout == "array":
            return rows * cols * (16 if self.field == "complex" else 8) + 8 * (rows + 1)
        return self.stored_entries * _ENTRY_BYTES[self.field] + 8 * (rows + 1)


def _open(path: Path):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def _not_mtx(path: Path, received: str) -> DatasetError:
    return DatasetError(problem(
        f"file {path}", "a Matrix Market file (first line '%%MatrixMarket matrix coordinate "
        "real general' or similar, then comment lines, then the size line)", received,
        "check that the file is a Matrix Market export and not another file renamed .mtx"))


def _preview(raw: bytes) -> str:
    return repr(raw[:40]) + ("..." if len(raw) > 40 else "")


def mtx_header(path: Path) -> MtxHeader:
    """The banner and size line of a ``.mtx``/``.mtx.gz`` file, checked (reads only the
    header). :class:`DatasetError` for anything that is not a Matrix Market header."""
    path = Path(path)
    try:
        with _open(path) as f:
            banner = f.readline(1024)
            words = banner.decode("ascii", "replace").split()
            if not banner.lower().startswith(b"%%matrixmarket"):
                raise _not_mtx(path, f"a file beginning with {_preview(banner)}")
            if (len(words) != 5 or words[1].lower() != "matrix" or words[2].lower() not in MTX_LAYOUTS
                    or words[3].lower() not in MTX_FIELDS or words[4].lower() not in MTX_SYMMETRIES):
                raise _not_mtx(path, f"the banner {_preview(banner)} (layouts {MTX_LAYOUTS}, "
                                     f"fields {MTX_FIELDS}, symmetries {MTX_SYMMETRIES})")
            layout, field, symmetry = (w.lower() for w in words[2:])
            offset = len(banner)
            while True:
                line = f.readline(1 << 16)
                offset += len(line)
                if not line:
                    raise _not_mtx(path, "a header with no size line (the file ends first)")
                if offset > MTX_MAX_HEADER_BYTES:
                    raise _not_mtx(path, f"no size line in its first {MTX_MAX_HEADER_BYTES} bytes")
                text = line.strip()
                if text and not text.startswith(b"%"):
                    break
    except (OSError, EOFError) as exc:        # gzip: not a gzip file, a cut stream
        raise DatasetError(problem(f"file {path}", "a readable Matrix Market file",
                                   f"unreadable ({exc})")) from exc
    want = 3 if layout == "coordinate" else 2
    parts = text.split()
    if len(parts) != want or not all(p.isdigit() for p in parts):
        raise _not_mtx(path, f"the size line {_preview(text)} (expected {want} non-negative "
                             f"integers for a {layout} file: rows cols{' entries' if want == 3 else ''})")
    rows, cols = int(parts[0]), int(parts[1])
    entries = int(parts[2]) if want == 3 else rows * cols
    if symmetry != "general" and rows != cols:
        raise _not_mtx(path, f"a {symmetry} {rows} x {cols} matrix (symmetric ones are square)")
    if entries > rows * cols:
        raise _not_mtx(path, f"{entries:,} entries in a {rows:,} x {cols:,} matrix (more than "
                             "it has places)")
    return MtxHeader(layout=layout, field=field, symmetry=symmetry, shape=(rows, cols),
                     entries=entries, body_offset=offset)


def _ends_in_newline(path: Path) -> bool:
    """Whether the (decompressed) file ends in a newline or is empty. A truncated file
    usually does not: its last line is cut. scipy's reader then takes a cut number as a
    different value, or (scipy 1.17, a number cut after its 'E') crashes the interpreter."""
    if str(path).endswith(".gz"):
        last = b""
        with gzip.open(path, "rb") as f:
            while chunk := f.read(1 << 22):
                last = chunk[-1:]
        return last in (b"", b"\n")
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_mtx(path: Path, dtype, lossy: bool = False, fix: str | None = None) -> sp.csr_matrix:
    """A Matrix Market file as canonical CSR in ``dtype``: the header checked
    (:func:`mtx_header`), what it asks for compared with the memory limit and, for an
    uncompressed file, with what the file can hold; a file whose last line is cut refused;
    then scipy reads the body and ``canonical_csr`` checks and converts it. ``fix`` is the
    advice for a damaged file (default: export or copy it again)."""
    import scipy.io  # noqa: PLC0415  (keeps the module import cheap)

    path = Path(path)
    fix = fix or ("check that the file is complete (a copy or an export may have been cut "
                  "short) and export or copy it again")
    h = mtx_header(path)
    rows, cols = h.shape
    if not str(path).endswith(".gz"):
        room = (path.stat().st_size - h.body_offset) // _MIN_ENTRY_BYTES[h.layout]
        if h.entries > room:
            raise DatasetError(problem(
                f"file {path}", f"a body holding the {h.entries:,} entries its size line "
                f"declares ({rows:,} x {cols:,})", f"room for at most {room:,} in "
                f"{path.stat().st_size:,} bytes", f"{fix}; or correct the size line"))
    check_size(h.bytes_needed(), f"file {path}",
               f"a header declaring a {rows:,} x {cols:,} {h.layout} matrix with "
               f"{h.entries:,} entries", "read a smaller matrix, or check the size line")
    try:
        if not _ends_in_newline(path):
            raise DatasetError(problem(f"file {path}", "a Matrix Market file ending in a newline",
                                       "one whose last line is cut (truncated?)",
                                       f"{fix}; a complete file only missing its final "
                                       "newline can be fixed by adding it"))
        M = scipy.io.mmread(str(path), spmatrix=False)   # a sparse array or an ndarray
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(problem(f"file {path}", "a Matrix Market file", f"unreadable ({exc})",
                                   fix)) from exc
    return canonical_csr(M, dtype=value_dtype(dtype), lossy=lossy)


def _npy_header(f, path: Path):
    """(shape, fortran_order, dtype) of an open ``.npy`` file, at the start of its data."""
    magic = f.read(6)
    if magic.startswith(b"PK\x03\x04"):
        raise DatasetError(problem(
            f"file {path}", "a .npy file holding one array", "a zip archive (an .npz saved "
            "under a .npy name?)", "load it with np.load(path) and np.save the one array "
            "you want, or pass the .npz's arrays yourself"))
    if magic != b"\x93NUMPY":
        raise DatasetError(problem(f"file {path}", "a .npy file (it begins with b'\\x93NUMPY')",
                                   f"a file beginning with {_preview(magic + f.read(34))}",
                                   "save the array with numpy.save"))
    f.seek(0)
    try:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"format version {version}, this reader takes 1.0 and 2.0")
        return read(f)
    except ValueError as exc:
        raise DatasetError(problem(f"file {path}", "a .npy header numpy can read",
                                   f"an unreadable one ({exc})",
                                   "save the array again with numpy.save")) from exc


def read_npy(path: Path) -> np.ndarray:
    """The array of a ``.npy`` file: its header read and checked first (a numeric dtype; the
    data it declares present in the file, compared with the memory limit), then the data.
    :class:`DatasetError` for a zip, a foreign file, an object array or a cut file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            shape, fortran, dtype = _npy_header(f, path)
            start = f.tell()
            if dtype.hasobject or dtype.kind not in "fiubc":
                raise DatasetError(problem(f"file {path}", "a numeric array",
                                           f"dtype {dtype}", "save a float array"))
            nbytes = math.prod(shape) * dtype.itemsize
            held = f.seek(0, os.SEEK_END) - start
            if nbytes > held:
                raise DatasetError(problem(
                    f"file {path}", f"the {nbytes:,} bytes of data its header declares "
                    f"(shape {shape}, {dtype})", f"{held:,} bytes after the header (truncated?)",
                    "save the array again with numpy.save"))
            check_size(nbytes, f"file {path}", f"a header declaring shape {shape} of {dtype}",
                       "load a smaller array")
            f.seek(start)
            arr = np.fromfile(f, dtype=dtype, count=math.prod(shape))
    except OSError as exc:
        raise DatasetError(problem(f"file {path}", "a readable .npy file",
                                   f"unreadable ({exc})")) from exc
    return arr.reshape(shape, order="F" if fortran else "C")

