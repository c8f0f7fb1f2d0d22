"""spmvlab.torch: SparseLinear against the dense product of the same stored weights for every
format with SpMV and SpMM kernels (one token, several, several leading dimensions, bias),
torch.compile through the custom op, sparsify and memory_report on a small model, and the
layer's argument errors. Skipped without torch (CI installs it only with the ``torch`` extra);
in the CUDA simulator the layer takes CPU tensors, on a GPU CUDA tensors (and there a
captured CUDA graph is replayed)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch", reason="spmvlab.torch needs torch (the 'torch' extra)")

from reference._common import DTypeError, OptionError, ShapeError  # noqa: E402
from spmvlab._cuda import SIMULATOR  # noqa: E402
from spmvlab import torch as ST  # noqa: E402
from tests.parity import assert_close  # noqa: E402

DEV = "cpu" if SIMULATOR else "cuda"
OUT, IN = 70, 96          # more rows than one warp's and one block's share in the simulator


def _weight(seed=0, sparsity=0.7, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(OUT, IN, generator=g)
    w[torch.rand(OUT, IN, generator=g) < sparsity] = 0
    w[3] = 0                                              # an empty row
    return w.to(dtype)


def _linear(w):
    lin = torch.nn.Linear(IN, OUT, bias=False).to(torch.float16)
    with torch.no_grad():
        lin.weight.copy_(w)
    return lin


def _stored(w: torch.Tensor) -> sp.csr_matrix:
    A = sp.csr_matrix(w.to(torch.float64).numpy())
    A.eliminate_zeros()
    return A


def _check(layer, w, x):
    y = layer(x.to(DEV))
    assert y.shape == x.shape[:-1] + (OUT,) and y.dtype == x.dtype and y.device.type == DEV
    X = x.reshape(-1, IN).to(torch.float64).numpy().T
    got = y.reshape(-1, OUT).cpu()
    assert_close(got.numpy().T.copy(), _stored(w), X.copy(), np.float16, f"{layer.format}")


@pytest.mark.parametrize("fmt", ST.layer_formats(torch.float16))
def test_every_format_one_token_and_several(fmt):
    w = _weight()
    layer = ST.SparseLinear.from_linear(_linear(w), format=fmt)
    assert layer.nnz == int((w != 0).sum())
    g = torch.Generator().manual_seed(1)
    for shape in [(IN,), (1, IN), (3, IN), (2, 1, IN)]:
        _check(layer, w, torch.randn(*shape, generator=g).to(torch.float16))
    assert layer.nbytes > 0         # generalsparse: the plans of 1, 3 and 2 tokens
    if fmt == ST.GENERALSPARSE:
        assert sorted(layer._matrix.plans) == [1, 2, 3]


@pytest.mark.parametrize("fmt", ST.layer_formats(torch.float16))
def test_a_token_inside_a_larger_tensor(fmt):
    """x a view 2 bytes past an allocation's start (the kernels' boundary takes device
    operands on 16-byte boundaries): forward copies it through torch's allocator and gives
    the product."""
    w = _weight(seed=2)
    layer = ST.SparseLinear.from_linear(_linear(w), format=fmt)
    g = torch.Generator().manual_seed(3)
    big = torch.randn(2 * IN + 1, generator=g).to(torch.float16).to(DEV)
    for x in (big[1:1 + IN], big[1:1 + 2 * IN].view(2, IN)):
        assert x.data_ptr() % 16 == 2
        assert ST._aligned(x).data_ptr() % 16 == 0 and torch.equal(ST._aligned(x), x)
        y = layer(x)
        assert_close(y.reshape(-1, OUT).cpu().numpy().T.copy(), _stored(w),
                     x.reshape(-1, IN).cpu().to(torch.float64).numpy().T.copy(), np.float16, fmt)



def test_layers_encode_with_the_layer_options_unless_told():
    """A CSR-dtANS layer is stored in the long-row layout (LAYER_ENCODE_OPTIONS: a warp's 32
    streams per row) unless the caller names another, and multiplies right either way; auto
    times each format under the same options."""
    w = _weight()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, IN, generator=g).to(torch.float16)
    for opts, lanes in [({}, 32), (dict(lanes_per_row=1), 1)]:
        M = ST.encode_weight(w.float().numpy(), "csr_dtans", "float16", **opts)
        assert M.lanes_per_row == lanes
        layer = ST.SparseLinear.from_weight(w, format="csr_dtans", **opts)
        assert layer._matrix.lanes_per_row == lanes
        _check(layer, w, x)
    assert ST._layer_method("csr_dtans") == "csr_dtans[lanes_per_row=32]"
    assert ST._layer_method("macko") == "macko"


def test_bias_and_compile_through_the_custom_op():
    w = _weight(seed=2)
    b = torch.randn(OUT).to(torch.float16)
    plain = ST.SparseLinear.from_weight(w, format="csr")
    layer = ST.SparseLinear.from_weight(w, b, format="csr")
    x = torch.randn(2, IN).to(torch.float16)
    y = layer(x.to(DEV))
    assert torch.equal(y.cpu(), (plain(x.to(DEV)) + b.to(DEV)).cpu())   # the bias: torch's add
    _check(plain, w, x)
    compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(x.to(DEV)).cpu(), y.cpu())


def test_errors_are_typed():
    w = _weight()
    layer = ST.SparseLinear.from_weight(w, format="csr")
    with pytest.raises(DTypeError):
        layer(torch.zeros(IN, dtype=torch.float32, device=DEV))
    with pytest.raises(ShapeError):
        layer(torch.zeros(IN + 1, dtype=torch.float16, device=DEV))
    with pytest.raises(DTypeError):
        layer(np.zeros(IN, np.float16))
    with pytest.raises(OptionError):                     # MACKO has no float64 kernels
        ST.SparseLinear.from_weight(w.double(), format="macko")
    with pytest.raises(OptionError):
        ST.SparseLinear.from_linear(torch.nn.Conv1d(2, 2, 1), format="csr")
    with pytest.raises(OptionError):
        ST.sparsify(torch.nn.Linear(4, 4), 1.5, "csr")
    with pytest.raises(OptionError):
        ST.sparsify(torch.nn.Linear(4, 4), 0.5, "csr", pruning="random")
    with pytest.raises(OptionError, match="SpMV and SpMM kernels"):   # no such layer format
        ST.SparseLinear.from_weight(w, format="sell")
    with pytest.raises(OptionError):                     # the cost model picks its kernels
        ST.SparseLinear.from_weight(w, format="generalsparse", config=layer._config)
    with pytest.raises(OptionError):                     # GeneralSparse has no float64 kernels
        ST.SparseLinear.from_weight(w.double(), format="generalsparse")


def test_sparsify_swaps_the_matching_layers_and_reports_bytes():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(IN, OUT), torch.nn.ReLU(),
                                torch.nn.Linear(OUT, IN), torch.nn.ReLU(),
                                torch.nn.Linear(IN, 8)).to(torch.float16)
    dense = [m.weight.detach().clone() for m in model if isinstance(m, torch.nn.Linear)]
    swapped = ST.sparsify(model, 0.75, "csr", exclude=r"^4$")
    assert swapped == ["0", "2"]
    assert isinstance(model[0], ST.SparseLinear) and isinstance(model[4], torch.nn.Linear)
    # every row lost exactly round(0.75 * in_features) weights, the largest kept
    for layer, w in ((model[0], dense[0]), (model[2], dense[1])):
        assert layer.nnz == w.shape[0] * (w.shape[1] - round(0.75 * w.shape[1]))
    rep = ST.memory_report(model)
    assert [r["name"] for r in rep["layers"]] == ["0", "2", "4"]
    assert rep["by_format"]["dense"] == 8 * IN * 2
    assert rep["total"] == sum(r["bytes"] for r in rep["layers"]) == \
        rep["by_format"]["dense"] + rep["by_format"]["csr"]
    # the same function as the dense model holding the same zeros
    with torch.no_grad():
        x = torch.randn(3, IN).to(torch.float16)
        h = x.float()
        for k, lin in ((0, model[0]), (2, model[2])):
            w = dense[k // 2].float()
            keep = torch.zeros_like(w, dtype=torch.bool)
            keep.scatter_(1, w.abs().topk(w.shape[1] - round(0.75 * w.shape[1]), dim=1).indices, True)
            h = torch.relu(h @ (w * keep).t() + lin.bias.float().cpu())
        got = model[:4](x.to(DEV)).float().cpu()
    assert torch.allclose(got, h, rtol=2e-2, atol=2e-2)
    # encoded in two worker processes: the same layers
    again = torch.nn.Sequential(torch.nn.Linear(IN, OUT), torch.nn.ReLU(),
                                torch.nn.Linear(OUT, IN)).to(torch.float16)
    with torch.no_grad():
        for k in (0, 2):
            again[k].weight.copy_(dense[k // 2])
            again[k].bias.copy_(model[k].bias)
    assert ST.sparsify(again, 0.75, "csr", workers=2) == ["0", "2"]
    assert torch.equal(again(x.to(DEV)).cpu(), model[:3](x.to(DEV)).cpu())


def test_generalsparse_plans_travel_with_the_encoded_layer(monkeypatch):
    """What a sparsify worker returns for a generalsparse layer: the stored matrix and its
    plans for the prepared token counts, validated in full there; across the process
    boundary (pickled) the parent checks each plan's checksum, not the expensive pass again,
    and neither ranks nor plans again; a plan damaged on the way is refused. Other formats
    carry no plans."""
    import pickle
    import dataclasses
    from reference._common import FormatError
    from reference.generalsparse import Plan
    w = _weight()
    sent = ST._encode_layer(w.float().numpy(), None, ST.GENERALSPARSE, "float16", {}, (3, 2))
    assert ST._encode_layer(w.float().numpy(), None, "csr", "float16", {}, (3,))[1] == {}
    M, plans = pickle.loads(pickle.dumps(sent))
    assert sorted(plans) == [2, 3] and isinstance(plans[3][1], str)
    layer = ST.SparseLinear.from_encoded(M, None, format=ST.GENERALSPARSE, dtype=torch.float16)

    def planned_again(*args):
        raise AssertionError("planned in the parent")
    full = Plan.validate

    def cheap_only(self, expensive=False, **kw):
        assert not expensive, "validated in full again in the parent"
        return full(self, expensive, **kw)
    monkeypatch.setattr(ST._GeneralSparseWeight, "host_plan", staticmethod(planned_again))
    monkeypatch.setattr(Plan, "validate", cheap_only)
    for n in (3, 2):
        layer._matrix.plan(n, plans[n])
    layer.prepare(3, 2)
    assert layer._matrix.plans[3][1] == plans[3][1]
    g = torch.Generator().manual_seed(3)
    _check(layer, w, torch.randn(3, IN, generator=g).to(torch.float16))
    _check(layer, w, torch.randn(2, IN, generator=g).to(torch.float16))
    # a plan whose arrays changed after its validation
    _, again = pickle.loads(pickle.dumps(sent))
    p, label = again[3]
    bad = np.array(p.values, copy=True)
    bad[0] += 1
    other = ST.SparseLinear.from_encoded(M, None, format=ST.GENERALSPARSE, dtype=torch.float16)
    damaged = dataclasses.replace(p, values=bad)
    with pytest.raises(FormatError, match="checksum"):
        other._matrix.plan(3, (damaged, label))


def test_sparsify_prepares_every_token_count_it_is_given():
    """``batch`` as several token counts: a generalsparse layer holds a plan for each (a
    decode step's and its prompt's), built before any forward; a count below 1 or a
    non-count is a typed error."""
    model = torch.nn.Sequential(torch.nn.Linear(IN, OUT, bias=False)).to(torch.float16)
    ST.sparsify(model, 0.7, ST.GENERALSPARSE, batch=(2, 6))
    assert sorted(model[0]._matrix.plans) == [2, 6]
    for bad in (0, (), (2, 0), "2", True):
        with pytest.raises(OptionError, match="batch"):
            ST.sparsify(torch.nn.Sequential(torch.nn.Linear(IN, OUT)).to(torch.float16), 0.7,
                        "csr", batch=bad)


def test_layers_and_e2e_rows_name_the_generalsparse_picks():
    """``plan_labels``: the cost model's pick (its strategy label) per token count a
    generalsparse layer has planned, none for other formats; e2e_decode's rows list each
    distinct (shape, pick) of a model's layers for their batch (the mutation of a shape
    or of the count read would show here)."""
    from experiments import e2e_decode as E
    model = torch.nn.Sequential(torch.nn.Linear(IN, OUT, bias=False),
                                torch.nn.Linear(OUT, 2 * IN, bias=False),
                                torch.nn.Linear(2 * IN, OUT, bias=False)).to(torch.float16)
    ST.sparsify(model, 0.7, ST.GENERALSPARSE, include=r"^[01]$", batch=(1, 5))
    ST.sparsify(model, 0.7, "csr", include=r"^2$")
    first = model[0].plan_labels()
    assert sorted(first) == [1, 5] and model[2].plan_labels() == {}
    for n in (1, 5):
        assert first[n] == ST._GeneralSparseWeight.host_plan(model[0]._matrix.A, n,
                                                             np.float16)[1]
    assert E._picks(model, 5) == {"plans": sorted([
        f"{OUT}x{IN}: {first[5]}", f"{2 * IN}x{OUT}: {model[1].plan_labels()[5]}"])}
    assert E._picks(model, 3) == {} and E._picks(model[2:], 1) == {}
    assert E._picks(model, 1) == {"plans": sorted([
        f"{OUT}x{IN}: {first[1]}", f"{2 * IN}x{OUT}: {model[1].plan_labels()[1]}"])}


def test_auto_format_times_every_format_on_a_gpu():
    """``format="auto"``: the fastest checked format of the layer's shape and batch (on a
    GPU), the choice cached; in the simulator a typed error; no other format's options."""
    model = torch.nn.Sequential(torch.nn.Linear(IN, OUT, bias=False)).to(torch.float16)
    with pytest.raises(OptionError):
        ST.sparsify(model, 0.7, "auto", delta_bits=4)
    if SIMULATOR:
        with pytest.raises(OptionError):
            ST.sparsify(model, 0.7, "auto")
        return
    w = model[0].weight.detach().clone()
    ST.sparsify(model, 0.7, "auto", batch=4)
    assert model[0].format in ST.layer_formats(torch.float16)
    assert ST._AUTO and set(ST._AUTO.values()) <= set(ST.layer_formats(torch.float16))
    x = torch.randn(4, IN, device="cuda", dtype=torch.float16)
    pruned = torch.from_numpy(ST._prune_rows(w.float().cpu().numpy(), 0.7)).half()
    _check(model[0], pruned, x.cpu())


