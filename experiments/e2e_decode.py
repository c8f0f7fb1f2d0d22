"""End-to-end greedy decoding of pruned LLM-shaped models in PyTorch on our kernels
(issue 30; MACKO Table 1, EC-SpMV Table 3 and GeneralSparse Fig. 20 are whole-model numbers).

    python experiments/e2e_decode.py [--models llama2-7b] [--formats macko,csr] [--quick]

Models (``experiments/_decoder.py``): the shapes of Hugging Face ``transformers`` Llama
configs (Llama-2-7B, Llama-3.1-8B, Llama-2-13B) and OPT-30B's with seeded N(0, 0.02) fp16
weights, a static KV cache and one decode step with every index a tensor. A model of which
three copies would not fit the GPU (OPT-30B's 60 GB) runs ``lean``: one model on the device
at a time, the pruned dense model rebuilt from its seed for each format and sparsified in
place (the same weights, so the same rows). Per model and sparsity
(0.5 / 0.7 / 0.9, and GeneralSparse's ``mix``: 0.7 in the first and last quarter of the
blocks, 0.9 between), the block projections are pruned per row by magnitude; that dense
model, holding the zeros, is the baseline (cuBLAS through ``nn.Linear``) and the reference;
each format then swaps its projections for ``spmvlab.torch.SparseLinear`` (LM head and
embeddings stay dense). For batch B a 64-token random prompt (seeded) is fed token by
token, then ``n`` tokens are generated greedily, timed with CUDA events: with the step
captured in one CUDA graph and replayed (``graph`` true) and eagerly from Python (false,
at the first of ``new_tokens`` only): tokens/s = B n / time. Hugging Face's own eager
``generate`` of the dense shape is timed beside them (``hf_batches``; method ``hf_eager``). Each row records the linear layers' bytes (``weights_bytes``,
``spmvlab.torch.memory_report``), what the model holds on the device (``model_bytes``:
torch's parameters and buffers plus the encoded weights, numba allocations outside torch's
allocator), on a GPU ``peak_gpu_bytes`` (that plus the most torch allocated beyond it while
the batch ran: KV cache, activations, the graph's pool; the other models the experiment
keeps are not counted) and ``nonlinear_ms``, the step's time with the block projections swapped for zero outputs (the
attention, norms, rotary, LM head and small kernels every model runs alike): the rest of a
row's ``ms_per_step`` is its linear layers. On a GPU each graph-captured row also keeps
``breakdown`` (:func:`breakdown`): where the captured step's time goes by kind of kernel
(ours, cuBLAS, attention, the compiled glue, other) and the gaps between kernels, from
torch's profiler over a few replays. Layers are encoded with
``spmvlab.torch.LAYER_ENCODE_OPTIONS`` (CSR-dtANS: the long-row layout), kept in
``encode_options``.

Checks, for every format and batch (on a GPU through the captured step the timed runs
replay; the dense reference runs eagerly): the logits after the prompt against the dense model's
(``max_rel_err``: the largest |difference| over the dense logits' largest magnitude,
``logit_scale``) and
the first ``check_tokens`` greedy tokens (``tokens_match``; else ``first_divergence``, the
step, and ``gap_there``, the dense model's top-2 logit gap at that step: a tie broken the
other way by rounding is not a bug).
"""
from __future__ import annotations

import copy
import os
import sys
import time

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "e2e_decode"
NEEDS_GPU = True
#: parts may differ in any of these (e.g. graph-captured runs of every batch and an eager
#: run of batch 1 only): each part re-times the dense model for its own rows
SPLIT_KEYS = ("models", "sparsities", "formats", "batches", "new_tokens", "graphs", "hf_batches")
#: a cluster task per (model, sparsity): its formats share the dense model and its timing
CELL_KEYS = ("models", "sparsities")
#: settings that change no row (parts measured with other values still merge)
UNCOMPARED_KEYS = ("encode_workers", "lean")
FULL = dict(models=["llama2-7b"], sparsities=[0.5, 0.7, 0.9, "mix"],
            formats=["macko", "ec_csr", "csr", "csr_dtans", "coo", "split24"], batches=[1, 8, 32],
            new_tokens=[64, 128, 256], prompt=64, check_tokens=64, graphs=[True, False],
            encode_workers=None, hf_batches=[1, 8], lean=None, seed=0)
