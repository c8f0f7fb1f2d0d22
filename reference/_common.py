"""Pieces shared by every reference format, in three modules: ``_errors`` (the typed errors
and the message shape), ``_input`` (value dtypes, lossy conversion, the memory limit, the
input boundary, canonical CSR, operand checks) and ``_format`` (the checksummed frozen
dataclasses and the format template). Everything imports them from here.

Plain NumPy/SciPy only: nothing under ``reference/`` imports numba.
"""
from __future__ import annotations

from ._errors import (  # noqa: F401
    SpmvlabError, ShapeError, DTypeError, LayoutError, FormatError, StreamError,
    DecodeError, ChecksumError, NotEncodedError, IndexOverflowError, OptionError,
    InputError, SizeLimitError, LossyConversionError, SizeWarning, LossyConversionWarning,
    describe, problem,
)
from ._input import (  # noqa: F401
    VALUE_DTYPES, INT32_MAX, INDEX_DTYPES, value_dtype, accumulator_dtype, triplet_product,
    index_dtype_for, LOSSY_EFFECT, ConversionLoss, cast_values, check_conversion,
    _caller_stacklevel, resolve_dtype, MEMORY_LIMIT_ENV, MEMORY_FRACTION, parse_bytes,
    format_bytes, physical_memory, memory_limit, check_size, INT64_MAX, check_input,
    rowmajor_increasing, canonical_csr, csr_value_array, csr_from_arrays, check_operand,
    check_out,
)
from ._format import (  # noqa: F401
    require_encoded, _plain, Checksummed, SparseFormat,
)
