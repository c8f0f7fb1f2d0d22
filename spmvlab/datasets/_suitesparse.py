"""SuiteSparse matrices: local names, name resolution, ``.mtx`` reading, download into the cache.

A module-private name: the package's ``suitesparse`` is the function of that name.
"""
from __future__ import annotations

import os
import re
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from reference._common import problem

from ..errors import DatasetError
from ._files import read_mtx
from ._paths import _data_subdir, cache_dir

#: Base URL of the SuiteSparse collection's Matrix Market tarballs (override with
#: ``$SPMVLAB_SUITESPARSE_URL``): ``<base>/<Group>/<Name>.tar.gz``.
SUITESPARSE_URL = "https://suitesparse-collection-website.herokuapp.com/MM"

_MTX_SUFFIXES = (".mtx.gz", ".mtx")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.+\-]+/[A-Za-z0-9_.+\-]+$")

# the opener the download uses; tests replace it so no network is touched
_urlopen = urllib.request.urlopen


def _strip_mtx(fname: str) -> str | None:
    for suf in _MTX_SUFFIXES:
        if fname.endswith(suf):
            return fname[: -len(suf)]
    return None


def _suitesparse_dirs() -> list[Path]:
    dirs = []
    local = _data_subdir("suitesparse")
    if local is not None:
        dirs.append(local)
    cached = cache_dir() / "suitesparse"
    if cached.is_dir():
        dirs.append(cached)
    return dirs


def _suitesparse_files() -> dict[str, Path]:
    """'Group/Name' -> file, local data first, then the download cache."""
    found: dict[str, Path] = {}
    for d in _suitesparse_dirs():
        for f in sorted(d.iterdir()):
            stem = _strip_mtx(f.name)
            if stem and "__" in stem:
                group, _, name = stem.partition("__")
                found.setdefault(f"{group}/{name}", f)
    return found


def suitesparse_names() -> list[str]:
    """Sorted 'Group/Name' of the SuiteSparse matrices available without a download."""
    return sorted(_suitesparse_files())


def _normalise_suitesparse(name: str) -> str:
    """'HB/bcsstk13', 'HB__bcsstk13', 'HB__bcsstk13.mtx', 'HB__bcsstk13.mtx.gz' -> 'HB/bcsstk13'."""
    n = str(name).strip()
    n = _strip_mtx(n) or n
    if "/" not in n and "__" in n:
        group, _, rest = n.partition("__")
        n = f"{group}/{rest}"
    return n


def _resolve_suitesparse(name: str) -> tuple[str, Path | None]:
    """(canonical 'Group/Name', local file or None). A bare 'Name' matches if unique."""
    files = _suitesparse_files()
    n = _normalise_suitesparse(name)
    if n in files:
        return n, files[n]
    if "/" not in n:
        hits = [k for k in files if k.split("/", 1)[1] == n]
        if len(hits) == 1:
            return hits[0], files[hits[0]]
    return n, None


def _in_download_cache(path: Path) -> bool:
    """True for a file spmvlab downloaded (it can be deleted and downloaded again)."""
    try:
        return Path(path).resolve().is_relative_to((cache_dir() / "suitesparse").resolve())
    except OSError:
        return False


def _read_mtx(path: Path, dtype, lossy: bool = False) -> sp.csr_matrix:
    fix = f"delete {path} to download it again" if _in_download_cache(path) else None
    return read_mtx(path, dtype, lossy, fix)


def suitesparse(name: str, dtype=np.float64, download: bool = True,
                lossy: bool = False) -> sp.csr_matrix:
    """A SuiteSparse matrix as canonical CSR, by name ('HB/bcsstk13' or a file stem).

    Looked up in ``<data_dir>/suitesparse`` (files ``Group__Name.mtx[.gz]``), then in the
    download cache; otherwise downloaded (``download=True``) with
    :func:`download_suitesparse`. Symmetric files are expanded to the full matrix, pattern
    matrices get the value 1.0, explicit zeros are dropped. Values that overflow or underflow
    in ``dtype`` raise ``LossyConversionError`` unless ``lossy=True`` (``canonical_csr``).
    """
    full, path = _resolve_suitesparse(name)
    if path is None:
        if not (download and _NAME_RE.match(full)):
            raise DatasetError(problem(
                "suitesparse name", "'Group/Name' of a SuiteSparse matrix", repr(name),
                f"use one of {suitesparse_names()} or a collection name like 'HB/bcsstk17'"))
        path = download_suitesparse(full)
    return _read_mtx(path, dtype, lossy)


