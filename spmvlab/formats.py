"""The registry: one entry per format, carrying everything generic code needs.

Experiments, :mod:`spmvlab.methods`, the shared test suite (``tests/test_formats.py``), the
PTX compile check and the CLI iterate over :func:`all_formats` instead of naming formats.
An entry names the format's modules by path (imported on first use, so listing formats is
cheap and compiles nothing), its capabilities, the value dtypes its kernels take (the one
list), its kernel config class, its encode options and the kernel settings it is timed and
tested with.

Adding a format ``foo`` means creating ``reference/foo.py`` (and, where they exist,
``spmvlab/kernels/foo.py``, ``spmvlab/encoders/foo.py``, ``tests/golden/foo/``) and one
``register(FormatInfo(name="foo", ...))`` call at the end of this file.
"""
from __future__ import annotations

import dataclasses
import importlib
import itertools
from types import MappingProxyType, ModuleType
from typing import Any, Mapping

import numpy as np

from reference import macko as _macko
from reference._common import VALUE_DTYPES, OptionError, problem

__all__ = ["Option", "FormatInfo", "register", "get", "names", "all_formats", "kernel_formats"]

ALL_DTYPES = tuple(dt.name for dt in VALUE_DTYPES)


@dataclasses.dataclass(frozen=True)
class Option:
    """One encode option: its default, the values a matrix stores (None = any), a one-line
    doc, and whether ``"auto"`` may be passed instead (the encoder then picks one of the
    choices; the matrix records which, so the option grid the tests run is ``choices``)."""

    default: Any
    choices: tuple | None = None
    doc: str = ""
    auto: bool = False

    def allows(self, value) -> bool:
        """Whether ``value`` may be passed to the encoder."""
        return (self.auto and isinstance(value, str) and value == "auto") or \
            self.choices is None or value in self.choices


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclasses.dataclass(frozen=True)
class FormatInfo:
    """A registry entry.

    name           the format's name (also the default method name)
    reference      module path of the NumPy reference (``encode``, ``spmv``, ``spmm``, the
                   frozen ``<Fmt>Matrix``)
    kernels        module path of the numba.cuda kernels (``to_device``, ``spmv``, ``spmm``,
                   ``ptx_targets``), or None; ``spmm(D, X, out, config, out_t)`` writes Y's
                   transpose (k, rows) with ``out_t=True``, the layout of torch's linear
                   layers (``spmvlab.torch`` then copies nothing after the product)
    encoder        module path of the fast encoder (byte-identical to the reference), or None
    config         name of the frozen kernel config class in the kernel module
    options        encode option name -> :class:`Option`
    kernel_dtypes  value dtypes the kernels take (the one list every check reads)
    spmm           whether the kernel module has an SpMM kernel
    methods        method name -> config keyword arguments: the named kernel settings
                   experiments time (``spmvlab.methods.resolve`` knows these names)
    test_configs   config keyword arguments the shared test suite runs the kernels with
                   (small blocks: the CUDA simulator runs one Python thread per CUDA thread)
    opt_out        shared-suite test name -> reason this format skips it
    """

    name: str
    reference: str
    kernels: str | None = None
    encoder: str | None = None
    config: str | None = None
    options: Mapping[str, Option] = dataclasses.field(default_factory=dict)
    kernel_dtypes: tuple = ALL_DTYPES
    spmm: bool = True
    methods: Mapping[str, Mapping] = dataclasses.field(default_factory=dict)
    test_configs: tuple = ({},)
    opt_out: Mapping[str, str] = dataclasses.field(default_factory=dict)
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "options", _frozen(self.options))
        object.__setattr__(self, "methods", _frozen({k: _frozen(v) for k, v in
                                                     (self.methods or {self.name: {}}).items()}))
        object.__setattr__(self, "opt_out", _frozen(self.opt_out))
        bad = [d for d in self.kernel_dtypes if d not in ALL_DTYPES]
        if bad:
            raise OptionError(problem(f"{self.name}.kernel_dtypes", f"names among {ALL_DTYPES}", bad))

    # capabilities ------------------------------------------------------------------------------
    @property
    def capabilities(self) -> frozenset:
        """Subset of {"spmv", "spmm", "fast_encoder"}."""
        caps = set()
        if self.kernels:
            caps.add("spmv")
            if self.spmm:
                caps.add("spmm")
        if self.encoder:
            caps.add("fast_encoder")
        return frozenset(caps)

    # modules -----------------------------------------------------------------------------------
    def reference_module(self) -> ModuleType:
        return importlib.import_module(self.reference)

    def kernel_module(self) -> ModuleType:
        if self.kernels is None:
            raise OptionError(problem(f"format {self.name!r}", "a GPU kernel", "none implemented"))
        return importlib.import_module(self.kernels)

    def matrix_class(self) -> type:
        """The reference's frozen ``<Fmt>Matrix`` class (its ``format_name`` is this name)."""
        from reference._common import SparseFormat
        for obj in vars(self.reference_module()).values():
            if isinstance(obj, type) and issubclass(obj, SparseFormat) and obj.format_name == self.name:
                return obj
        raise OptionError(problem(f"{self.reference}", f"a SparseFormat with format_name {self.name!r}",
                                  "none"))

    def encoder_module(self) -> ModuleType | None:
        return importlib.import_module(self.encoder) if self.encoder else None

    def config_class(self) -> type:
        if self.config is None:
            raise OptionError(problem(f"format {self.name!r}", "a kernel config class", "none"))
        return getattr(self.kernel_module(), self.config)

    def make_config(self, **kwargs):
        """The kernel config with ``kwargs`` (its own checks raise OptionError; so does a
        field the config does not have)."""
        import dataclasses
        cls = self.config_class()
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - fields)
        if unknown:
            raise OptionError(problem(f"{cls.__name__} fields", f"a subset of {sorted(fields)}",
                                      unknown, "check the spelling against the config's docstring"))
        return cls(**kwargs)

    # encode options ----------------------------------------------------------------------------
    def check_options(self, options: Mapping) -> dict:
        """``options`` completed with the defaults; unknown names or values raise OptionError."""
        unknown = set(options) - set(self.options)
        if unknown:
            raise OptionError(problem(f"{self.name} options", f"a subset of {sorted(self.options)}",
                                      sorted(unknown)))
        full = {k: o.default for k, o in self.options.items()}
        full.update(options)
        for k, v in full.items():
            opt = self.options[k]
            if not opt.allows(v):
                raise OptionError(problem(f"{self.name} option {k}", f"one of {opt.choices}"
                                          + (" or 'auto'" if opt.auto else ""), repr(v)))
        return full

    def option_grid(self) -> list[dict]:
        """Every combination of the options' allowed values (defaults where any value goes)."""
        keys = list(self.options)
        values = [self.options[k].choices or (self.options[k].default,) for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]

    def encode(self, A, dtype=None, fast: bool = False, lossy: bool = False, **options):
        """Encode with the reference encoder (or the fast one: ``fast=True``, same bytes).

        ``lossy=True`` accepts values that overflow or underflow in ``dtype`` (with one
        ``LossyConversionWarning``); otherwise they raise ``LossyConversionError``."""
        opts = self.check_options(options)
        mod = self.encoder_module() if (fast and self.encoder) else self.reference_module()
        return mod.encode(A, dtype=dtype, lossy=lossy, **opts)

    def nbytes(self, A, dtype=None, lossy: bool = False, **options) -> int:
        return self.encode(A, dtype=dtype, fast=True, lossy=lossy, **options).nbytes

    def supports_dtype(self, dtype) -> bool:
        return np.dtype(dtype).name in self.kernel_dtypes


