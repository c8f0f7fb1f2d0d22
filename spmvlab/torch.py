"""PyTorch layers on spmvlab's kernels (the optional ``torch`` extra: ``pip install -e
".[torch]"``; nothing else in spmvlab imports torch).

    from spmvlab.torch import SparseLinear, sparsify, memory_report
    layer = SparseLinear.from_linear(linear, format="macko")     # one nn.Linear
    sparsify(model, 0.7, "macko", include=r"mlp|self_attn")      # every matching nn.Linear
    print(memory_report(model)["total"])

:class:`SparseLinear` holds one weight encoded in a registered kernel format on the GPU and
multiplies by it in ``forward``: one token (the leading dimensions of ``x`` multiply to 1)
runs the format's SpMV kernel, several its SpMM kernel (X = the tokens as columns), the bias
is added by torch. The kernels read and write torch's tensors in place (their
``__cuda_array_interface__``, taken without a host synchronisation), run on torch's current
stream and take any temporary they need from torch's allocator
(:func:`spmvlab.kernels._common.launching`), so ``forward`` can be captured in a CUDA graph.
``format="generalsparse"`` runs GeneralSparse's generated SpMM kernel, the fitted cost
model's pick per token count (one token too), planned on first use or ahead by
:meth:`SparseLinear.prepare`. It is a ``torch.library`` custom op
(``spmvlab::sparse_linear``) to ``torch.compile``, which treats it as one opaque call with a
shape function.

In the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, no GPU) the same layer takes CPU tensors
and runs the kernels in the simulator with the registry's small test settings: slow, for
tests.
"""
from __future__ import annotations

import itertools
import re
import weakref

import numpy as np
import scipy.sparse as sp
import torch

from reference._common import DTypeError, OptionError, ShapeError, describe, problem
from reference._input import DEVICE_ALIGN

from . import formats
from ._cuda import SIMULATOR, cuda
from .kernels._common import launching

__all__ = ["SparseLinear", "sparsify", "memory_report", "sparse_formats", "layer_formats",
           "encode_weight", "pick_format", "GENERALSPARSE"]

#: the layer format of GeneralSparse's generated SpMM kernels (not a registry format: a
#: weight is planned per batch size, see :class:`_GeneralSparseWeight`)
GENERALSPARSE = "generalsparse"

_NP = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}
_TORCH = {np.dtype(v): k for k, v in _NP.items()}

#: the layers the custom op can reach, by handle (weak: a deleted layer leaves no weight)
_LAYERS: "weakref.WeakValueDictionary[int, SparseLinear]" = weakref.WeakValueDictionary()
_NEXT = itertools.count(1)
_STREAMS: dict = {}


#: encode options a layer's weight gets unless given: a linear layer's rows hold thousands of
#: weights, and CSR-dtANS's paper layout (one decoding lane per row) leaves each row's whole
#: stream to one thread; its long-row layout cuts a row into 32 streams that a warp decodes
#: together (reference/csr_dtans.py; experiments/dtans_llm_speed.py times both)
LAYER_ENCODE_OPTIONS = {"csr_dtans": {"lanes_per_row": 32}}


def sparse_formats(dtype=torch.float16) -> list[str]:
    """The registered formats whose SpMV and SpMM kernels take ``dtype``."""
    name = np.dtype(_NP[dtype]).name
    return [f.name for f in formats.all_formats()
            if {"spmv", "spmm"} <= f.capabilities and name in f.kernel_dtypes]


def layer_formats(dtype=torch.float16) -> list[str]:
    """What :class:`SparseLinear` takes for ``dtype``: :func:`sparse_formats`, and
    ``"generalsparse"`` for float16 and float32."""
    from .generalsparse.codegen import SUPPORTED_DTYPES
    gs = [GENERALSPARSE] if dtype in _NP and np.dtype(_NP[dtype]) in SUPPORTED_DTYPES else []
    return sparse_formats(dtype) + gs


def _np_dtype(dtype) -> np.dtype:
    if dtype not in _NP:
        raise DTypeError(problem("dtype", "torch.float16, torch.float32 or torch.float64", dtype))
    return np.dtype(_NP[dtype])


