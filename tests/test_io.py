"""spmvlab.io specifics: the layout, files rewritten with a valid zip but a wrong header
(version, format, shape, checksum, dtypes, members), foreign files, and what save refuses.
The shared suite (test_formats.py) runs the round trip for every format and the bit-flip and
truncation fuzz."""
import dataclasses
import io as _io
import json
import pickle
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import reference.macko as RM
from reference._common import ChecksumError, FormatError, NotEncodedError, StreamError
from spmvlab import io


@pytest.fixture
def M():
    return RM.encode(sp.random(5, 40, density=0.3, random_state=7, dtype=np.float32), delta_bits=2)


def _saved(M) -> bytes:
    buf = _io.BytesIO()
    io.save(M, buf)
    return buf.getvalue()


def _members(data: bytes) -> dict:
    with np.load(_io.BytesIO(data), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _rewritten(data: bytes, edit_header=None, **members) -> _io.BytesIO:
    """``data`` re-saved as a valid zip (fresh zip CRCs) with the JSON header edited by
    ``edit_header(doc)`` and members replaced or added."""
    m = _members(data)
    doc = json.loads(m[io.HEADER].tobytes())
    if edit_header:
        edit_header(doc)
    m[io.HEADER] = np.frombuffer(json.dumps(doc).encode(), np.uint8)
    m.update(members)
    buf = _io.BytesIO()
    np.savez(buf, **m)
    buf.seek(0)
    return buf


def test_layout_is_plain_npz_with_a_json_header(M, tmp_path):
    path = tmp_path / "m.bin"                      # the name is kept as given (no .npz added)
    io.save(M, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin"]      # no temporary left
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted([io.HEADER, "values", "deltas", "row_ptr"])
        doc = json.loads(npz[io.HEADER].tobytes())
        np.testing.assert_array_equal(npz["deltas"], M.deltas)
    assert doc == {"spmvlab": io.MAGIC, "layout": io.LAYOUT_VERSION, "format": "macko",
                   "shape": [5, 40], "options": {"delta_bits": 2}, "checksum": M.checksum,
                   "arrays": {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in M.arrays()}}
    L = io.load(path, format="macko")
    assert L.checksum == M.checksum and L.deltas.tobytes() == M.deltas.tobytes()


@pytest.mark.parametrize("edit, exc, words", [
    (lambda d: d.update(layout=2), StreamError, "layout: expected version 1"),
    (lambda d: d.update(layout="1"), StreamError, "layout"),
    (lambda d: d.update(format="nope"), StreamError, "format: expected one of"),
    (lambda d: d.update(spmvlab="something else"), StreamError, "header"),
    (lambda d: d.pop("checksum"), StreamError, "header"),
    (lambda d: d.update(options={}), StreamError, "options"),
    (lambda d: d.update(shape=[5, -40]), StreamError, "shape"),
    (lambda d: d.update(checksum=2**40), StreamError, "checksum"),
    (lambda d: d["arrays"]["values"].update(dtype="|O"), StreamError, "arrays.values"),
    (lambda d: d["arrays"]["values"].update(dtype="<f8"), StreamError, "values.npy .npy header"),
    (lambda d: d["arrays"]["values"].update(shape=[8]), StreamError, "values.npy .npy header"),
    (lambda d: d.update(shape=[5, 41]), ChecksumError, "checksum"),
    (lambda d: d.update(shape=[5, 30]), FormatError, "decoded columns"),
    (lambda d: d.update(options={"delta_bits": 4}), FormatError, "deltas.size"),
    (lambda d: d.update(checksum=(d["checksum"] + 1) % 2**32), ChecksumError, "checksum"),
])
def test_a_wrong_header_in_a_valid_zip_raises(M, edit, exc, words):
    with pytest.raises(exc, match=words):
        io.load(_rewritten(_saved(M), edit))


def test_wrong_members_raise(M):
    data = _saved(M)
    with pytest.raises(StreamError, match="members"):
        io.load(_rewritten(data, extra=np.zeros(3)))
    with pytest.raises(ChecksumError):            # same dtype and shape, other bytes
        io.load(_rewritten(data, values=-M.values))
    with pytest.raises(StreamError, match=".npy header"):
        io.load(_rewritten(data, row_ptr=M.row_ptr.astype(">i4")))
    compressed = _io.BytesIO()
    np.savez_compressed(compressed, **_members(data))
    compressed.seek(0)
    with pytest.raises(StreamError, match="compression"):
        io.load(compressed)


def test_a_huge_declared_shape_allocates_nothing(M):
    """JSON and .npy headers agree on 10**12 values, the data is 8 bytes: refused before
    anything of that size is allocated."""
    data = _saved(M)
    buf = _io.BytesIO()
    with zipfile.ZipFile(_io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if info.filename == "values.npy":
                member = _io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    member, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
                dst.writestr("values.npy", member.getvalue() + bytes(8))
            elif info.filename == f"{io.HEADER}.npy":
                doc = json.loads(_members(data)[io.HEADER].tobytes())
                doc["arrays"]["values"]["shape"] = [10**12]
                member = _io.BytesIO()
                np.save(member, np.frombuffer(json.dumps(doc).encode(), np.uint8))
                dst.writestr(info.filename, member.getvalue())
            else:
                dst.writestr(info.filename, src.read(info.filename))
    buf.seek(0)
    with pytest.raises(StreamError, match="values.npy"):
        io.load(buf)


@pytest.mark.parametrize("content", [
    b"", b"not a zip file at all", b"PK\x03\x04" + bytes(40),
    pickle.dumps({"values": np.ones(3)}),
])
def test_foreign_files_raise(content):
    with pytest.raises(StreamError, match="spmvlab.io.save"):
        io.load(_io.BytesIO(content))


def test_a_single_npy_array_raises(M):
    buf = _io.BytesIO()
    np.save(buf, M.values)
    buf.seek(0)
    with pytest.raises(StreamError, match="a single .npy array"):
        io.load(buf)


def test_another_format_than_asked_raises(M):
    with pytest.raises(StreamError, match=r"format: expected 'csr' \(asked for\), received 'macko'"):
        io.load(_io.BytesIO(_saved(M)), format="csr")


def test_a_missing_file_raises_the_usual_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        io.load(tmp_path / "missing.npz")


def test_save_refuses_what_load_would_refuse(M, tmp_path):
    path = tmp_path / "bad.npz"
    with pytest.raises(ChecksumError):
        io.save(dataclasses.replace(M, values=-M.values), path)
    with pytest.raises(FormatError, match="shape"):
        io.save(dataclasses.replace(M, shape=(5,), checksum=None), path)
    with pytest.raises(NotEncodedError, match="encode it first"):
        io.save(sp.random(3, 3, density=0.5, format="csr"), path)
    assert not path.exists()