_REGISTRY: dict[str, FormatInfo] = {}


def register(info: FormatInfo) -> FormatInfo:
    if info.name in _REGISTRY:
        raise OptionError(problem("format name", "a name not yet registered", repr(info.name)))
    taken = {m for f in _REGISTRY.values() for m in f.methods}
    clash = taken & set(info.methods)
    if clash:
        raise OptionError(problem(f"{info.name}.methods", "method names no other format uses",
                                  sorted(clash)))
    _REGISTRY[info.name] = info
    return info


def get(name: str) -> FormatInfo:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise OptionError(problem("format", f"one of {names()}", repr(name))) from None


def names() -> list[str]:
    return list(_REGISTRY)


def all_formats() -> list[FormatInfo]:
    return list(_REGISTRY.values())


def kernel_formats() -> list[FormatInfo]:
    """The formats that have GPU kernels."""
    return [f for f in _REGISTRY.values() if f.kernels]


# ---------------------------------------------------------------------------------------------
# the formats
# ---------------------------------------------------------------------------------------------

register(FormatInfo(
    name="csr", reference="reference.csr", kernels="spmvlab.kernels.csr", config="CSRConfig",
    methods={"csr_vector": {}, "csr_vector1": {"vec": 1}, "csr_vector2": {"vec": 2},
             "csr_scalar": {"variant": "scalar"}},
    test_configs=({"threads_per_block": 64, "variant": "scalar"}, {"threads_per_block": 64},
                  {"threads_per_block": 64, "vec": 1, "spmm_tile": 2},
                  {"threads_per_block": 64, "vec": 2, "spmm_tile": 4}),
    doc="compressed sparse rows; int32 indices unless a count needs int64"))

register(FormatInfo(
    name="macko", reference="reference.macko", kernels="spmvlab.kernels.macko",
    encoder="spmvlab.encoders.macko", config="MackoConfig",
    options={"delta_bits": Option(4, _macko.DELTA_BITS, "bits per column step; 'auto': the width "
                                  "that stores the fewest bytes", auto=True)},
    kernel_dtypes=("float16", "float32"),
    test_configs=({"threads_per_block": 64, "spmm_smem_threads": 64},
                  {"threads_per_block": 64, "prefetch": 0, "spmm_tile": 2, "spmm_smem": False},
                  {"threads_per_block": 32, "prefetch": 2, "spmm_tile": 4, "spmm_smem": False},
                  {"threads_per_block": 32, "spmm_tile": 2, "spmm_smem_threads": 32}),
    doc="MACKO (Macko & Boza): column steps in [1, 2**delta_bits] packed 8/delta_bits per "
        "byte, explicit zeros inserted where a gap is longer; values/codes padded to 8 entries"))

