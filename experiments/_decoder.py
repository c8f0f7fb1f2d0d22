"""Llama- and OPT-style decoders in plain PyTorch for ``e2e_decode``: the shapes of a Hugging
Face ``transformers`` config, seeded random fp16 weights (nothing downloaded), a static KV
cache, and one decode step whose every index is a tensor (the position, the token buffer), so
the whole step can be captured once in a CUDA graph and replayed per token; dense and sparse
models run the same code, only their linear layers differ (``nn.Linear`` or
``spmvlab.torch.SparseLinear``).

Llama blocks: RMSNorm, q/k/v/o projections with rotary position embedding and grouped-query
attention over the cache (positions after the current one masked), RMSNorm, the gated SiLU
MLP (gate, up, down); a final RMSNorm and a dense LM head. No biases.
OPT blocks (``do_layer_norm_before``, as OPT-30B): LayerNorm, q/k/v/out projections with
biases and multi-head attention over the cache, LayerNorm, the ReLU MLP (fc1, fc2, with
biases); learned position embeddings (OPT's offset of 2) added to the token embeddings, a
final LayerNorm and a dense LM head.

Projections that read the same input are one linear layer, their weights stacked by rows
(as serving stacks do): ``qkv_proj`` (q, k and v) and, for Llama, ``gate_up_proj`` (gate
and up). A decode step then launches two GEMVs fewer per block for attention and one fewer
for the MLP, and each is larger (dense and sparse models alike). Pruning per row is the
same as for the separate layers (a stacked row is one layer's row). Each block's keys and
values share one cache tensor, written by one copy a step.
"""
from __future__ import annotations

import math

import torch

#: the models of the experiment: ``transformers.LlamaConfig`` fields (the published shapes)
MODELS = {
    "llama2-7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                      rms_norm_eps=1e-5, rope_theta=10000.0),
    "llama3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                        rms_norm_eps=1e-5, rope_theta=500000.0),
    "llama2-13b": dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                       num_attention_heads=40, num_key_value_heads=40, vocab_size=32000,
                       rms_norm_eps=1e-5, rope_theta=10000.0),
    # ``transformers.OPTConfig`` fields, marked by ``arch``
    "opt-30b": dict(arch="opt", hidden_size=7168, ffn_dim=28672, num_hidden_layers=48,
                    num_attention_heads=56, vocab_size=50272, max_position_embeddings=2048,
                    word_embed_proj_dim=7168, do_layer_norm_before=True, enable_bias=True,
                    activation_function="relu"),
    # for tests: the same code at a size the CUDA simulator runs
    "tiny": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=80, rms_norm_eps=1e-5, rope_theta=10000.0),
    "tiny-opt": dict(arch="opt", hidden_size=64, ffn_dim=96, num_hidden_layers=2,
                     num_attention_heads=4, vocab_size=80, max_position_embeddings=64,
                     word_embed_proj_dim=64, do_layer_norm_before=True, enable_bias=True,
                     activation_function="relu"),
}
#: the linear layers of a block (the ones a sparse model swaps), per architecture
PROJS = {"llama": ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"),
         "opt": ("qkv_proj", "out_proj", "fc1", "fc2")}
#: OPT's learned position embeddings start at this row
OPT_POSITION_OFFSET = 2


def arch(name: str) -> str:
    """"llama" or "opt": the architecture of model ``name``."""
    return MODELS[name].get("arch", "llama")


def hf_config(name: str):
    """The ``transformers`` config of ``name`` (``LlamaConfig`` or ``OPTConfig``; no
    weights)."""
    import transformers
    fields = {k: v for k, v in MODELS[name].items() if k != "arch"}
    cls = transformers.OPTConfig if arch(name) == "opt" else transformers.LlamaConfig
    return cls(**fields)


def hf_model_class(name: str):
    """Hugging Face's own causal LM class for ``name`` (for its eager reference)."""
    import transformers
    return transformers.OPTForCausalLM if arch(name) == "opt" else transformers.LlamaForCausalLM


def _arch_of(config) -> str:
    return "opt" if getattr(config, "model_type", "") == "opt" else "llama"


