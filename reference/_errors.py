"""The typed errors and warnings every part of spmvlab raises, and the one message shape
(:func:`problem`): the field, what was expected, what was received, and a fix.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ._input import ConversionLoss

# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class SpmvlabError(Exception):
    """Base class of every error spmvlab raises on purpose."""


class ShapeError(SpmvlabError, ValueError):
    """An array or matrix has the wrong number of dimensions or the wrong size."""


class DTypeError(SpmvlabError, TypeError):
    """An array has a dtype the operation does not accept."""


class LayoutError(SpmvlabError, ValueError):
    """An array is not laid out as required (e.g. not C-contiguous)."""


class FormatError(SpmvlabError, ValueError):
    """A format's arrays are inconsistent (raised by ``validate``)."""


class StreamError(FormatError):
    """An encoded stream or a saved file is truncated, corrupt, of another layout version or
    not what was asked for."""


class DecodeError(StreamError):
    """An entropy-coded stream (``reference.tans``, ``reference.dtans``, the words of
    ``reference.csr_dtans``) cannot be decoded: it ends early, has words left over, holds a
    word out of range, names an unused slot or an escape that does not fit."""


class ChecksumError(FormatError):
    """A matrix's format name, shape, options or arrays no longer match the checksum computed
    when it was built (a corrupted or replaced array, shape or option)."""


class NotEncodedError(SpmvlabError, TypeError):
    """A raw matrix (scipy.sparse, a dense array) or another format's matrix was passed where
    an encoded matrix of one format is expected."""


class IndexOverflowError(SpmvlabError, OverflowError):
    """A dimension or count does not fit the index type a format or kernel uses."""


class OptionError(SpmvlabError, ValueError):
    """An encoding or kernel option has an unsupported value."""


class InputError(SpmvlabError, ValueError):
    """A matrix handed in by a user is malformed in a way scipy.sparse does not check when it
    builds one from arrays: row pointers that do not start at 0, end at the entry count or
    never decrease; an index outside the matrix; arrays of different lengths. Raised by
    :func:`check_input` before any encoder, scipy routine or kernel reads the arrays."""


class SizeLimitError(SpmvlabError, MemoryError):
    """Honouring a size that came from outside (a matrix's shape, a file's header, an
    encoding option that inserts entries) would allocate more than :func:`memory_limit`
    bytes. Nothing was allocated; the message says what asked for how much."""


class LossyConversionError(SpmvlabError, ValueError):
    """Converting the values to the value dtype loses more than rounding: a finite value
    overflows to +-inf, or a nonzero underflows to zero or to a subnormal (see
    :func:`check_conversion`). ``loss`` is the :class:`ConversionLoss` (counts, first entry)."""

    def __init__(self, message: str, loss: "ConversionLoss | None" = None):
        super().__init__(message)
        self.loss = loss


class SizeWarning(UserWarning):
    """An encoding option the caller chose explicitly makes a matrix store more bytes than
    plain CSR would (e.g. MACKO's narrow column steps on a matrix with long gaps); the message
    gives both sizes and the option that avoids it. Issued once per encode."""


class LossyConversionWarning(UserWarning):
    """A lossy conversion was accepted (``lossy=True``): issued once per encode, with the counts;
    ``loss`` is the :class:`ConversionLoss`."""

    def __init__(self, message: str, loss: "ConversionLoss | None" = None):
        super().__init__(message)
        self.loss = loss


def problem(field: str, expected: str, received: Any, fix: str | None = None) -> str:
    """Build the one error-message shape used everywhere: field, expected, received, fix."""
    msg = f"{field}: expected {expected}, received {received}"
    if fix:
        msg += f". Fix: {fix}"
    return msg


def describe(obj) -> str:
    """A short description of what was passed, for error messages."""
    if sp.issparse(obj):
        return f"scipy {type(obj).__name__} of shape {obj.shape}"
    if isinstance(obj, np.ndarray):
        return f"a {obj.ndim}-D NumPy array of shape {obj.shape}"
    return type(obj).__name__
