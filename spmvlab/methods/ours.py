"""spmvlab's own kernels as :class:`~spmvlab.methods.base.Method` objects.

``FormatMethod``  any registered format, generically through its registry entry: fast
                  encoder (the reference's bytes), ``to_device``, then the kernel module's
                  ``spmv`` or ``spmm`` with the entry's config class. ``format_bytes`` is the
                  encoded matrix's ``nbytes`` (every stored byte).
``NumbaDense``    the numba dense GEMV (``dense_gemv.py``), the dense baseline when CuPy is
                  missing.
"""
from __future__ import annotations

from typing import Mapping

from reference._common import OptionError, problem

from .. import formats
from .base import Method, Problem

__all__ = ["FormatMethod", "NumbaDense"]


class FormatMethod(Method):
    """A registered format's kernel. ``config``: keyword arguments of its config class;
    ``options``: encode options (the registry's defaults for the rest). ``encoded``: optional
    ``encoded(problem) -> matrix`` giving the problem's matrix already encoded (in the
    problem's dtype, e.g. one encoding shared by several problems of the same pattern); the
    check still compares the kernel's product with the problem's own exact one.
    ``stored_options``: the options the encoded matrix records (what ``"auto"`` became)."""

    events = "numba"

    def __init__(self, p: Problem, fmt: str, name: str | None = None,
                 config: Mapping | None = None, options: Mapping | None = None,
                 encoded=None):
        from .._cuda import cuda
        from ..kernels._common import to_dev
        info = formats.get(fmt)
        if p.kind not in info.capabilities:
            raise OptionError(problem(f"method {name or fmt}", f"a format with a {p.kind} kernel",
                                      f"{fmt} (capabilities: {sorted(info.capabilities)})"))
        self.problem = p
        self.name = name or fmt
        self.info = info
        self.config = info.make_config(**dict(config or {}))
        self.options = info.check_options(dict(options or {}))
        if encoded is None:
            M = p.encoded(fmt, self.options)     # built once per problem and options
        else:
            M = encoded(p)
            if not isinstance(M, info.matrix_class()) or M.dtype != p.dtype or tuple(M.shape) != p.shape:
                raise OptionError(problem(f"method {self.name}: encoded(problem)",
                                          f"a {info.matrix_class().__name__} of shape {p.shape} "
                                          f"and dtype {p.dtype}",
                                          f"{type(M).__name__} {getattr(M, 'shape', '?')} "
                                          f"{getattr(M, 'dtype', '?')}"))
        self.format_bytes = int(M.nbytes)
        self.stored_options = dict(M.options())
        K = info.kernel_module()
        self._D = K.to_device(M)
        self._fn = K.spmv if p.kind == "spmv" else K.spmm
        self._X = to_dev(p.X)
        self._Y = cuda.device_array(p.out_shape, dtype=p.dtype)
        self.impl = f"{info.kernels}.{p.kind}({self.config})"

    def run(self):
        self._fn(self._D, self._X, out=self._Y, config=self.config)

    def _result(self):
        return self._Y.copy_to_host()


class NumbaDense(Method):
    """spmvlab's numba dense GEMV: warp per row, 16-byte loads (SpMV only)."""

    name = "numba_dense"
    events = "numba"

    def __init__(self, p: Problem, config: Mapping | None = None):
        from .._cuda import cuda
        from ..kernels._common import to_dev
        from . import dense_gemv as K
        if p.kind != "spmv":
            raise OptionError(problem("numba_dense", "an SpMV problem", p.kind, "use 'cublas'"))
        self.problem = p
        self.config = K.DenseConfig(**dict(config or {}))
        self._K = K
        self._D = K.to_device(p.dense())
        self._X = to_dev(p.X)
        self._Y = cuda.device_array(p.out_shape, dtype=p.dtype)
        self.format_bytes = self._D.nbytes
        self.impl = f"numba dense GEMV, vec={K.vector_width(p.dtype, p.shape[1], self.config)}"

    def run(self):
        self._K.gemv(self._D, self._X, out=self._Y, config=self.config)

    def _result(self):
        return self._Y.copy_to_host()