def _check_format(format: str, dtype) -> np.dtype:
    """``dtype``'s NumPy dtype, once ``format`` is known to have SpMV and SpMM kernels for it."""
    nd = _np_dtype(dtype)
    if format not in layer_formats(dtype):
        raise OptionError(problem("format", f"a format with SpMV and SpMM kernels for {nd.name}",
                                  repr(format), f"one of {layer_formats(dtype)}"))
    return nd


class _GeneralSparseWeight:
    """One weight as GeneralSparse runs it: the stored matrix (CSR, kept on the host) and, per
    batch size N, the plan of the fitted cost model's pick for (matrix, N)
    (``spmvlab.generalsparse.search.model_ranking``: nothing timed; the next of its ranking
    where a pick does not plan for the matrix) with its generated kernel, uploaded. One token
    is N = 1: GeneralSparse has no SpMV kernel. A plan is built the first time its N is
    multiplied, or ahead by :meth:`SparseLinear.prepare` (a CUDA graph being captured cannot
    upload one)."""

    def __init__(self, A: sp.csr_matrix, dtype: np.dtype):
        self.A, self.dtype = A, np.dtype(dtype)
        self.plans: dict = {}           # N -> (codegen.DevicePlan, strategy label)

    @property
    def nbytes(self) -> int:
        """Bytes on the GPU: every array of every plan held."""
        return int(sum(int(a.nbytes) for D, _ in self.plans.values() for a in D.arrays))

    @staticmethod
    def host_plan(A: sp.csr_matrix, N: int, dtype) -> tuple:
        """``(plan, strategy label)`` for ``N`` tokens, on the host alone (ranking,
        planning and the plan's full validation, no GPU): what :meth:`plan` uploads, and
        what :func:`sparsify`'s worker processes build beside the encoding."""
        from .generalsparse import codegen, planner
        from .generalsparse.search import first_that_plans, model_ranking
        dt = np.dtype(dtype)
        ranked, _, _ = model_ranking(A, int(N), dt)
        s, p = first_that_plans(ranked, lambda s: planner.plan_cached(A, s, dt))
        return codegen.checked_plan(p), s.label

    def plan(self, N: int, built: tuple | None = None):
        """The uploaded plan for ``N`` tokens, built here or taken from ``built`` (what
        :meth:`host_plan` returned, here or in a worker process: its validation there
        stands once the checksum matches here, ``codegen.checked_elsewhere``)."""
        held = self.plans.get(N)
        if held is not None:
            return held[0]
        if not SIMULATOR and torch.cuda.is_current_stream_capturing():
            raise OptionError(problem("generalsparse plan", f"built before capture for N={N} tokens",
                                      "a CUDA graph capture", f"layer.prepare({N}) before capturing"))
        from .generalsparse import codegen
        if built is not None:
            p, label = built
            codegen.checked_elsewhere(p)
        else:
            p, label = self.host_plan(self.A, N, self.dtype)
        self.plans[N] = (codegen.upload(p, codegen.generate(p)), label)
        return self.plans[N][0]

    def multiply(self, X, Yt):
        """Yt = (A @ X)^T for (K, N) / (N, M) device arrays (NumPy arrays in the simulator):
        the generated kernel writes the transpose itself (``codegen.spmm(out_t=True)``)."""
        from .generalsparse import codegen
        codegen.spmm(self.plan(int(X.shape[1])), X, out=Yt, out_t=True)