register(FormatInfo(
    name="coo", reference="reference.coo", kernels="spmvlab.kernels.coo", config="COOConfig",
    test_configs=({"threads_per_block": 64},),
    doc="coordinate list: row, column and value of every nonzero, row-major (cuSPARSE's COO)"))

register(FormatInfo(
    name="ec_csr", reference="reference.ec_csr", kernels="spmvlab.kernels.ec_csr",
    encoder="spmvlab.encoders.ec_csr", config="ECCSRConfig",
    options={"delta_bits": Option(8, (8, 4), "bits per delta index (precision range 2**delta_bits)"),
             "warp_size": Option(32, (32, 2), "lanes per block (2: the paper's Fig. 4; "
                                 "reference.ec_csr.encode also takes 1, 4, 8, 16)"),
             "vector_size": Option(4, (4, 2), "entries a lane loads at a time from a long part "
                                   "(reference.ec_csr.encode also takes 1, 8)"),
             "clip": Option(None, None, "clipping threshold in stored entries per block: None "
                            "dynamic (twice the mean work), 0 none, or an int"),
             "reorder": Option(True, None, "True or False: sort blocks within a set by size"),
             "max_granularity": Option(None, None, "None or a power of two: no coarser blocks "
                                       "(1: no extraction)")},
    kernel_dtypes=("float16", "float32"),
    test_configs=({"threads_per_block": 64},
                  {"threads_per_block": 32, "rows_per_pass": 2, "spmm_tile": 2,
                   "spmm_rows_per_pass": 1},
                  {"threads_per_block": 64, "rows_per_pass": 1, "spmm_tile": 4,
                   "spmm_rows_per_pass": 2, "index32": False},
                  {"threads_per_block": 64, "rows_per_pass": 4}),
    doc="EC-CSR (Lin et al.): hierarchical block sets of granularity 1, 2, 4, ..., a base "
        "index per lane and 4/8-bit deltas, values interleaved by lane; fast encoder (numba); "
        "kernels: a lane group per block, float32 atomics into y"))

register(FormatInfo(
    name="csr_dtans", reference="reference.csr_dtans", encoder="spmvlab.encoders.csr_dtans",
    kernels="spmvlab.kernels.csr_dtans", config="CSRDtansConfig",
    test_configs=({"threads_per_block": 32, "spmm_tile": 4},
                  {"threads_per_block": 64, "spmm_tile": 2}),
    options={"params": Option("paper", ("paper", "toy"), "dtANS parameters: 'paper' (32-bit words, "
                              "K 4096, M 256, l 8, o 3, f 2) or 'toy' (the paper's 2-bit example)"),
             # any of their values is valid (the encoder checks); the option grid of the
             # shared suite keeps the defaults, tests/test_csr_dtans*.py run the others
             "lanes_per_row": Option(1, None, "streams per row, 1, 2, 4, 8, 16 or 32: each row "
                                     "cut into that many pieces decoded by as many lanes (the "
                                     "long-row layout for LLM weights; 1: the paper's)"),
             "rows_per_lane": Option(1, None, "rows per stream, 1, 2, 4 or 8: that many short "
                                     "rows decoded one after another by one lane, sharing "
                                     "segments (lanes_per_row must then be 1); 'auto': as many "
                                     "as keep a stream's mean nonzeros within "
                                     "reference.csr_dtans.STREAM_NNZ where x's gathers are "
                                     "local and enough streams remain (choose_rows_per_lane)"),
             "first_delta": Option("column", None, "'column' or 'diagonal': what a row's (or piece's) "
                                   "first delta counts from: column 0 (the paper's) or the row "
                                   "index, so banded and stencil rows' first columns need no "
                                   "escape")},
    doc="CSR-dtANS (Schaetzle et al.): per-row delta-coded columns and values entropy coded with "
        "dtANS (one table per domain, escapes for rare symbols), 32 row streams interleaved per "
        "warp in lockstep read order; numba encoder; decode-on-the-fly kernels (a lane per row, "
        "or with lanes_per_row a row's pieces on several lanes; tables in shared memory)"))

register(FormatInfo(
    name="split24", reference="reference.split24", kernels="spmvlab.kernels.split24",
    config="Split24Config", kernel_dtypes=("float16",),
    test_configs=({"warps_per_band": 1, "cols_per_warp": 8},
                  {"warps_per_band": 3, "cols_per_warp": 16},
                  {"warps_per_band": 2, "cols_per_warp": 32}),
    doc="split 2:4: the first two nonzeros of every group of four columns in 16 x 32 tiles "
        "for the sparse tensor cores (mma.sp, hardware metadata), the rest a CSR residual; "
        "float16 kernels"))
