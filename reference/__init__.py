"""Readable NumPy references of every spmvlab format and coder (no numba here).

Each module ``reference/<fmt>.py`` defines a frozen ``<Fmt>Matrix`` dataclass, ``encode``,
``spmv`` and ``spmm``; ``M.to_csr()`` returns the canonical input exactly.
"""
from ._common import (  # noqa: F401
    ChecksumError, DecodeError, DTypeError, FormatError, IndexOverflowError, LayoutError,
    LossyConversionError, LossyConversionWarning, NotEncodedError, OptionError, ShapeError,
    SpmvlabError, StreamError,
)