class SparseLinear(torch.nn.Module):
    """``y = x @ W.T + b`` with ``W`` held encoded in one kernel format (module docstring).

    Build it with :meth:`from_linear` (or from any 2-D matrix: :meth:`from_weight`).
    ``format``: a registered format with SpMV and SpMM kernels for ``dtype``
    (:func:`sparse_formats`); ``config``: that format's kernel config (default settings
    when None). The encoded weight lives on the current CUDA device of numba (device 0
    unless changed), not in ``state_dict``; ``bias`` is an ordinary parameter."""

    def __init__(self, device_matrix, shape: tuple, dtype, format: str, nbytes: int, nnz: int,
                 bias: torch.Tensor | None = None, config=None):
        super().__init__()
        self.format = format
        self.out_features, self.in_features = (int(s) for s in shape)
        self.dtype = dtype
        self._nbytes = int(nbytes)
        self.nnz = int(nnz)
        if format == GENERALSPARSE:
            self._kernels = self._config = None
        else:
            info = formats.get(format)
            self._kernels = info.kernel_module()
            # the simulator runs one Python thread per CUDA thread: there, the registry's small
            # test settings
            self._config = config if config is not None else info.make_config(
                **(dict(info.test_configs[0]) if SIMULATOR else {}))
        self._matrix = device_matrix
        # the weight's device, read once here: forward compares x with it without calling
        # numba (torch.compile cannot trace numba's context lock); the bias lives there too,
        # where torch adds it to the product
        self._device = None if SIMULATOR else int(cuda.get_current_device().id)
        home = "cpu" if SIMULATOR else f"cuda:{self._device}"
        self.bias = None if bias is None else torch.nn.Parameter(
            bias.detach().to(home, dtype, copy=True), requires_grad=False)
        self._handle = next(_NEXT)
        _LAYERS[self._handle] = self

    @classmethod
    def from_weight(cls, weight, bias=None, *, format: str = "macko", dtype=None, config=None,
                    **encode_options) -> "SparseLinear":
        """Encode ``weight`` (out_features x in_features: a torch tensor, NumPy array or scipy
        matrix; its zeros are not stored) in ``format`` for ``dtype`` (default the tensor's
        float dtype, else float16) and put it on the GPU."""
        if isinstance(weight, torch.Tensor):
            dtype = dtype or (weight.dtype if weight.dtype in _NP else torch.float16)
            w = weight.detach().to("cpu", torch.float32).numpy()
        else:
            dtype = dtype or torch.float16
            w = weight
        nd = _check_format(format, dtype)
        M = encode_weight(w, format, nd.name, **encode_options)
        return cls.from_encoded(M, bias, format=format, dtype=dtype, config=config)

    @classmethod
    def from_encoded(cls, M, bias=None, *, format: str, dtype=None, config=None) -> "SparseLinear":
        """The layer of a matrix already encoded in ``format`` (e.g. by :func:`encode_weight`
        in another process), put on the GPU."""
        if format == GENERALSPARSE:
            if config is not None:
                raise OptionError(problem("config", "None for generalsparse (the cost model picks "
                                          "each batch size's kernel)", describe(config)))
            D = _GeneralSparseWeight(M, _np_dtype(dtype or _TORCH[np.dtype(M.dtype)]))
            nbytes = 0                  # counted from the plans (SparseLinear.nbytes)
        else:
            D = formats.get(format).kernel_module().to_device(M)
            nbytes = M.nbytes
        dtype = dtype or _TORCH[np.dtype(M.dtype)]
        return cls(D, M.shape, dtype, format, nbytes, M.nnz, bias=bias, config=config)

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, *, format: str = "macko", dtype=None,
                    config=None, **encode_options) -> "SparseLinear":
        """The layer of ``linear``'s weight (its zeros dropped) and bias."""
        if not isinstance(linear, torch.nn.Linear):
            raise OptionError(problem("linear", "a torch.nn.Linear", describe(linear)))
        return cls.from_weight(linear.weight, linear.bias, format=format, dtype=dtype,
                               config=config, **encode_options)

    @property
    def nbytes(self) -> int:
        """Bytes of the encoded weight (generalsparse: of every plan built so far, on the GPU)."""
        return self._matrix.nbytes if self.format == GENERALSPARSE else self._nbytes

    def prepare(self, *tokens: int) -> "SparseLinear":
        """Build now what ``forward`` needs for inputs of these token counts (the product of
        x's leading dimensions): generalsparse plans its kernel per count and cannot do it
        inside a CUDA graph capture; the other formats need nothing."""
        if self.format == GENERALSPARSE:
            for n in tokens:
                if int(n) >= 1:
                    self._matrix.plan(int(n))
        return self

    def plan_labels(self) -> dict:
        """generalsparse: ``{token count: strategy label}`` of each plan built so far (the
        cost model's pick for this weight and count, what ``forward`` runs); ``{}`` for the
        other formats (one kernel per format: SpMV for one token, SpMM for several)."""
        if self.format != GENERALSPARSE:
            return {}
        return {n: label for n, (_, label) in sorted(self._matrix.plans.items())}

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"format={self.format!r}, nnz={self.nnz}, nbytes={self.nbytes}, "
                f"dtype={self.dtype}, bias={self.bias is not None}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        y = torch.ops.spmvlab.sparse_linear(x, self._handle)
        return y if self.bias is None else y + self.bias

    def _check(self, x):
        if not isinstance(x, torch.Tensor):
            raise DTypeError(problem("x", "a torch.Tensor", describe(x)))
        if x.dtype != self.dtype:
            raise DTypeError(problem("x.dtype", f"{self.dtype} (the layer's)", x.dtype,
                                     f"x.to({self.dtype}) or a layer built with dtype={x.dtype}"))
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ShapeError(problem("x.shape", f"(..., {self.in_features})", tuple(x.shape)))
        want = "cpu" if SIMULATOR else "cuda"
        if x.device.type != want:
            raise OptionError(problem("x.device", f"a {want} tensor"
                                      + ("" if SIMULATOR else " on numba's current device"),
                                      x.device, f"x.to({want!r})"))
        if not SIMULATOR and x.device.index not in (None, self._device):
            raise OptionError(problem("x.device", f"cuda:{self._device} (where the weight is)",
                                      x.device))

    def _multiply(self, x: torch.Tensor) -> torch.Tensor:
        """The product without the bias: SpMV for one token, else SpMM on the tokens as
        X's columns (the kernels' Y = W @ X, written as Y's transpose straight into the
        result, GeneralSparse's generated kernels too), on torch's stream and allocator."""
        lead = tuple(x.shape[:-1])
        n = int(np.prod(lead, dtype=np.int64)) if lead else 1
        out = torch.empty(lead + (self.out_features,), dtype=x.dtype, device=x.device)
        if n == 0:
            return out
        x2 = x.reshape(n, self.in_features)
        with launching(*_stream_and_alloc(x.device)):
            if n == 1 and self.format != GENERALSPARSE:
                self._kernels.spmv(self._matrix, _view(_aligned(x2.reshape(self.in_features))),
                                   out=_view(out.view(self.out_features)), config=self._config)
                return out
            X = _aligned(x2.t())                                       # (in, n)
            # the kernel writes the (tokens, out_features) result itself: no copy after it
            Yt = _view(out.view(n, self.out_features))
            if self.format == GENERALSPARSE:
                self._matrix.multiply(_view(X), Yt)
            else:
                self._kernels.spmm(self._matrix, _view(X), out=Yt, config=self._config, out_t=True)
        return out


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t`` contiguous and starting on the kernels' alignment (``DEVICE_ALIGN``; a token's
    row of a larger tensor need not), copied by torch's allocator where it is not."""
    t = t.contiguous()
    return t if t.data_ptr() % DEVICE_ALIGN == 0 else t.clone()