@pytest.mark.skipif(SIMULATOR, reason="CUDA graphs need a GPU")
@pytest.mark.parametrize("fmt", ["macko", "generalsparse"])
def test_cuda_graph_capture_and_replay(fmt):
    w = _weight(seed=4)
    layer = ST.SparseLinear.from_weight(w, torch.randn(OUT).half(), format=fmt).to("cuda")
    static = torch.randn(4, IN, device="cuda", dtype=torch.float16)
    if fmt == ST.GENERALSPARSE:       # a plan cannot be built inside a capture: a typed error
        with pytest.raises(OptionError, match="prepare"):
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                layer(static)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            layer(static)                             # warm-up: compile outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = layer(static)
    for seed in range(3):
        static.copy_(torch.randn(4, IN, generator=torch.Generator().manual_seed(seed)).half())
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, layer(static))


#: the simulator's format for the whole-model tests: they test the wiring (every format runs
#: on a GPU), and COO's SpMM emulates in a fraction of a second where CSR's warp-per-row
#: kernel, all shuffles, takes seconds a call
SIM_FORMAT = "coo"


@pytest.mark.parametrize("model", ["tiny", "tiny-opt"])
@pytest.mark.parametrize("fmt", ST.layer_formats(torch.float16) if not SIMULATOR else [SIM_FORMAT])
def test_a_two_layer_decoder_decodes_as_its_dense_twin(fmt, model):
    """experiments/_decoder's tiny Llama (2 blocks, GQA) and tiny OPT (biases, LayerNorm,
    learned positions), pruned to 70 % per row: the model with ``fmt`` layers gives the
    dense model's logits after a prompt (within the fp16 bound scaled by depth) and its
    greedy tokens; on a GPU also from a captured graph."""
    pytest.importorskip("transformers", reason="the decoder's shapes come from transformers")
    import copy
    from experiments import _decoder as DM
    dense = DM.Decoder(DM.hf_config(model), device=DEV, seed=3)
    DM.prune_(dense, lambda i: 0.7)
    sparse = copy.deepcopy(dense)
    names = ST.sparsify(sparse, None, fmt, pruning="keep", include=r"^layers\.\d+\.")
    assert len(names) == 2 * len(DM.PROJS[DM.arch(model)]) == 2 * len(dense.proj)
    prompt = torch.randint(0, 80, (2, 5), generator=torch.Generator().manual_seed(0)).to(DEV)
    runs = []
    for model in (dense, sparse):
        r = DM.Runner(model, 2, 12)
        logits = r.prefill(prompt)
        r.decode(3, graph=False)
        runs.append((logits.float().cpu(), r.tokens(4).cpu()))
    (ld, td), (ls, ts) = runs
    assert float((ls - ld).abs().max()) <= 1e-2 * float(ld.abs().max())
    assert torch.equal(ts, td)
    if not SIMULATOR:
        r = DM.Runner(sparse, 2, 12)
        r.prefill(prompt)
        r.capture()
        r.decode(3, graph=True)
        assert torch.equal(r.tokens(4).cpu(), td)


