"""reference/codec (shared codec steps) and spmvlab/codec (their numba builds)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from reference import macko
from reference.codec import packing as P
from spmvlab import codec
from spmvlab._cuda import cuda

DELTA_BITS = macko.DELTA_BITS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORD = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}   # little-endian word of 8 codes


def random_codes(rng, b, n):
    return rng.integers(0, 1 << b, size=n, dtype=np.uint8)


def pack_one_by_one(set_code, codes, b):
    packed = np.zeros(codes.size * b // 8, dtype=np.uint8)
    for k, c in enumerate(codes):
        set_code(packed, k, int(c), b)
    return packed


# ---------------------------------------------------------------------------------------------
# the layout, pinned
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("b, codes, want", [
    (4, [1, 2, 3, 4, 5, 6, 7, 8], [0x21, 0x43, 0x65, 0x87]),
    (2, [1, 2, 3, 2, 0, 0, 0, 0], [0xB9, 0x00]),             # paper Fig. 3
    (1, [1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0], [0x81, 0x02]),
    (8, [0xAB, 0x01], [0xAB, 0x01]),
])
def test_layout_pinned(b, codes, want):
    codes = np.array(codes, dtype=np.uint8)
    assert pack_one_by_one(P.set_code, codes, b).tolist() == want
    assert pack_one_by_one(codec.njit(P.set_code), codes, b).tolist() == want
    if codes.size % 8 == 0:
        assert macko.pack_codes(codes, b).tolist() == want


@pytest.mark.parametrize("b", DELTA_BITS)
def test_offsets_match_the_per_byte_formula(b):
    """Entry k at bit b * (k % (8 // b)) of byte k // (8 // b), scalars and arrays alike."""
    k = np.arange(200)
    np.testing.assert_array_equal(P.code_byte(k, b), k // (8 // b))
    np.testing.assert_array_equal(P.code_shift(k, b), b * (k % (8 // b)))
    for kk in (0, 1, 7, 8, 9, 199):
        assert P.code_byte(kk, b) == kk // (8 // b)
        assert P.code_shift(kk, b) == b * (kk % (8 // b))
    assert P.codes_per_byte(b) == 8 // b and P.code_mask(b) == (1 << b) - 1


# ---------------------------------------------------------------------------------------------
# pure Python vs njit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("b", DELTA_BITS)
def test_scalar_functions_pure_equal_njit(b):
    rng = np.random.default_rng(b)
    ks = [int(k) for k in rng.integers(0, 1 << 40, size=50)] + [0, 1, 7, 8]
    for fn in (P.code_bit, P.code_byte, P.code_shift):
        jitted = codec.njit(fn)
        assert [fn(k, b) for k in ks] == [jitted(k, b) for k in ks], fn.__name__
    assert P.codes_per_byte(b) == codec.njit(P.codes_per_byte)(b)
    assert P.code_mask(b) == codec.njit(P.code_mask)(b)


@pytest.mark.parametrize("b", DELTA_BITS)
def test_set_get_pure_equal_njit_and_inverse(b):
    rng = np.random.default_rng(10 + b)
    codes = random_codes(rng, b, 256)
    packed = pack_one_by_one(P.set_code, codes, b)
    np.testing.assert_array_equal(packed, pack_one_by_one(codec.njit(P.set_code), codes, b))
    get_jit = codec.njit(P.get_code)
    got = [P.get_code(packed, k, b) for k in range(codes.size)]
    assert got == [get_jit(packed, k, b) for k in range(codes.size)] == codes.tolist()
    np.testing.assert_array_equal(P.get_code(packed, np.arange(codes.size), b), codes)


@pytest.mark.parametrize("b", DELTA_BITS)
def test_set_code_keeps_only_b_bits(b):
    n = 16 // b                                   # entries in two bytes
    want = [0] * n
    want[1] = (1 << b) - 1
    for fn in (P.set_code, codec.njit(P.set_code)):
        packed = np.zeros(2, dtype=np.uint8)
        fn(packed, 1, 0xFF, b)
        assert [P.get_code(packed, k, b) for k in range(n)] == want


@pytest.mark.parametrize("b", DELTA_BITS)
def test_word_code_reads_the_byte_layout(b):
    """Code j of the little-endian word i equals entry 8i + j of the bytes, in pure Python
    and njit, for the word as unsigned and as int64 (what the kernel loads)."""
    rng = np.random.default_rng(20 + b)
    codes = random_codes(rng, b, 64)
    codes[:8] = (1 << b) - 1                      # a word with its top bit set
    packed = macko.pack_codes(codes, b)
    words = packed.view(_WORD[b])
    word_jit = codec.njit(P.word_code)
    for i, word in enumerate(words):
        for j in range(8):
            want = P.get_code(packed, 8 * i + j, b)
            assert P.word_code(int(word), j, b) == want
            assert P.word_code(np.int64(word.astype(np.int64)), j, b) == want
            assert word_jit(np.int64(word.astype(np.int64)), j, b) == want


@pytest.mark.parametrize("b", DELTA_BITS)
def test_macko_pack_unpack_agree_with_shared_functions(b):
    rng = np.random.default_rng(30 + b)
    codes = random_codes(rng, b, 128)
    packed = macko.pack_codes(codes, b)
    np.testing.assert_array_equal(packed, pack_one_by_one(P.set_code, codes, b))
    M = macko.MackoMatrix(values=np.ones(codes.size, np.float32), deltas=packed,
                          row_ptr=np.array([0, codes.size], np.int32), shape=(1, 10_000),
                          delta_bits=b)
    np.testing.assert_array_equal(macko.unpack_codes(M), P.get_code(packed, np.arange(128), b))


# ---------------------------------------------------------------------------------------------
# the wrappers
# ---------------------------------------------------------------------------------------------


def test_wrappers_made_once_and_relinked():
    f = codec.njit(P.set_code)
    assert codec.njit(P.set_code) is f
    # shared callees resolve to their njit builds, not to the plain functions
    assert f.py_func.__globals__["code_byte"] is codec.njit(P.code_byte)
    assert P.set_code.__globals__["code_byte"] is P.code_byte     # the original is untouched
    with pytest.raises(TypeError):
        codec.njit(np.sum)


def test_importing_spmvlab_codec_imports_no_numba():
    code = ("import sys, spmvlab.codec, reference.codec.packing; "
            "sys.exit(1 if [m for m in sys.modules if m.split('.')[0] in ('numba', 'numba_cuda')]"
            " else 0)")
    env = dict(os.environ, PYTHONPATH=ROOT)
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env).returncode == 0


def test_reference_never_imports_numba():
    pattern = re.compile(r"^\s*(import|from)\s+numba", re.MULTILINE)
    for folder, _, files in os.walk(os.path.join(ROOT, "reference")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as fh:
                    assert not pattern.search(fh.read()), os.path.join(folder, name)


def test_device_builds_in_a_kernel():
    """word_code, get_code and set_code as device functions: one launch, 32 threads, one
    row per b; thread (i, j) reads code j both ways, thread (i, 0) also packs row i."""
    word_code = codec.device(P.word_code)
    get_code = codec.device(P.get_code)
    set_code = codec.device(P.set_code)

    @cuda.jit
    def kernel(bs, words, packed, codes, by_word, by_byte, repacked):
        t = cuda.threadIdx.x
        i = t // 8
        j = t % 8
        b = bs[i]
        by_word[i, j] = word_code(words[i], j, b)
        by_byte[i, j] = get_code(packed[i], j, b)
        if j == 0:
            for k in range(8):
                set_code(repacked[i], k, codes[i, k], b)

    rng = np.random.default_rng(40)
    bs = np.array(DELTA_BITS, dtype=np.int64)
    codes = np.stack([random_codes(rng, b, 8) for b in DELTA_BITS]).astype(np.int64)
    packed = np.zeros((4, 8), dtype=np.uint8)
    words = np.zeros(4, dtype=np.int64)
    for i, b in enumerate(DELTA_BITS):
        packed[i, :b] = macko.pack_codes(codes[i], b)
        words[i] = packed[i, :b].view(_WORD[b])[0].astype(np.int64)
    by_word = np.full((4, 8), -1, dtype=np.int64)
    by_byte = np.full((4, 8), -1, dtype=np.int64)
    repacked = np.zeros((4, 8), dtype=np.uint8)
    kernel[1, 32](bs, words, packed, codes, by_word, by_byte, repacked)
    np.testing.assert_array_equal(by_word, codes)
    np.testing.assert_array_equal(by_byte, codes)
    np.testing.assert_array_equal(repacked, packed)