def _theta(c) -> float:
    """The rotary base of a config (``rope_theta``; transformers 5 keeps it in
    ``rope_parameters``)."""
    theta = getattr(c, "rope_theta", None)
    if theta is None:
        theta = (getattr(c, "rope_parameters", None) or {}).get("rope_theta")
    return float(theta if theta is not None else 10000.0)


class RMSNorm(torch.nn.Module):
    def __init__(self, n: int, eps: float):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        return _rms_norm(x, self.weight, self.eps)

    def add(self, x, d):
        """(x + d, its norm); (x, its norm) when ``d`` is None."""
        if d is None:
            return x, _rms_norm(x, self.weight, self.eps)
        return _add_rms_norm(x, d, self.weight, self.eps)


class LayerNorm(torch.nn.Module):
    """OPT's LayerNorm, in float32 like :class:`RMSNorm` (weights kept in float32)."""

    def __init__(self, n: int, eps: float = 1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n), requires_grad=False)
        self.bias = torch.nn.Parameter(torch.zeros(n), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        return _layer_norm(x, self.weight, self.bias, self.eps)

    def add(self, x, d):
        """(x + d, its norm); (x, its norm) when ``d`` is None."""
        if d is None:
            return x, _layer_norm(x, self.weight, self.bias, self.eps)
        return _add_layer_norm(x, d, self.weight, self.bias, self.eps)


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c.hidden_size, c.intermediate_size
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = h // self.heads
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)       # noqa: E731
        self.attn_norm, self.mlp_norm = RMSNorm(h, c.rms_norm_eps), RMSNorm(h, c.rms_norm_eps)
        self.qkv_proj = lin(h, h + 2 * self.kv_heads * self.head_dim)
        self.o_proj = lin(h, h)
        self.gate_up_proj, self.down_proj = lin(h, 2 * f), lin(f, h)

    def forward(self, x, d, pos, cos, sin, kv_cache, mask):
        """The block for the token at position ``pos`` (a 1-element long tensor) whose
        residual stream is ``x + d`` (B, hidden; ``d`` the previous block's MLP output, None
        for the first block), its keys and values written into ``kv_cache`` (2, B,
        kv_heads, max_len, head_dim) at ``pos``: returns (the stream after the attention,
        this block's MLP output). Each block's last residual add is left to the next norm
        (the next block's or the final one), which does it in the same fused kernel."""
        B = x.shape[0]
        x, a = self.attn_norm.add(x, d)
        q, kv = _rope_qkv(self.qkv_proj(a), cos, sin, self.heads, self.kv_heads)
        kv_cache.index_copy_(3, pos, kv)
        # grouped-query attention reads each cached head for its group of query heads
        # (repeating the cache for them would copy it whole, every block, every step)
        o = torch.nn.functional.scaled_dot_product_attention(
            q, kv_cache[0], kv_cache[1], attn_mask=mask, enable_gqa=self.heads != self.kv_heads)
        x, m = _add_rms_norm(x, self.o_proj(o.reshape(B, self.heads * self.head_dim)),
                             self.mlp_norm.weight, self.mlp_norm.eps)
        return x, self.down_proj(_gated_silu(self.gate_up_proj(m)))


class OPTBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c.hidden_size, c.ffn_dim
        self.heads = self.kv_heads = c.num_attention_heads
        self.head_dim = h // self.heads
        lin = lambda i, o: torch.nn.Linear(i, o, bias=c.enable_bias)       # noqa: E731
        self.attn_norm, self.mlp_norm = LayerNorm(h), LayerNorm(h)
        self.qkv_proj, self.out_proj = lin(h, 3 * h), lin(h, h)
        self.fc1, self.fc2 = lin(h, f), lin(f, h)

    def forward(self, x, d, pos, cos, sin, kv_cache, mask):
        """As :meth:`Block.forward` (``cos``, ``sin`` unused: OPT adds its positions to the
        embeddings)."""
        B = x.shape[0]
        x, a = self.attn_norm.add(x, d)
        qkv = self.qkv_proj(a).view(B, 3, self.heads, 1, self.head_dim)
        kv_cache.index_copy_(3, pos, qkv[:, 1:].transpose(0, 1))
        o = torch.nn.functional.scaled_dot_product_attention(qkv[:, 0], kv_cache[0], kv_cache[1],
                                                             attn_mask=mask)
        x, m = _add_layer_norm(x, self.out_proj(o.reshape(B, self.heads * self.head_dim)),
                               self.mlp_norm.weight, self.mlp_norm.bias, self.mlp_norm.eps)
        return x, self.fc2(torch.relu(self.fc1(m)))


