"""spmvlab: compressed sparse formats and Numba-CUDA SpMV/SpMM kernels.

Importing spmvlab is cheap: numba.cuda is imported by the kernel modules only, and no
kernel compiles before its first launch.
"""
from reference._common import (  # noqa: F401
    ChecksumError, DTypeError, FormatError, IndexOverflowError, LayoutError, LossyConversionError,
    LossyConversionWarning, NotEncodedError, OptionError, ShapeError, SpmvlabError, StreamError,
)

__version__ = "0.1.0"