QUICK = dict(sparsities=[0.7], formats=["macko"], batches=[1, 8], new_tokens=[64],
             graphs=[True], hf_batches=[])


# every format with SpMV and SpMM kernels (spmvlab.torch.sparse_formats). generalsparse
# layers (``--formats generalsparse``) are not in the default run: each layer ranks, plans
# and validates its kernel per batch size (in sparsify's workers), minutes for a 7B
# model's 128 projections (q/k/v and gate/up stacked: experiments/_decoder.py;
# docs/performance.md)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--models", type=X.words, help="comma-separated: llama2-7b, llama3.1-8b, "
                   "llama2-13b, opt-30b")
    p.add_argument("--formats", type=X.words, help="comma-separated layer formats "
                   "(spmvlab.torch.layer_formats: the kernel formats and generalsparse)")
    p.add_argument("--batches", type=X.ints)
    p.add_argument("--sparsities", type=_sparsities, help="comma-separated: fractions and 'mix'")
    p.add_argument("--new-tokens", dest="new_tokens", type=X.ints)
    p.add_argument("--graphs", type=lambda t: [v.lower() in ("1", "true", "t", "yes") for v in X.words(t)],
                   help="comma-separated: true (step in a CUDA graph), false (eager)")
    p.add_argument("--hf-batches", dest="hf_batches", type=X.ints,
                   help="batches of the Hugging Face eager reference (comma-separated; '' for none)")
    p.add_argument("--lean", type=lambda t: {"auto": None, "true": True, "false": False}[t.lower()],
                   help="auto, true or false: one model on the device at a time (the dense "
                   "model is rebuilt from its seed for each format and sparsified in place); "
                   "auto: when three copies would not fit")
    p.add_argument("--encode-workers", dest="encode_workers", type=int,
                   help="processes encoding the layers (none: as many as the host has "
                   "cores, at most 16)")


def _sparsities(text: str) -> list:
    return [v if v == "mix" else float(v) for v in X.words(text)]


def _sparsity_of(model, s):
    from experiments import _decoder as DM
    n = model.config.num_hidden_layers
    return DM.mix_sparsity(n, 0.7, 0.9) if s == "mix" else (lambda i: float(s))


def _device(model):
    return next(model.parameters()).device


def _timed(runner, n: int, graph: bool) -> float:
    """Seconds of ``n`` decode steps (CUDA events; the host clock in the simulator)."""
    import torch
    if _device(runner.model).type != "cuda":
        t0 = time.perf_counter()
        runner.decode(n, graph=False)
        return time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    runner.decode(n, graph)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _reference(model, prompt, steps: int) -> dict:
    """The dense model's logits after the prompt, its greedy tokens and top-2 gaps."""
    import torch
    from experiments import _decoder as DM
    r = DM.Runner(model, prompt.shape[0], prompt.shape[1] + steps + 1)
    logits = r.prefill(prompt)
    gaps = []
    lg = logits
    for i in range(steps):
        if i:
            lg = r.decode(1, graph=False)
        top = lg.topk(2).values
        gaps.append((top[:, 0] - top[:, 1]).cpu())
    return dict(logits=logits.cpu(), tokens=r.tokens(steps).cpu(), gaps=torch.stack(gaps, 1))


def _check(r, prompt, ref: dict, steps: int, graph: bool) -> dict:
    """Runner ``r``'s logits after ``prompt`` and its first ``steps`` greedy tokens against
    the dense reference (``graph``: through the captured step, as the timed runs go)."""
    logits = r.prefill(prompt, graph=graph).cpu()
    r.decode(steps - 1, graph=graph)
    toks = r.tokens(steps).cpu()
    scale = float(ref["logits"].abs().max())
    out = dict(max_rel_err=float((logits - ref["logits"]).abs().max()) / scale,
               tokens_match=bool((toks == ref["tokens"]).all()), logit_scale=scale)
    if not out["tokens_match"]:
        diff = (toks != ref["tokens"]).nonzero()
        first = int(diff[:, 1].min())
        b = int(diff[diff[:, 1] == first][0, 0])
        out.update(first_divergence=first, gap_there=float(ref["gaps"][b, first]))
    return out


