"""Launch CSR SpMM and the guarded search's row-per-warp anchors ("row/warp cv" and its
cyclic twin "row/warp cv cyc", code optimizer on) on one long-row fp16 weight matrix, for a
profiler:

    ncu --kernel-name regex:"csr_spmm|spmm_kernel" --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section WarpStateStats ... \\
        python tools/profile_gs_rowwarp.py [ROWS COLS SPARSITY PRUNING] [--n 8] --which cyclic

``--which`` (csr, chunked, cyclic, cyclic_batch, cyclic_pf: the cyclic anchor with
``codegen.generate``'s option; default csr, chunked, cyclic; comma-separated) picks the kernels; each
runs three times (the first compiles), so ``--launch-skip 2 --launch-count 1`` with one kernel
profiles its third launch (ncu counts the launches of all kernels together; the two generated
kernels share a name). results/h200/ncu_gs_rowwarp_4096x36864_random90_n8.txt holds a saved
profile of csr and chunked (their L1 hit rates among its counters). The matrix
is fig14_gs's (experiments/_gs.py, seed 0); prints nothing useful by itself."""
import argparse


from experiments import _gs
from spmvlab import methods
from spmvlab._cuda import cuda
from spmvlab.generalsparse import shortlist
from spmvlab.generalsparse.method import GeneralSparse

p = argparse.ArgumentParser()
p.add_argument("rows", type=int, nargs="?", default=4096)
p.add_argument("cols", type=int, nargs="?", default=36864)
p.add_argument("sparsity", type=float, nargs="?", default=0.9)
p.add_argument("pruning", nargs="?", default="random")
p.add_argument("--n", type=int, default=8)
p.add_argument("--which", default="csr,chunked,cyclic")
# the generated kernels: (anchor, code options of codegen.generate)
GENERATED = dict(chunked=("row/warp cv", dict(batch=False)), cyclic=("row/warp cv cyc", dict(batch=False)),
                 cyclic_batch=("row/warp cv cyc", dict(batch=True)),
                 cyclic_pf=("row/warp cv cyc", dict(prefetch=True, batch=False)))
a = p.parse_args()
which = a.which.split(",")
if not set(which) <= {"csr", *GENERATED}:
    p.error(f"--which: expected a comma-separated subset of {', '.join(['csr', *GENERATED])}; received {a.which!r}")
A = _gs.case_matrix(f"{a.rows}x{a.cols}:{a.pruning}:{a.sparsity}")[3]
prob = methods.Problem.make(A, "float16", k=a.n, seed=1, lossy=True)


def build(kind):
    if kind == "csr":
        return methods.build(methods.resolve("csr_vector"), prob)
    name, opts = GENERATED[kind]
    return GeneralSparse(prob, shortlist._compact_variant(a.n, "float16", name), optimize=True, **opts)


ms = [build(w) for w in which]
for m in ms:
    for _ in range(3):
        m.run()
    cuda.synchronize()
