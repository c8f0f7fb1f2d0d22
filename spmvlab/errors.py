"""spmvlab's typed exceptions (defined in ``reference._common`` so both trees share them)."""
from reference._common import (  # noqa: F401
    ChecksumError, DTypeError, FormatError, IndexOverflowError, LayoutError, LossyConversionError,
    LossyConversionWarning, NotEncodedError, OptionError, ShapeError, SpmvlabError, StreamError, problem,
)


class BackendUnavailable(SpmvlabError, ImportError):
    """An optional backend (CuPy, torch, a GPU) is needed but missing."""


class DatasetError(SpmvlabError, LookupError):
    """A dataset name or file could not be found or read."""
