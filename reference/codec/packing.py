"""Codes of ``b`` bits (b in {1, 2, 4, 8}) packed into bytes: the one definition of the layout.

Entry ``k`` of a code stream occupies bits ``[k * b, k * b + b)`` counting from the lowest
bit of byte 0: bit offset ``b * (k % (8 // b))`` of byte ``k // (8 // b)``, so the lowest
bits of a byte hold its first code. Viewed as one little-endian word of ``8 * b`` bits per 8
entries (as kernels load them), entry ``j`` of a word sits at bit ``b * j``.

Example, b = 2 (four codes per byte): codes 1 2 3 2 | 0 -> bytes 0xB9 0x00.

Shared codec code (see :mod:`reference.codec`): no argument checks; ``b`` must be 1, 2, 4 or
8, and ``k``/``j`` non-negative.
"""


def codes_per_byte(b):
    """How many ``b``-bit codes one byte holds."""
    return 8 // b


def code_mask(b):
    """The ``b`` low bits set: ``2**b - 1``."""
    return (1 << b) - 1


def code_bit(k, b):
    """Bit offset of entry ``k`` from bit 0 (the lowest) of byte 0 (int or NumPy int array)."""
    return k * b


def code_byte(k, b):
    """Index of the byte holding entry ``k``: ``k // (8 // b)`` (int or NumPy int array)."""
    return code_bit(k, b) // 8


def code_shift(k, b):
    """Bit offset of entry ``k`` within its byte: ``b * (k % (8 // b))`` (int or NumPy int
    array)."""
    return code_bit(k, b) % 8


def set_code(packed, k, code, b):
    """OR ``code`` (its low ``b`` bits) into entry ``k`` of ``packed`` (uint8, entry still 0).

    Scalar ``k`` only: a NumPy array ``k`` would lose bits where entries share a byte.
    """
    packed[code_byte(k, b)] |= (code & code_mask(b)) << code_shift(k, b)


def get_code(packed, k, b):
    """Entry ``k`` of ``packed`` (uint8); ``k`` an int or a NumPy int array."""
    return (packed[code_byte(k, b)] >> code_shift(k, b)) & code_mask(b)


def word_code(word, j, b):
    """Entry ``j`` (0..7) of a word of 8 codes: the little-endian integer of the ``b``
    bytes holding entries ``[8i, 8i + 8)``, so entry ``8i + j`` of the stream."""
    return (word >> code_bit(j, b)) & code_mask(b)