def _nonlinear_ms(model, cfg: dict, prompts: dict) -> dict:
    """Milliseconds per graph-captured decode step of ``model`` with its block projections
    skipped, per batch: what the step spends outside the linear layers (attention, norms,
    rotary, LM head, small kernels), the same for the dense and every sparse model. The
    projections are swapped back afterwards."""
    import torch
    from experiments import _decoder as DM

    class Skip(torch.nn.Module):
        """A projection's stand-in: an output of the right shape (zeros, one fill kernel),
        no weights read."""

        def __init__(self, out_features: int):
            super().__init__()
            self.out_features = out_features

        def forward(self, x):
            return x.new_zeros(tuple(x.shape[:-1]) + (self.out_features,))

    n = max(cfg["new_tokens"])
    held = [(layer, name, getattr(layer, name)) for layer in model.layers for name in model.proj]
    try:
        for layer, name, lin in held:
            setattr(layer, name, Skip(lin.out_features))
        out = {}
        gpu = _device(model).type == "cuda"
        for B in cfg["batches"]:
            r = DM.Runner(model, B, cfg["prompt"] + n + 2)
            if gpu:
                r.capture()
            r.prefill(prompts[B], graph=gpu)
            out[B] = 1e3 * _timed(r, n, gpu) / n
            del r
        return out
    finally:
        for layer, name, lin in held:
            setattr(layer, name, lin)


#: kinds of kernel in a decode step, by what their names contain (case-insensitive), the
#: first match winning: our numba kernels (names carry the module path), the attention
#: (torch's SDPA kernels, before the GEMMs: the memory-efficient one is a CUTLASS kernel),
#: the compiled glue (inductor's Triton kernels), cuBLAS's GEMV/GEMM (the dense projections
#: and the LM head); anything else (cache writes, embedding, argmax, fills) is ``other``
KERNEL_KINDS = (("ours", ("spmvlab",)),
                ("attention", ("fmha", "flash", "attention", "attn", "softmax")),
                ("glue", ("triton",)),
                ("gemm", ("gemv", "gemm", "cublas", "cutlass", "xmma", "nvjet", "splitk")))


def kernel_kind(name: str) -> str:
    """The :data:`KERNEL_KINDS` kind of a kernel named ``name``, else ``"other"``."""
    low = name.lower()
    for kind, marks in KERNEL_KINDS:
        if any(m in low for m in marks):
            return kind
    return "other"


def breakdown(kernels: list, steps: int, top: int = 8) -> dict:
    """Where ``steps`` decode steps' GPU time goes, from their kernels' ``(start, end, name)``
    (any time unit, microseconds from torch's profiler): milliseconds per step by
    :func:`kernel_kind` (``ms``), ``idle_ms``, the time between the first kernel's start and
    the last one's end that no kernel covers (launch gaps), ``span_ms``, ``kernels`` per
    step, and the ``top`` kernels by time (name, kind, launches and milliseconds per step)."""
    if not kernels:
        return {}
    ks = sorted(kernels)
    per = {kind: 0.0 for kind, _ in KERNEL_KINDS + (("other", ()),)}
    by_name: dict = {}
    busy, reach = 0.0, ks[0][0]
    for a, b, name in ks:
        per[kernel_kind(name)] += b - a
        n, t = by_name.get(name, (0, 0.0))
        by_name[name] = (n + 1, t + b - a)
        if b > reach:                     # the union of the kernels' intervals
            busy += b - max(a, reach)
            reach = b
    span = reach - ks[0][0]               # reach: the last kernel's end
    ms = 1e-3 / steps
    heavy = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    return dict(ms={k: v * ms for k, v in per.items()}, idle_ms=(span - busy) * ms,
                span_ms=span * ms, kernels=len(ks) / steps,
                top=[dict(name=n[:120], kind=kernel_kind(n), launches=c / steps, ms=t * ms)
                     for n, (c, t) in heavy])