def _view(t: torch.Tensor):
    """The kernels' view of ``t``, sharing its memory: a numba device array (no stream
    synchronisation) or, in the simulator, a NumPy array."""
    if SIMULATOR:
        return t.detach().numpy()
    return cuda.as_cuda_array(t.detach(), sync=False)


def _stream_and_alloc(device):
    if SIMULATOR:
        return 0, None
    ptr = torch.cuda.current_stream(device).cuda_stream
    stream = _STREAMS.get(ptr)
    if stream is None:
        stream = _STREAMS[ptr] = cuda.external_stream(ptr)

    def alloc(shape, dtype):
        dtype = np.dtype(dtype)
        if dtype in _TORCH:
            return cuda.as_cuda_array(torch.empty(shape, dtype=_TORCH[dtype], device=device),
                                      sync=False)
        # a kernel's scratch of a type torch's interface does not name (split24's packed X is
        # uint32): torch's bytes, seen as that type
        size = int(np.prod(shape, dtype=np.int64))
        raw = torch.empty(max(size, 1) * dtype.itemsize, dtype=torch.uint8, device=device)
        return cuda.as_cuda_array(raw, sync=False).view(dtype)[:size].reshape(shape)
    return stream, alloc


@torch.library.custom_op("spmvlab::sparse_linear", mutates_args=())
def _sparse_linear(x: torch.Tensor, handle: int) -> torch.Tensor:
    layer = _LAYERS.get(handle)
    if layer is None:
        raise OptionError(problem("handle", "a live SparseLinear", handle))
    return layer._multiply(x)