def _rotate(t, cos, sin):
    half = t.shape[-1] // 2
    rot = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
    return (t * cos + rot * sin).to(t.dtype)


# The glue between a block's projections: each function below is torch.compile'd for CUDA
# tensors (``_glue``), so that its elementwise steps and reductions run as one or two fused
# kernels instead of one kernel each; a decode step at small batch is mostly such kernels
# (32 blocks of them for Llama-2-7B), and dense and sparse models run the same ones. Each
# residual add is done by the norm after it. The norms compute in float32 (weights kept in
# float32) and return the input's dtype.

_COMPILED: dict = {}


def _glue(fn):
    """``fn`` through ``torch.compile`` (one compiled function per ``fn``, shapes
    specialised as torch does) when its first argument is a CUDA tensor and nothing is
    being compiled around it; ``fn`` itself otherwise (CPU tests, a caller's own compile)."""
    def call(*args):
        if not args[0].is_cuda or torch.compiler.is_compiling():
            return fn(*args)
        c = _COMPILED.get(fn)
        if c is None:
            c = _COMPILED[fn] = torch.compile(fn, fullgraph=True)
        return c(*args)
    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    call.eager = fn
    return call


@_glue
def _rms_norm(x, w, eps: float):
    """RMSNorm of x (float32 weight ``w``)."""
    return torch.nn.functional.rms_norm(x.float(), w.shape, w.float(), eps).to(x.dtype)


@_glue
def _layer_norm(x, w, b, eps: float):
    """LayerNorm of x (float32 weight and bias)."""
    return torch.nn.functional.layer_norm(x.float(), w.shape, w.float(), b.float(), eps).to(x.dtype)


@_glue
def _add_rms_norm(x, o, w, eps: float):
    """(x + o, RMSNorm of it): a residual add and the norm after it (the attention's add
    and the MLP's norm; the MLP's add and the next block's norm)."""
    x = x + o
    return x, torch.nn.functional.rms_norm(x.float(), w.shape, w.float(), eps).to(x.dtype)


@_glue
def _add_layer_norm(x, o, w, b, eps: float):
    """(x + o, LayerNorm of it), as :func:`_add_rms_norm` for OPT."""
    x = x + o
    return x, torch.nn.functional.layer_norm(x.float(), w.shape, w.float(), b.float(), eps).to(x.dtype)


@_glue
def _rope_qkv(qkv, cos, sin, heads: int, kv_heads: int):
    """(q (B, heads, 1, d), kv (2, B, kv_heads, 1, d)) from the stacked projection's output
    ``qkv`` (B, (heads + 2 kv_heads) d): q and k rotated by position (cos, sin: (1, d)
    float32), k and v stacked as the cache holds them."""
    t = qkv.view(qkv.shape[0], heads + 2 * kv_heads, 1, cos.shape[-1])
    qk = _rotate(t[:, :heads + kv_heads], cos, sin)
    return qk[:, :heads], torch.stack((qk[:, heads:], t[:, heads + kv_heads:]))


@_glue
def _gated_silu(gu):
    """The Llama MLP's SiLU(gate) * up, from the stacked projection's output (gate, up)."""
    g, u = gu.chunk(2, dim=-1)
    return torch.nn.functional.silu(g) * u


