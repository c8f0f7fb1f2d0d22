"""numba builds of the shared codec steps in :mod:`reference.codec`.

``njit(f)`` compiles a function of ``reference.codec`` for CPU code (``numba.njit``);
``device(f)`` compiles it as an inlined CUDA device function
(``_cuda.inline_device``). Each is made once per function, on first request,
and compiles on first use: importing this module imports no numba, and ``device`` imports
``numba.cuda`` (through ``spmvlab._cuda``) on its first call.

A shared function may call other shared functions: its build is a copy of it whose global
names for those functions refer to their builds of the same kind.

Caching caveat: numba's ``cache=True`` on a caller (e.g. ``spmvlab.encoders.macko._fill``)
keys only on the caller's own source file, so it does not notice edits under
``reference/codec``: after changing a shared function, touch the callers' source files (or
delete their ``__pycache__/*.nbi`` and ``*.nbc``) so they recompile.
"""
from __future__ import annotations

import functools
import types

__all__ = ["njit", "device"]


def _is_shared(obj) -> bool:
    """True for a plain function defined in a module of ``reference.codec``."""
    return (isinstance(obj, types.FunctionType)
            and (obj.__module__ or "").split(".")[:2] == ["reference", "codec"])


def _relinked(fn, build):
    """A copy of shared function ``fn`` whose shared globals ``g`` are replaced by ``build(g)``."""
    if not _is_shared(fn):
        raise TypeError(f"expected a function of reference.codec, got {fn!r}")
    env = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        if _is_shared(env.get(name)):
            env[name] = build(env[name])
    copy = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__doc__ = fn.__qualname__, fn.__doc__
    return copy


@functools.lru_cache(maxsize=None)
def njit(fn):
    """``fn`` (a function of ``reference.codec``) as a ``numba.njit`` dispatcher."""
    import numba
    return numba.njit(_relinked(fn, njit))


@functools.lru_cache(maxsize=None)
def device(fn):
    """``fn`` (a function of ``reference.codec``) as an inlined CUDA device function."""
    from ._cuda import inline_device
    return inline_device(_relinked(fn, device))