def _progress(label: str, done: int, total: int | None, stream) -> None:
    mb = done / 1e6
    if total:
        msg = f"\rdownloading {label}: {mb:.1f} / {total / 1e6:.1f} MB ({100 * done / total:3.0f}%)"
    else:
        msg = f"\rdownloading {label}: {mb:.1f} MB"
    stream.write(msg)
    stream.flush()


def download_suitesparse(name: str, progress: bool = True, timeout: float = 60.0) -> Path:
    """Download 'Group/Name' from the SuiteSparse collection into the cache; return the .mtx.

    Fetches ``<base>/<Group>/<Name>.tar.gz`` (base: ``$SPMVLAB_SUITESPARSE_URL`` or
    :data:`SUITESPARSE_URL`) with urllib, extracts ``<Name>.mtx`` to
    ``<cache_dir>/suitesparse/Group__Name.mtx`` and removes the tarball. A progress line goes
    to stderr. Raises :class:`DatasetError` when offline or the matrix does not exist.
    """
    full = _normalise_suitesparse(name)
    if not _NAME_RE.match(full):
        raise DatasetError(problem("suitesparse name", "'Group/Name'", repr(name),
                                   "e.g. 'HB/bcsstk17'"))
    group, mname = full.split("/")
    base = os.environ.get("SPMVLAB_SUITESPARSE_URL", SUITESPARSE_URL).rstrip("/")
    url = f"{base}/{group}/{mname}.tar.gz"
    dest_dir = cache_dir() / "suitesparse"
    target = dest_dir / f"{group}__{mname}.mtx"
    if target.is_file():
        return target
    manual = (f"check your connection, or download {url} by hand and put {mname}.mtx at "
              f"{target}, or set SPMVLAB_DATA")
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(problem("cache directory", "a writable directory", f"{dest_dir} ({exc})",
                                   "set SPMVLAB_CACHE to a writable folder")) from exc
    part = dest_dir / f"{group}__{mname}.tar.gz.part"
    stream = sys.stderr
    try:
        with _urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
            total = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
            total = int(total) if total and str(total).isdigit() else None
            done = 0
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
                if progress:
                    _progress(full, done, total, stream)
        if progress:
            stream.write("\n")
    except urllib.error.HTTPError as exc:
        part.unlink(missing_ok=True)
        what = "no such matrix in the collection" if exc.code == 404 else f"HTTP {exc.code}"
        raise DatasetError(problem(f"download of {full}", f"the tarball at {url}", what,
                                   "check the Group/Name spelling at https://sparse.tamu.edu"
                                   if exc.code == 404 else manual)) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise DatasetError(problem(f"download of {full}", f"the tarball at {url}",
                                   f"network error ({reason})", manual)) from exc
    try:
        with tarfile.open(part, "r:gz") as tar:
            member = next((m for m in tar.getmembers()
                           if m.isfile() and Path(m.name).name == f"{mname}.mtx"), None)
            if member is None:
                raise DatasetError(problem(f"tarball of {full}", f"a member {mname}.mtx",
                                           "none", manual))
            src = tar.extractfile(member)
            tmp = target.with_suffix(".mtx.tmp")
            with src, open(tmp, "wb") as out:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
            tmp.replace(target)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DatasetError(problem(f"tarball of {full}", "a .tar.gz archive",
                                   f"unreadable ({exc})", manual)) from exc
    finally:
        part.unlink(missing_ok=True)
    return target