def test_the_decoder_glue_is_compiled_on_a_gpu_and_computes_its_eager_form():
    """experiments/_decoder's functions between a block's projections (norms, residual
    adds, rotary, the gated SiLU): on CUDA tensors through torch.compile, within fp16
    rounding of the eager function; on CPU tensors (the simulator's) the eager function
    itself, nothing compiled."""
    from experiments import _decoder as DM
    g = torch.Generator().manual_seed(0)

    def t(*shape, half=True):
        v = torch.randn(*shape, generator=g)
        return (v.half() if half else v).to(DEV)

    x, o, w, b = t(3, 64), t(3, 64), t(64, half=False), t(64, half=False)
    cases = [(DM._rms_norm, (x, w, 1e-5)), (DM._layer_norm, (x, w, b, 1e-5)),
             (DM._add_rms_norm, (x, o, w, 1e-5)), (DM._add_layer_norm, (x, o, w, b, 1e-5)),
             (DM._rope_qkv, (t(3, 8 * 16), t(1, 16, half=False), t(1, 16, half=False), 4, 2)),
             (DM._gated_silu, (t(3, 192),))]
    for fn, args in cases:
        got, want = fn(*args), fn.eager(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for a, e in zip(got, want):
            assert a.dtype == e.dtype == torch.float16 and a.shape == e.shape, fn.__name__
            assert float((a.float() - e.float()).abs().max()) <= 2e-3 * float(e.abs().max()), \
                fn.__name__
        assert (fn.eager in DM._COMPILED) == (DEV == "cuda"), fn.__name__


#: experiments/_decoder's parameter names -> transformers', per architecture ({i}: the
#: block; a tuple: the layers a stacked one holds, in the order of its rows)
_HF_NAMES = {
    "tiny": dict({"embed": "model.embed_tokens", "norm": "model.norm", "lm_head": "lm_head"},
                 **{f"layers.{{i}}.{k}": (tuple(f"model.layers.{{i}}.{n}" for n in v)
                                          if isinstance(v, tuple) else f"model.layers.{{i}}.{v}")
                    for k, v in dict(
                     qkv_proj=("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
                     o_proj="self_attn.o_proj", gate_up_proj=("mlp.gate_proj", "mlp.up_proj"),
                     down_proj="mlp.down_proj", attn_norm="input_layernorm",
                     mlp_norm="post_attention_layernorm").items()}),
    "tiny-opt": dict({"embed": "model.decoder.embed_tokens",
                      "positions": "model.decoder.embed_positions",
                      "norm": "model.decoder.final_layer_norm", "lm_head": "lm_head"},
                     **{f"layers.{{i}}.{k}": (tuple(f"model.decoder.layers.{{i}}.{n}" for n in v)
                                              if isinstance(v, tuple)
                                              else f"model.decoder.layers.{{i}}.{v}")
                        for k, v in dict(
                         qkv_proj=("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
                         out_proj="self_attn.out_proj", fc1="fc1", fc2="fc2",
                         attn_norm="self_attn_layer_norm", mlp_norm="final_layer_norm").items()}),
}


@pytest.mark.parametrize("model", ["tiny", "tiny-opt"])
def test_the_decoder_computes_what_hugging_face_computes(model):
    """experiments/_decoder's tiny Llama and tiny OPT with their weights (and biases) copied
    into transformers' own model of the same config: fed a prompt a token at a time through
    the static cache, each gives the logits Hugging Face's model gives at the prompt's last
    position (within float32 rounding), so its norms, residual adds, positions, attention and
    MLP are the architecture's. Both run in float32: in float16 the two round at different
    places (norm weights, rotation, attention kernels) and on a GPU part by a few percent of
    the largest logit with these scaled scores, too loose a bound to catch a wrong step; the
    float16 glue is checked against its eager form by
    :func:`test_the_decoder_glue_is_compiled_on_a_gpu_and_computes_its_eager_form`."""
    pytest.importorskip("transformers", reason="the model comes from transformers")
    from experiments import _decoder as DM
    cfg = DM.hf_config(model)
    cfg.tie_word_embeddings = False       # OPT's default ties the LM head to the embedding
    ours = DM.Decoder(cfg, dtype=torch.float32, device=DEV, seed=3)
    hf = DM.hf_model_class(model)(cfg).to(DEV, torch.float32).eval()
    theirs = dict(hf.named_parameters())
    with torch.no_grad():
        for layer in ours.layers:     # scores of order one: the positions' rotation matters
            w = layer.qkv_proj.weight  # rows: q (hidden), then k and v (equal halves)
            w[:(w.shape[0] + cfg.hidden_size) // 2].mul_(30)
        g = torch.Generator().manual_seed(2)
        for m in ours.modules():      # norms that are not the identity at init
            if isinstance(m, (DM.RMSNorm, DM.LayerNorm)):
                for p in m.parameters():
                    p.copy_(torch.rand(p.shape, generator=g) + 0.5)
        copied = set()
        for name, p in ours.named_parameters():
            parts = name.split(".")
            key = (f"layers.{{i}}.{parts[2]}" if parts[0] == "layers" else parts[0])
            i = parts[1] if parts[0] == "layers" else None
            to = _HF_NAMES[model][key]
            hnames = [f"{h.format(i=i)}.{parts[-1]}" for h in (to if isinstance(to, tuple) else (to,))]
            assert sum(theirs[h].shape[0] for h in hnames) == p.shape[0], name
            for h, rows in zip(hnames, p.split([theirs[h].shape[0] for h in hnames])):
                theirs[h].copy_(rows)
                copied.add(h)
        assert copied == set(theirs)
    prompt = torch.randint(0, 80, (2, 6), generator=torch.Generator().manual_seed(1)).to(DEV)
    got = DM.Runner(ours, 2, 8).prefill(prompt).float()
    with torch.no_grad():
        want = hf(prompt).logits[:, -1].float()
    assert float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())


def test_a_hugging_face_llama_generates_as_its_pruned_dense_twin():
    """The README's use: ``sparsify`` on a transformers LlamaForCausalLM (a tiny random one
    here), then ``generate``: the same greedy tokens as the dense model holding the same
    zeros."""
    transformers = pytest.importorskip("transformers", reason="the model comes from transformers")
    import copy
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=80)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(DEV, torch.float16)
    dense = copy.deepcopy(model)
    names = ST.sparsify(model, 0.7, SIM_FORMAT if SIMULATOR else "csr",
                        include=r"layers\.\d+\.(self_attn|mlp)\.")
    assert len(names) == 14 and all(isinstance(model.get_submodule(n), ST.SparseLinear) for n in names)
    with torch.no_grad():
        for n in names:
            w = dense.get_submodule(n).weight
            w.copy_(torch.from_numpy(ST._prune_rows(w.float().cpu().numpy(), 0.7)).to(w))
    ids = torch.tensor([[1, 5, 7], [2, 9, 4]], device=DEV)
    got = model.generate(ids, max_new_tokens=4, do_sample=False)
    want = dense.generate(ids, max_new_tokens=4, do_sample=False)
    assert torch.equal(got, want)


def test_e2e_decode_measures_a_tiny_model():
    """experiments/e2e_decode.measure on the tiny Llama: Hugging Face's eager generate as
    the reference, then a dense row and a CSR row per batch,
    both checked against the dense reference, with the step's time outside the projections
    and (the CSR row) the dense tokens/s of the same run; the projections come back after
    the step was timed without them. On a GPU each row says where its captured step's
    time went: our kernels in the CSR model's, none in the dense model's."""
    pytest.importorskip("transformers", reason="the decoder's shapes come from transformers")
    from experiments import _decoder as DM
    from experiments import e2e_decode as E
    cfg = E.config(models=["tiny"], sparsities=[0.7], formats=["csr"], batches=[1],
                   new_tokens=[2], check_tokens=2, prompt=3, graphs=[not SIMULATOR],
                   encode_workers=0, hf_batches=[2])
    rows = E.measure(cfg)["rows"]
    assert [r["method"] for r in rows] == ["hf_eager", "dense", "csr"]
    hf, dense, csr = rows
    assert hf["batch"] == 2 and not hf["graph"] and hf["tokens_per_s"] > 0 and hf["sparsity"] is None
    assert hf["weights_bytes"] == dense["weights_bytes"]      # the same linear layers counted
    assert dense["tokens_match"] and csr["tokens_match"] and csr["max_rel_err"] < 1e-2
    assert dense["nonlinear_ms"] == csr["nonlinear_ms"] > 0
    assert csr["dense_tokens_per_s"] == dense["tokens_per_s"]
    if SIMULATOR:                         # no captured step to profile
        assert "breakdown" not in dense and "breakdown" not in csr
    else:                                 # our kernels in the CSR step only, cuBLAS in both
        assert dense["breakdown"]["ms"]["ours"] == 0 < csr["breakdown"]["ms"]["ours"]
        assert dense["breakdown"]["ms"]["gemm"] > 0 and csr["breakdown"]["ms"]["gemm"] > 0
        assert 0 < csr["breakdown"]["kernels"] and csr["breakdown"]["span_ms"] > 0
    # the model's bytes on the device: the dense model's tensors; the CSR model's, its
    # projections counted as encoded instead
    m = DM.Decoder(DM.hf_config("tiny"), device="cpu", seed=0)
    assert dense["model_bytes"] == sum(t.numel() * t.element_size()
                                       for t in [*m.parameters(), *m.buffers()])
    proj = dense["weights_bytes"] - csr["weights_bytes"]
    assert proj > 0 and csr["model_bytes"] == dense["model_bytes"] - proj


def test_e2e_decode_lean_rebuilds_the_same_model(capsys):
    """A lean run (one model at a time: the pruned dense model sparsified in place, rebuilt
    from its seed for the next format and the next sparsity) on the tiny OPT: every format's
    logits match the dense reference of its sparsity (a rebuilt model that was not pruned,
    or pruned at the other sparsity, would not) and so do its greedy tokens, up to a tie:
    where they part, the dense model's top two logits lie within the logits' bound (on the
    H200, 50 % parts at the second token over a gap of one fp16 ulp)."""
    pytest.importorskip("transformers", reason="the decoder's shapes come from transformers")
    from experiments import e2e_decode as E
    cfg = E.config(models=["tiny-opt"], sparsities=[0.7, 0.5], formats=[SIM_FORMAT, "split24"],
                   batches=[2], new_tokens=[1], check_tokens=2, prompt=2,
                   graphs=[not SIMULATOR], encode_workers=0, hf_batches=[], lean=True)
    rows = E.measure(cfg)["rows"]
    assert "lean: one model on the device at a time" in capsys.readouterr().err
    assert [(r["sparsity"], r["method"]) for r in rows] == [
        (s, m) for s in (0.7, 0.5) for m in ("dense", SIM_FORMAT, "split24")]
    assert all(r["max_rel_err"] < 1e-2 for r in rows)
    assert all(r["tokens_match"] or r["gap_there"] <= 1e-2 * r["logit_scale"] for r in rows)
    dense = {r["sparsity"]: r["weights_bytes"] for r in rows if r["method"] == "dense"}
    assert dense[0.7] == dense[0.5]              # the same shapes; the zeros differ
