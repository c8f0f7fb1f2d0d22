"""Registry of every format spmvlab implements.

Experiments, tests and the CLI iterate over :func:`all_formats` instead of naming formats.
Each entry names the reference module (``reference.<fmt>``), the kernel module
(``spmvlab.kernels.<fmt>``), the optional fast encoder (``spmvlab.encoders.<fmt>``), the
value dtypes its kernels support, and its encode options with defaults and allowed values.
Modules are imported on first use, so listing formats is cheap and compiles nothing.
"""
from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType
from typing import Any

import numpy as np

from reference._common import OptionError, problem


@dataclasses.dataclass(frozen=True)
class Option:
    """One encode option: its default, the values allowed (None = any) and a one-line doc."""

    default: Any
    choices: tuple | None = None
    doc: str = ""


@dataclasses.dataclass(frozen=True)
class FormatInfo:
    name: str
    reference: str                       # module path of the reference implementation
    kernels: str | None                  # module path of the numba.cuda kernels
    encoder: str | None = None           # module path of the fast encoder, if any
    options: dict = dataclasses.field(default_factory=dict)   # name -> Option
    kernel_dtypes: tuple = ("float16", "float32", "float64")
    doc: str = ""

    # modules ---------------------------------------------------------------------------------
    def reference_module(self) -> ModuleType:
        return importlib.import_module(self.reference)

    def kernel_module(self) -> ModuleType:
        if self.kernels is None:
            raise OptionError(problem(f"format {self.name!r}", "a GPU kernel", "none implemented"))
        return importlib.import_module(self.kernels)

    def encoder_module(self) -> ModuleType | None:
        return importlib.import_module(self.encoder) if self.encoder else None

    # operations ------------------------------------------------------------------------------
    def check_options(self, options: dict) -> dict:
        unknown = set(options) - set(self.options)
        if unknown:
            raise OptionError(problem(f"{self.name} options", f"a subset of {sorted(self.options)}",
                                      sorted(unknown)))
        full = {k: o.default for k, o in self.options.items()}
        full.update(options)
        for k, v in full.items():
            ch = self.options[k].choices
            if ch is not None and v not in ch:
                raise OptionError(problem(f"{self.name} option {k}", f"one of {ch}", repr(v)))
        return full

    def encode(self, A, dtype=None, fast: bool = False, **options):
        """Encode with the reference encoder (or the fast one: ``fast=True``, same bytes)."""
        opts = self.check_options(options)
        mod = self.encoder_module() if (fast and self.encoder) else self.reference_module()
        return mod.encode(A, dtype=dtype, **opts)

    def nbytes(self, A, dtype=None, **options) -> int:
        return self.encode(A, dtype=dtype, fast=True, **options).nbytes


_REGISTRY: dict[str, FormatInfo] = {}


def register(info: FormatInfo) -> FormatInfo:
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


def value_bytes(dtype) -> int:
    return np.dtype(dtype).itemsize


# ---------------------------------------------------------------------------------------------
# the formats
# ---------------------------------------------------------------------------------------------

register(FormatInfo(
    name="csr", reference="reference.csr", kernels="spmvlab.kernels.csr",
    doc="compressed sparse rows; int32 indices unless a count needs int64"))

register(FormatInfo(
    name="macko", reference="reference.macko", kernels="spmvlab.kernels.macko",
    encoder="spmvlab.encoders.macko",
    options={"delta_bits": Option(4, (1, 2, 4, 8), "bits per column step")},
    kernel_dtypes=("float16", "float32"),
    doc="MACKO (Macko & Boza): column steps in [1, 2**delta_bits] packed 8/delta_bits per "
        "byte, explicit zeros inserted where a gap is longer; values/codes padded to 8 entries"))