@_sparse_linear.register_fake
def _(x, handle):
    layer = _LAYERS[handle]
    return x.new_empty(tuple(x.shape[:-1]) + (layer.out_features,))


# ---------------------------------------------------------------------------------------------
# whole models
# ---------------------------------------------------------------------------------------------

def encode_weight(w, format: str, dtype: str, **encode_options):
    """``w`` (a NumPy array or scipy matrix; its zeros are not stored) encoded in ``format``
    for ``dtype`` with the fast encoder (:data:`LAYER_ENCODE_OPTIONS` unless
    ``encode_options`` says otherwise): a module-level function, so that :func:`sparsify`
    can run it in worker processes."""
    if not sp.issparse(w) and np.ndim(w) != 2:
        raise ShapeError(problem("weight", "a 2-D matrix", describe(w)))
    A = w.tocsr() if sp.issparse(w) else sp.csr_matrix(np.asarray(w))
    A.eliminate_zeros()
    if format == GENERALSPARSE:         # planned per batch size on the GPU side
        if encode_options:
            raise OptionError(problem("encode_options", "none for generalsparse",
                                      sorted(encode_options)))
        A = A.astype(np.float32)        # scipy holds no float16: float32 values rounded to it
        A.data = A.data.astype(np.dtype(dtype)).astype(np.float32)
        A.eliminate_zeros()             # values that round to zero in dtype
        return A
    encode_options = {**LAYER_ENCODE_OPTIONS.get(format, {}), **encode_options}
    return formats.get(format).encode(A, dtype=np.dtype(dtype), fast=True, **encode_options)


def _pruned(w, sparsity) -> np.ndarray:
    """``w`` as float32, pruned per row to ``sparsity`` (None: its zeros as they are)."""
    w = np.asarray(w, dtype=np.float32)
    return w if sparsity is None else _prune_rows(w, float(sparsity))


def _encode_layer(w, sparsity, format: str, dtype: str, encode_options: dict,
                  tokens: tuple = ()):
    """One layer's weight ``w`` (a NumPy array in the layer's dtype) :func:`_pruned` and
    encoded: what a :func:`sparsify` worker process does, so the parent only copies weights
    out and encoded layers in. Returns ``(encoded, plans)``: for generalsparse also its
    host plans for each of ``tokens`` (counts >= 1, as :func:`sparsify` checked them;
    :meth:`_GeneralSparseWeight.host_plan`: the cost model's ranking, the planning and the
    full validation, seconds a layer), else ``{}``."""
    M = encode_weight(_pruned(w, sparsity), format, dtype, **encode_options)
    plans = {n: _GeneralSparseWeight.host_plan(M, n, dtype)
             for n in tokens if format == GENERALSPARSE}
    return M, plans


def _warm_encoders(names, dtype: str):
    """Encode a small matrix in each format here first: the fast encoders' compiled code
    lands in numba's on-disk cache once, which the worker processes then load instead of
    each compiling it at the same time."""
    A = sp.random(64, 96, density=0.3, format="csr", random_state=np.random.default_rng(0),
                  dtype=np.float32)
    A.data = A.data.astype(dtype).astype(np.float32)
    for name in names:
        if name != GENERALSPARSE:
            encode_weight(A, name, dtype)


def _encoder_threads(n: int):
    """A worker's share of the host's cores for numba's parallel encoders (every worker
    running them on every core would oversubscribe the host)."""
    import numba
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))


def _prune_rows(w: np.ndarray, sparsity: float) -> np.ndarray:
    from .datasets import prune
    return prune(w, sparsity, method="magnitude", per_row=True)