class Decoder(torch.nn.Module):
    """The model of ``config`` (a ``LlamaConfig`` or an ``OPTConfig``) with weights
    ``N(0, 0.02)`` from ``seed`` (drawn by ``device``'s generator; OPT's biases after the
    weights, from the same generator), in ``dtype`` on ``device``; :meth:`caches` makes the
    static KV cache of a batch. ``proj``: the names of a block's linear layers."""

    def __init__(self, config, dtype=torch.float16, device="cuda", seed: int = 0):
        super().__init__()
        c = config
        self.config = c
        self.arch = _arch_of(c)
        self.proj = PROJS[self.arch]
        opt = self.arch == "opt"
        # built and drawn on ``device`` (drawing a 7B model on the host in float32 is slow):
        # the weights depend on the seed and the device's generator
        with torch.device(device):
            self.embed = torch.nn.Embedding(c.vocab_size, c.hidden_size)
            if opt:
                self.positions = torch.nn.Embedding(c.max_position_embeddings
                                                    + OPT_POSITION_OFFSET, c.hidden_size)
            block = OPTBlock if opt else Block
            self.layers = torch.nn.ModuleList(block(c) for _ in range(c.num_hidden_layers))
            self.norm = LayerNorm(c.hidden_size) if opt else RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.lm_head = torch.nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        g = torch.Generator(device=device).manual_seed(seed)
        with torch.no_grad():
            for p in self.parameters():
                p.requires_grad_(False)
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g, device=device).mul_(0.02))
            for layer in self.layers if opt else ():
                for name in self.proj:
                    b = getattr(layer, name).bias
                    if b is not None:
                        b.copy_(torch.randn(b.shape, generator=g, device=device).mul_(0.02))
        self.to(dtype=dtype)
        for m in self.modules():
            if isinstance(m, (RMSNorm, LayerNorm)):
                for p in m.parameters():
                    p.data = p.data.float()

    def caches(self, batch: int, max_len: int) -> list:
        """One cache per block: keys and values, (2, batch, kv_heads, max_len, head_dim)."""
        c, p = self.config, next(self.parameters())
        hd = c.hidden_size // c.num_attention_heads
        shape = (2, batch, getattr(c, "num_key_value_heads", c.num_attention_heads), max_len, hd)
        return [torch.zeros(shape, dtype=p.dtype, device=p.device) for _ in self.layers]

    def rope(self, max_len: int):
        """cos and sin tables, (max_len, head_dim) (OPT: no rotation, (max_len, 0))."""
        c, p = self.config, next(self.parameters())
        if self.arch == "opt":
            empty = torch.zeros(max_len, 0, device=p.device)
            return empty, empty
        hd = c.hidden_size // c.num_attention_heads
        inv = 1.0 / (_theta(c) ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        ang = torch.outer(torch.arange(max_len, dtype=torch.float64), inv)
        ang = torch.cat((ang, ang), dim=-1)
        return ang.cos().to(p.device, torch.float32), ang.sin().to(p.device, torch.float32)

    def step(self, tokens, pos, kv, rope):
        """Logits (B, vocab) of the next token after ``tokens`` (B,) at position ``pos`` (a
        1-element long tensor); writes the blocks' keys and values at ``pos``."""
        cos_t, sin_t = rope
        max_len = cos_t.shape[0]
        cos, sin = cos_t.index_select(0, pos), sin_t.index_select(0, pos)
        x = self.embed(tokens)
        # the cached positions up to ``pos`` attend, as an additive mask in the activations'
        # dtype made once a step: given a boolean mask, SDPA makes this at every call
        later = torch.arange(max_len, device=pos.device).view(1, 1, 1, max_len) > pos
        mask = torch.zeros(later.shape, dtype=x.dtype, device=pos.device)
        mask.masked_fill_(later, float("-inf"))
        if self.arch == "opt":
            x = x + self.positions(pos + OPT_POSITION_OFFSET)
        d = None
        for layer, cache in zip(self.layers, kv):
            x, d = layer(x, d, pos, cos, sin, cache, mask)
        return self.lm_head(self.norm.add(x, d)[1]).float()


def prune_(model: Decoder, sparsity_of) -> None:
    """Zero, in every block's projections, the ``round(s * in_features)`` smallest weights of
    each row (magnitude, ties to the lower index), ``s = sparsity_of(block index)``."""
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            s = float(sparsity_of(i))
            for name in model.proj:
                w = getattr(layer, name).weight
                k = round(s * w.shape[1])
                if k:
                    idx = w.abs().float().argsort(dim=1, stable=True)[:, :k]
                    w.scatter_(1, idx, 0)


def mix_sparsity(n_layers: int, outer: float, inner: float, outer_share: float = 0.25):
    """GeneralSparse's end-to-end mix: ``outer`` for the first and last ``outer_share`` of the
    blocks (at least one each), ``inner`` between."""
    edge = max(1, math.ceil(outer_share * n_layers))
    return lambda i: outer if i < edge or i >= n_layers - edge else inner


class Runner:
    """Greedy decoding of a batch with a static cache: :meth:`prefill` feeds the prompt one
    token a step (eagerly), :meth:`decode` generates ``n`` tokens, each step the same call
    (``graph=True``: captured once in a CUDA graph, then replayed)."""

    def __init__(self, model: Decoder, batch: int, max_len: int):
        p = next(model.parameters())
        self.model, self.batch, self.max_len = model, batch, max_len
        self.kv = model.caches(batch, max_len)
        self.rope = model.rope(max_len)
        self.tok = torch.zeros(batch, dtype=torch.long, device=p.device)
        self.pos = torch.zeros(1, dtype=torch.long, device=p.device)
        self.out = torch.zeros(batch, max_len, dtype=torch.long, device=p.device)
        self.logits = None
        self.graph = None

    def reset(self, prompt: torch.Tensor):
        for c in self.kv:
            c.zero_()
        self.pos.zero_()
        self.out.zero_()
        self.out[:, :prompt.shape[1]] = prompt
        self.prompt_len = prompt.shape[1]

    def _step(self):
        logits = self.model.step(self.tok, self.pos, self.kv, self.rope)
        nxt = logits.argmax(-1)
        self.tok.copy_(nxt)
        self.pos.add_(1)
        self.out.index_copy_(1, self.pos, nxt.view(-1, 1))
        return logits

    @torch.no_grad()
    def prefill(self, prompt: torch.Tensor, graph: bool = False) -> torch.Tensor:
        """Feed ``prompt`` (B, T); returns the logits after its last token (and the first
        generated token in the token buffer). ``graph``: each token through the captured
        step (:meth:`capture` first; what the replay writes besides the cache is
        overwritten by the next token)."""
        self.reset(prompt)
        for t in range(prompt.shape[1]):
            self.tok.copy_(prompt[:, t])
            self.pos.fill_(t)
            if graph:
                self.graph.replay()
                logits = self.logits
            else:
                logits = self.model.step(self.tok, self.pos, self.kv, self.rope)
        nxt = logits.argmax(-1)
        self.tok.copy_(nxt)
        self.out[:, prompt.shape[1]] = nxt
        self.pos.fill_(prompt.shape[1])
        return logits

    @torch.no_grad()
    def capture(self):
        """Capture one decode step (the model's kernels compiled by a warm-up step on a side
        stream first, the state restored after it)."""
        saved = (self.tok.clone(), self.pos.clone(), self.out.clone(),
                 [c.clone() for c in self.kv])
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self._step()
        torch.cuda.current_stream().wait_stream(s)
        self._restore(saved)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self._step()
        self._restore(saved)              # capturing ran nothing, but be exact about it

    def _restore(self, saved):
        tok, pos, out, caches = saved
        self.tok.copy_(tok)
        self.pos.copy_(pos)
        self.out.copy_(out)
        for c, v in zip(self.kv, caches):
            c.copy_(v)

    @torch.no_grad()
    def decode(self, n: int, graph: bool):
        """Generate ``n`` tokens after :meth:`prefill`; returns the last step's logits."""
        logits = None
        for _ in range(n):
            if graph:
                self.graph.replay()
                logits = self.logits
            else:
                logits = self._step()
        return logits

    def tokens(self, n: int) -> torch.Tensor:
        """The ``n`` generated tokens of each sequence (the first one from the prefill)."""
        return self.out[:, self.prompt_len:self.prompt_len + n]