def _profiled(runner, steps: int = 4) -> dict:
    """:func:`breakdown` of ``steps`` replays of ``runner``'s captured step, traced by torch's
    profiler (CUPTI: every kernel of the process, numba's too), after :meth:`Runner.prefill`;
    fewer where the cache has no room for ``steps`` more tokens (each replay writes the next
    position). The tracing may widen the gaps a little; the kernels' own times are the GPU's."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    steps = min(steps, runner.max_len - runner.prompt_len - 1)
    if steps < 1:
        raise ValueError(f"_profiled: the runner's cache (max_len {runner.max_len}) has no "
                         f"room after a {runner.prompt_len}-token prompt; make it longer")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            runner.graph.replay()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    return breakdown([(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                      if e.device_type == cuda], steps)


def _hf_eager(name: str, cfg: dict, prompts: dict, device: str) -> list[dict]:
    """Hugging Face ``transformers``' own eager greedy decoding (``generate``, its dynamic
    KV cache) of model ``name``'s shape with random dense fp16 weights, the reference users
    know (its speed does not depend on zeros, so it is not pruned), at each of
    ``cfg["hf_batches"]``: per step, the time of generating ``n`` tokens less that of one
    (the prompt's forward pass, which our timed runs leave out) over ``n - 1``, ``n`` the
    shortest of ``cfg["new_tokens"]``. Rows: method ``hf_eager``, graph false, no sparsity."""
    import torch
    import transformers
    from experiments import _decoder as DM
    from spmvlab.torch import memory_report
    torch.manual_seed(cfg["seed"])
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float16)        # drawn in fp16 on the device: no fp32 copy
    try:
        with torch.device(device):
            m = DM.hf_model_class(name)(DM.hf_config(name)).eval()
    finally:
        torch.set_default_dtype(prev)
    n = max(2, min(cfg["new_tokens"]))
    gpu = device == "cuda"

    def secs(ids, k):
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            m.generate(ids, max_new_tokens=k, min_new_tokens=k, do_sample=False, pad_token_id=0)
        if gpu:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    rows = []
    weights = memory_report(m)["total"]      # every linear layer, the LM head too, as ours
    for B in cfg["hf_batches"]:
        ids = prompts[B]
        secs(ids, 2)                                           # warm-up
        one = min(secs(ids, 1) for _ in range(2))
        step = max(secs(ids, n) - one, 1e-9) / (n - 1)
        rows.append(dict(model=name, sparsity=None, method="hf_eager", batch=B, new_tokens=n,
                         graph=False, tokens_per_s=B / step, ms_per_step=1e3 * step,
                         weights_bytes=weights, kernel="cublas",
                         transformers=transformers.__version__))
        print(f"{NAME}: {name} Hugging Face eager generate B={B:<3d} n={n:<4d} "
              f"{B / step:9.1f} tok/s", file=sys.stderr, flush=True)
    del m
    if gpu:
        torch.cuda.empty_cache()
    return rows


def _time_model(model, fmt: str, cfg: dict, prompts: dict, refs: dict, extra: dict,
                saved=lambda rows: None, nonlinear: dict | None = None) -> list[dict]:
    """Check and time ``model`` at every batch; ``saved(rows)`` after each batch (a partial
    results file keeps what a stopped run measured); ``nonlinear``: batch -> the step's
    milliseconds without its projections (:func:`_nonlinear_ms`), kept in each row."""
    import torch
    from experiments import _decoder as DM
    from spmvlab.torch import memory_report
    rows = []
    rep = memory_report(model)
    gpu = _device(model).type == "cuda"
    mbytes = _model_bytes(model)
    for B in cfg["batches"]:
        t0, first = time.perf_counter(), len(rows)
        if gpu:                           # what this batch's runner adds to the model
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        r = DM.Runner(model, B, cfg["prompt"] + max(max(cfg["new_tokens"]), cfg["check_tokens"]) + 2)
        if gpu:
            r.capture()                   # once a batch: the check and the timed runs replay it
        chk = _check(r, prompts[B], refs[B], cfg["check_tokens"], graph=gpu)
        for graph in cfg["graphs"]:
            if graph and not gpu:
                continue
            # eager steps at the shortest length only: slow, and a step's time does not
            # depend on how many came before it
            for n in cfg["new_tokens"] if graph else cfg["new_tokens"][:1]:
                r.prefill(prompts[B], graph=gpu)
                secs = _timed(r, n, graph)
                rows.append(dict(extra, method=fmt, batch=B, new_tokens=n, graph=graph,
                                 tokens_per_s=B * n / secs, ms_per_step=1e3 * secs / n,
                                 weights_bytes=rep["total"], model_bytes=mbytes,
                                 kernel="cublas" if fmt == "dense" else
                                 "spmv" if B == 1 and fmt != "generalsparse" else "spmm",
                                 nonlinear_ms=(nonlinear or {}).get(B), **chk,
                                 **_picks(model, B)))
                print(f"{NAME}: {extra['model']} {extra['sparsity']} {fmt:9s} B={B:<3d} n={n:<4d} "
                      f"graph={graph!s:5s} {B * n / secs:9.1f} tok/s  check {chk} "
                      f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        if gpu:
            torch.cuda.synchronize()
            peak = mbytes + int(torch.cuda.max_memory_allocated()) - held
            split = None
            if any(row["graph"] for row in rows[first:]):
                r.prefill(prompts[B], graph=True)       # positions well inside the cache
                split = _profiled(r)
            for row in rows[first:]:
                row["peak_gpu_bytes"] = peak
                if row["graph"]:
                    row["breakdown"] = split
        del r
        saved(rows)
    return rows


def _picks(model, B: int) -> dict:
    """``{"plans": [...]}`` for a model with generalsparse layers: each distinct
    "rows x columns: strategy label" of the plans its layers run for ``B`` tokens (the cost
    model picks per weight and token count, so the row names the kernels it timed); ``{}``
    for other formats (one kernel per format and token count: the row's ``kernel``)."""
    from spmvlab.torch import SparseLinear
    picks = set()
    for m in model.modules():
        label = m.plan_labels().get(B) if isinstance(m, SparseLinear) else None
        if label is not None:
            picks.add(f"{m.out_features}x{m.in_features}: {label}")
    return {"plans": sorted(picks)} if picks else {}


def _model_bytes(model) -> int:
    """Bytes ``model`` holds on its device: torch's parameters and buffers plus the encoded
    weights of its ``SparseLinear`` layers (numba allocations, outside torch's allocator)."""
    import itertools
    from spmvlab.torch import SparseLinear
    own = sum(t.numel() * t.element_size() for t in itertools.chain(model.parameters(), model.buffers()))
    return int(own + sum(m.nbytes for m in model.modules() if isinstance(m, SparseLinear)))


def measure(cfg: dict) -> dict:
    import torch
    from experiments import _decoder as DM
    from spmvlab._cuda import SIMULATOR
    from spmvlab.torch import LAYER_ENCODE_OPTIONS, sparsify
    device = "cpu" if SIMULATOR else "cuda"
    workers = cfg["encode_workers"]
    if workers is None:
        workers = 0 if SIMULATOR else min(16, os.cpu_count() or 1)
    rows = []
    for name in cfg["models"]:
        def build(name=name):
            return DM.Decoder(DM.hf_config(name), device=device, seed=cfg["seed"])
        # drawn in increasing batch order from one seed: a part of a split run measuring a
        # prefix of the batches (e.g. batch 1 alone) gets the full run's prompts
        g = torch.Generator().manual_seed(cfg["seed"] + 1)
        vocab = DM.hf_config(name).vocab_size
        prompts = {B: torch.randint(0, vocab, (B, cfg["prompt"]), generator=g).to(device)
                   for B in sorted(set(cfg["batches"]) | set(cfg["hf_batches"]))}
        if cfg["hf_batches"]:             # before our model: its own copy of the weights
            rows += _hf_eager(name, cfg, prompts, device)
            X.checkpoint(dict(rows=rows))
        base = build()
        lean = _lean(base, cfg["lean"])
        # the step without its projections: the same for every sparsity and format
        nl = _nonlinear_ms(base, cfg, prompts)
        print(f"{NAME}: {name}: the step without its projections "
              + ", ".join(f"B={B} {ms:.2f} ms" for B, ms in nl.items())
              + (" (lean: one model on the device at a time)" if lean else ""), file=sys.stderr,
              flush=True)
        for s in cfg["sparsities"]:
            def pruned(m=None, s=s):
                """``m`` (default: the model built afresh) pruned for sparsity ``s``."""
                m = build() if m is None else m
                DM.prune_(m, _sparsity_of(m, s))
                return m
            if lean:
                dense, base = pruned(base), None
            else:
                dense = pruned(copy.deepcopy(base))
            refs = {B: _reference(dense, prompts[B], cfg["check_tokens"]) for B in cfg["batches"]}
            extra = dict(model=name, sparsity=s)
            base_rows = _time_model(dense, "dense", cfg, prompts, refs, extra,
                                    lambda done: X.checkpoint(dict(rows=rows + done)), nl)
            rows += base_rows
            # every format row carries the dense tokens/s of its own run: a merged file that
            # re-measures the dense model for other formats keeps each ratio within one run
            base_tps = {(r["batch"], r["new_tokens"], r["graph"]): r["tokens_per_s"] for r in base_rows}
            for fmt in cfg["formats"]:
                if lean:                  # the dense model itself, rebuilt after each format
                    sparse, dense = (dense if dense is not None else pruned()), None
                else:
                    sparse = copy.deepcopy(dense)
                t0 = time.perf_counter()
                # prepared for every batch (the prompt is fed a token at a time, so a step
                # multiplies B tokens): generalsparse plans its kernels now, in the workers
                sparsify(sparse, None, fmt, pruning="keep", include=r"^layers\.\d+\.",
                         workers=workers, batch=tuple(cfg["batches"]))
                enc = time.perf_counter() - t0
                print(f"{NAME}: {name} {s} {fmt}: layers encoded and uploaded in {enc:.0f} s",
                      file=sys.stderr, flush=True)

                def own(done, enc=enc, opts=LAYER_ENCODE_OPTIONS.get(fmt, {})):
                    return [dict(r, encode_s=round(enc, 1), encode_options=opts,
                                 dense_tokens_per_s=base_tps.get(
                                     (r["batch"], r["new_tokens"], r["graph"]))) for r in done]
                done = _time_model(sparse, fmt, cfg, prompts, refs, extra,
                                   lambda done: X.checkpoint(dict(rows=rows + own(done))), nl)
                rows += own(done)
                del sparse
                _free(device)
            del dense
            _free(device)
    return dict(rows=rows)


def _lean(model, lean) -> bool:
    """``lean`` if given, else whether three copies of ``model`` (the unpruned model, the
    pruned dense one and a copy being sparsified) would not fit in 90 % of the GPU's memory
    (never on the CPU)."""
    import torch
    if lean is not None:
        return bool(lean)
    if _device(model).type != "cuda":
        return False
    own = sum(t.numel() * t.element_size() for t in model.parameters())
    return 3 * own > 0.9 * torch.cuda.get_device_properties(_device(model)).total_memory


def _free(device: str):
    """Give the memory of deleted models back to the device (a lean run's next model)."""
    import gc
    gc.collect()
    if device == "cuda":
        import torch
        torch.cuda.empty_cache()


def _index(values: list, v) -> int:
    return values.index(v) if v in values else len(values)


def table(results: dict) -> list[dict]:
    """Graph-captured tokens/s per (model, sparsity, batch, n) with each format's speedup
    over the dense model of the same run."""
    out = []
    rs = [r for r in results["rows"] if r.get("graph", True) and "tokens_per_s" in r]
    # each format against the dense model of its own run: ``dense_tokens_per_s``, or (rows
    # written before it) the dense row of the same part of the file
    dense = {(r["model"], str(r["sparsity"]), r["batch"], r["new_tokens"], r.get("part")):
             r["tokens_per_s"] for r in rs if r["method"] == "dense"}
    cfg = results["config"]
    order = ([str(v) for v in cfg["sparsities"]], ["dense"] + list(cfg["formats"]))
    rs.sort(key=lambda r: (r["model"], _index(order[0], str(r["sparsity"])),
                           _index(order[1], r["method"]), r["batch"], r["new_tokens"]))
    for r in rs:
        d = r["tokens_per_s"] if r["method"] == "dense" else r.get("dense_tokens_per_s") or \
            dense.get((r["model"], str(r["sparsity"]), r["batch"], r["new_tokens"], r.get("part")))
        out.append(dict(model=r["model"], sparsity=str(r["sparsity"]), method=r["method"],
                        batch=r["batch"], new_tokens=r["new_tokens"], tok_s=r["tokens_per_s"],
                        speedup=r["tokens_per_s"] / d if d else None,
                        step_ms=r["ms_per_step"], linear_ms=r["ms_per_step"] - r["nonlinear_ms"]
                        if r.get("nonlinear_ms") is not None else None,
                        gb=r["weights_bytes"] / 1e9,
                        peak_gb=r["peak_gpu_bytes"] / 1e9 if r.get("peak_gpu_bytes") else None,
                        ok=r.get("tokens_match"), part=r.get("part") or 0))
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """Tokens/s over dense by sparsity, one panel per batch and a row of panels per model
    (graph-captured steps, each point from the newest part of the file that measured it, the
    longest generation there: an older part's longer run timed older code), one line per
    format."""
    plt = P.pyplot()
    latest = {}
    for r in table(results):
        k = (r["model"], r["method"], r["batch"], r["sparsity"])
        if r["speedup"] and (k not in latest or (r["part"], r["new_tokens"]) >
                             (latest[k]["part"], latest[k]["new_tokens"])):
            latest[k] = r
    rows = list(latest.values())
    lengths = sorted({r["new_tokens"] for r in rows})
    batches = sorted({r["batch"] for r in rows})
    order = list(results["config"].get("models") or [])
    models = sorted({r["model"] for r in rows},
                    key=lambda m: (order.index(m) if m in order else len(order), m))
    sps = [str(s) for s in results["config"]["sparsities"]]
    # a batch's panels share their y scale, so that models measured at fewer sparsities
    # read against the first model's lines
    fig, axes = plt.subplots(len(models), len(batches), squeeze=False, sharey="col",
                             figsize=(P.PAGE_WIDTH, 0.3 + 2.5 * len(models)))
    for row, model in zip(axes, models):
        for ax, B in zip(row, batches):
            for m in sorted({r["method"] for r in rows} - {"dense"}):
                pts = [(sps.index(r["sparsity"]), r["speedup"]) for r in rows
                       if r["model"] == model and r["method"] == m and r["batch"] == B]
                if pts:
                    ax.plot(*zip(*sorted(pts)), **P.line_style(m))
            ax.axhline(1.0, color="gray", lw=0.8, ls="--")
            ax.set_xticks(range(len(sps)), [s if s == "mix" else f"{100 * float(s):.0f}%"
                                            for s in sps])
            title = f"batch {B}" if len(models) == 1 else f"{model}, batch {B}"
            ax.set(title=title, xlabel="sparsity", ylabel="tokens/s over dense")
    fig.suptitle(f"{', '.join(models)}, {' or '.join(map(str, lengths))} generated tokens, "
                 f"decode step in a CUDA graph; {P.device_name(results)}")
    P.legend_below(fig, axes.ravel(), room=None)
    return P.savefig(fig, fig_path, tight=False)


#: the model whose layer shapes ``table1_macko`` times in isolation
T1_MODEL = "llama2-7b"


def predicted(results: dict) -> list[dict]:
    """The integration yardstick at batch 1: what ``table1_macko``'s isolated cold-L2 layer
    times on the same GPU (a Llama-2-7B block's seven projections, 32 blocks) predict for
    MACKO over dense once the step's measured time outside the projections
    (``nonlinear_ms``) is added to both, against the speedup measured here (``share``: the
    measured speedup over the predicted one). The decoder runs q/k/v and gate/up as stacked
    layers, the isolated times are the separate layers': the share also holds what stacking
    gains. Llama-2-7B rows only: those are the isolated layers' shapes. Empty without those
    results."""
    from spmvlab.results import load_results, results_path
    from spmvlab.runinfo import device_slug
    path = results_path("table1_macko", device_slug((results.get("meta") or {}).get("device")))
    if not os.path.isfile(path):
        return []
    from experiments import table1_macko as T1
    iso = {str(r["sparsity"]): r for r in T1.table(load_results(path))}
    out = []
    for r in table(results):
        t = iso.get(r["sparsity"])
        if r["model"] != T1_MODEL or r["method"] != "macko" or r["batch"] != 1 or not t \
                or r["speedup"] is None:
            continue
        nl = r["step_ms"] - r["linear_ms"]
        dense_ms, macko_ms = 1e3 / t["dense_tok_s"], 1e3 / t["macko_tok_s"]
        pred = (dense_ms + nl) / (macko_ms + nl)
        out.append(dict(model=r["model"], sparsity=r["sparsity"], new_tokens=r["new_tokens"],
                        dense_linears_ms=dense_ms, macko_linears_ms=macko_ms, nonlinear_ms=nl,
                        predicted=pred, speedup=r["speedup"], share=r["speedup"] / pred))
    return out


def breakdown_table(results: dict) -> list[dict]:
    """Per graph-captured (model, sparsity, method, batch) with a ``breakdown``: the step's
    milliseconds by kernel kind, the gaps between kernels, and the kernels per step."""
    out, seen = [], set()
    for r in results["rows"]:
        b = r.get("breakdown")
        key = (r["model"], str(r["sparsity"]), r["method"], r["batch"])
        if not r.get("graph", True) or not b or key in seen:
            continue
        seen.add(key)
        out.append(dict(model=r["model"], sparsity=str(r["sparsity"]), method=r["method"],
                        batch=r["batch"], **{f"{k}_ms": v for k, v in b["ms"].items()},
                        idle_ms=b["idle_ms"], span_ms=b["span_ms"], kernels=b["kernels"]))
    return out


def eager_table(results: dict) -> list[dict]:
    """The eager rows (each step launched from Python): every format's tokens/s against the
    dense model's in the same run, and Hugging Face's own ``generate`` (``hf_eager``)."""
    out = []
    for r in results["rows"]:
        if r.get("graph", True) or "tokens_per_s" not in r:
            continue
        d = r["tokens_per_s"] if r["method"] == "dense" else r.get("dense_tokens_per_s")
        out.append(dict(model=r["model"], sparsity="" if r["sparsity"] is None else str(r["sparsity"]),
                        method=r["method"], batch=r["batch"], new_tokens=r["new_tokens"],
                        tok_s=r["tokens_per_s"], speedup=r["tokens_per_s"] / d if d else None,
                        step_ms=r["ms_per_step"]))
    return out


def report(results: dict):
    cols = [("model", "model", ""), ("sparsity", "sparsity", ""), ("method", "method", ""),
            ("batch", "B", "d"), ("new_tokens", "n", "d"), ("tok_s", "tok/s", ".1f"),
            ("speedup", "x dense", ".2f"), ("step_ms", "ms/step", ".2f"),
            ("linear_ms", "of it linears", ".2f"), ("gb", "GB", ".2f"), ("peak_gb", "peak GB", ".2f"), ("ok", "tokens ok", "")]
    P.print_table(table(results), cols)
    pred = predicted(results)
    if pred:
        print("\nbatch 1, MACKO: the speedup table1_macko's isolated layer times predict "
              "(plus the step's non-linear time) against the measured one:")
        P.print_table(pred, [("sparsity", "sparsity", ""), ("new_tokens", "n", "d"),
                             ("dense_linears_ms", "dense linears ms", ".2f"),
                             ("macko_linears_ms", "MACKO linears ms", ".2f"),
                             ("nonlinear_ms", "non-linear ms", ".2f"),
                             ("predicted", "predicted x", ".2f"), ("speedup", "measured x", ".2f"),
                             ("share", "measured / predicted", ".2f")])
    split = breakdown_table(results)
    if split:
        print("\nwhere a captured step's GPU time goes (ms per step, torch's profiler over "
              "replays; idle: between kernels):")
        kinds = [k for k, _ in KERNEL_KINDS] + ["other"]
        P.print_table(split, cols[:4] + [(f"{k}_ms", k, ".3f") for k in kinds]
                      + [("idle_ms", "idle", ".3f"), ("span_ms", "span", ".2f"),
                         ("kernels", "kernels", ".0f")])
    eager = eager_table(results)
    if eager:
        print("\neager steps (launched from Python; hf_eager: transformers' generate):")
        P.print_table(eager, cols[:8])


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