#: ``format="auto"`` choices: (out, in, nonzeros, batch, dtype) -> format
_AUTO: dict = {}


def _layer_method(format: str) -> str:
    """The ``spmvlab.methods`` name of ``format`` encoded as a layer encodes it."""
    opts = LAYER_ENCODE_OPTIONS.get(format)
    return f"{format}[{','.join(f'{k}={v}' for k, v in opts.items())}]" if opts else format


def pick_format(w: np.ndarray, dtype, batch: int = 1, reps: int = 20) -> str:
    """The fastest of :func:`sparse_formats` (and generalsparse for ``batch`` > 1) on the
    GPU for weight ``w`` (its zeros dropped) and ``batch`` tokens: each format's product is
    checked and timed by ``spmvlab.methods`` (cold L2, median of ``reps``); the choice is
    cached by shape, nonzeros, batch and dtype."""
    if SIMULATOR:
        raise OptionError(problem("format='auto'", "a CUDA GPU (it times every format)",
                                  "the CUDA simulator", "name a format"))
    from . import methods
    A = sp.csr_matrix(np.asarray(w, dtype=np.float32))
    A.eliminate_zeros()
    nd = _np_dtype(dtype)
    key = (A.shape[0], A.shape[1], int(A.nnz), int(batch), nd.name)
    if key not in _AUTO:
        names = sparse_formats(dtype) + ([GENERALSPARSE] if batch > 1 and GENERALSPARSE in
                                         layer_formats(dtype) else [])
        # each format timed as a layer encodes it (LAYER_ENCODE_OPTIONS)
        method = {_layer_method(f): f for f in names}
        rows = methods.measure(A, nd.name, list(method), k=None if batch == 1 else int(batch),
                               reps=reps, warmup=3, keep_going=True)
        ok = [r for r in rows if r.get("median_us") and r.get("check_passed")]
        if not ok:
            raise OptionError(problem("format='auto'", "a format that runs this layer",
                                      "; ".join(f"{r['method']}: {r.get('error')}" for r in rows)))
        _AUTO[key] = method[min(ok, key=lambda r: r["median_us"])["method"]]
    return _AUTO[key]


def sparsify(model: torch.nn.Module, sparsity: float | None, format: str = "macko", *,
             pruning: str = "magnitude", include: str | None = None, exclude: str | None = None,
             dtype=None, config=None, workers: int = 0, batch: int | tuple = 1,
             **encode_options) -> list[str]:
    """Swap the ``nn.Linear`` layers of ``model`` whose qualified names match ``include``
    (a regex searched in the name; None: all) and not ``exclude`` for :class:`SparseLinear`
    layers in ``format``, in place; returns the names swapped.

    ``pruning``: "magnitude" zeros the ``round(sparsity * in_features)`` smallest weights
    of every row first; "keep" stores the zeros the weights already hold (``sparsity``
    unused). ``workers`` > 0 prunes and encodes the layers in that many spawned processes
    (a 7B model's 224 layers take minutes on one core); generalsparse layers are also
    ranked, planned and validated there for each ``batch`` count, the parent checking each
    plan's checksum and uploading it.
    ``format="auto"``: each layer in the format :func:`pick_format` times fastest for its
    weight and the first ``batch`` count (on a GPU; ``config`` and ``encode_options`` must
    then be left out, being one format's). ``batch``: the token count, or counts (e.g. a
    decode step's and its prompt's), the layers are prepared for
    (:meth:`SparseLinear.prepare`; generalsparse plans its kernel per count)."""
    if pruning not in ("magnitude", "keep"):
        raise OptionError(problem("pruning", "'magnitude' or 'keep'", repr(pruning)))
    try:
        tokens = tuple(int(n) for n in ((batch,) if isinstance(batch, (int, np.integer)) else batch))
    except (TypeError, ValueError):
        tokens = ()
    if not tokens or any(n < 1 for n in tokens) or isinstance(batch, (bool, str)):
        raise OptionError(problem("batch", "a token count >= 1, or a sequence of them", repr(batch)))
    if pruning == "magnitude" and (sparsity is None or not 0.0 <= float(sparsity) < 1.0):
        raise OptionError(problem("sparsity", "a float in [0, 1) with pruning='magnitude'",
                                  repr(sparsity)))
    inc = re.compile(include) if include else None
    exc = re.compile(exclude) if exclude else None
    targets = [(name, mod) for name, mod in model.named_modules()
               if isinstance(mod, torch.nn.Linear)
               and (inc is None or inc.search(name)) and not (exc and exc.search(name))]
    auto = format == "auto"
    if auto and (config is not None or encode_options):
        raise OptionError(problem("format='auto'", "no config or encode options (they are one "
                                  "format's)", sorted(encode_options) or "config",
                                  "name a format to pass them"))
    for _, lin in targets:
        if auto:
            _np_dtype(dtype or lin.weight.dtype)
        else:
            _check_format(format, dtype or lin.weight.dtype)

    prune_to = None if pruning == "keep" else float(sparsity)

    def host(lin):
        # the weight as it is stored (half the bytes of float32 for a float16 layer): the
        # worker converts and prunes it
        w = lin.weight.detach()
        return w.to("cpu").numpy() if w.dtype in _NP else w.to("cpu", torch.float32).numpy()

    def swap(name, lin, encoded, fmt):
        M, plans = encoded
        layer = SparseLinear.from_encoded(M, lin.bias, format=fmt, dtype=dtype or lin.weight.dtype,
                                          config=config)
        for n, built in plans.items():
            layer._matrix.plan(n, built)
        layer.prepare(*tokens)
        parent, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, leaf, layer)

    def job(name, lin):
        w, dt, s = host(lin), dtype or lin.weight.dtype, prune_to
        if auto:                          # timed on the pruned weight, here
            w, s = _pruned(w, prune_to), None
        return w, s, (pick_format(w, dt, tokens[0]) if auto else format), _np_dtype(dt).name

    if workers and len(targets) > 1:
        # at most twice the workers' layers in flight: a 13B model's weights as float32
        # would not fit in host memory at once
        import collections
        import concurrent.futures as cf
        import multiprocessing as mp
        import os
        dt0 = dtype or targets[0][1].weight.dtype
        _warm_encoders(sparse_formats(dt0) if auto else [format], _np_dtype(dt0).name)
        threads = max(1, (os.cpu_count() or 1) // int(workers))
        with cf.ProcessPoolExecutor(int(workers), mp_context=mp.get_context("spawn"),
                                    initializer=_encoder_threads, initargs=(threads,)) as pool:
            todo, flight = list(targets), collections.deque()
            while todo or flight:
                while todo and len(flight) < 2 * int(workers):
                    name, lin = todo.pop(0)
                    w, s, fmt, dt = job(name, lin)
                    flight.append((name, lin, fmt, pool.submit(_encode_layer, w, s, fmt, dt,
                                                               encode_options, tokens)))
                name, lin, fmt, fut = flight.popleft()
                swap(name, lin, fut.result(), fmt)
    else:
        for name, lin in targets:
            w, s, fmt, dt = job(name, lin)
            swap(name, lin, _encode_layer(w, s, fmt, dt, encode_options, tokens), fmt)
    return [name for name, _ in targets]


def memory_report(model: torch.nn.Module) -> dict:
    """Bytes of the model's linear weights: one row per ``nn.Linear`` / :class:`SparseLinear`
    (name, format, shape, nonzeros, bytes; a dense layer's format is "dense"), and the total
    and the bytes per format."""
    rows = []
    for name, mod in model.named_modules():
        if isinstance(mod, SparseLinear):
            rows.append(dict(name=name, format=mod.format, shape=(mod.out_features, mod.in_features),
                             nnz=mod.nnz, bytes=mod.nbytes))
        elif isinstance(mod, torch.nn.Linear):
            w = mod.weight
            rows.append(dict(name=name, format="dense", shape=tuple(w.shape), nnz=int(w.numel()),
                             bytes=int(w.numel() * w.element_size())))
    per = {}
    for r in rows:
        per[r["format"]] = per.get(r["format"], 0) + r["bytes"]
    return dict(layers=rows, by_format=per, total=sum(per.values()))
