"""The papers' values that paper_repro.md puts beside ours, and how ours are read from the
results (data only, no NAME: not an experiment).

``SECTIONS[section]`` is the list of table rows of ``{{table:<section>}}`` in
paper_repro_template.md; ``VALUES[name]`` the numbers ``{{value:<name>}}`` quotes in its prose.
The row and rule keys are described in :mod:`spmvlab.repro`. ``paper`` holds a value printed
in the paper (or simple arithmetic on such values, noted in ``paper_note``); every "ours" comes
from results/<device>/*.json. Regenerate with ``python -m spmvlab.figures --repro``.
"""

# the MACKO paper's Table 1 (RTX 4090, end to end, whole model): sparsity -> (dense GB,
# MACKO GB, dense tok/s, MACKO tok/s)
MACKO_TABLE1 = {0.2: (13.59, 13.77, 66.55, 66.36), 0.3: (13.59, 12.08, 66.49, 73.88),
                0.4: (13.59, 10.53, 66.48, 85.46), 0.5: (13.59, 8.87, 66.53, 98.60),
                0.6: (13.59, 7.14, 66.51, 119.27), 0.7: (13.59, 5.61, 66.50, 150.78),
                0.8: (13.59, 4.06, 66.54, 193.79), 0.9: (13.59, 2.67, 66.48, 255.01)}

# ---- rules used more than once --------------------------------------------------------------

COPY = dict(results="baseline_csr", table="copy_bandwidth", field="tb_s", fmt=".2f", unit=" TB/s")
# experiments/e2e_decode.py: graph-captured tokens/s and speedups over the dense model of the
# same run (its table view: one row per model, sparsity as text, method, batch, new tokens),
# at 128 generated tokens (EC-SpMV's Table 3 length; every format and sparsity has it, and
# re-measured parts may hold only it, so a median over lengths would mix runs of other code)
E2E = dict(results="e2e_decode", view="e2e_decode:table", field="speedup", fmt=".2f", unit="×")


def _e2e(agg: str = "value", **where) -> dict:
    """An :data:`E2E` rule over the Llama-2-7B rows at 128 tokens (``where`` adds to or
    replaces those keys)."""
    return dict(E2E, agg=agg, where={"model": "llama2-7b", "new_tokens": 128, **where})


_E2E_WHY = ("ours: PyTorch, a Llama-2-7B-shaped model with seeded random weights pruned per row "
            "by magnitude, dense = cuBLAS in the same captured decode step, H200")
SPEEDUP = dict(field="speedup_vs_cublas", fmt=".2f", unit="×")
AT_30_TO_90 = dict(SPEEDUP, where={"method": "macko", "sparsity": ("in", [0.3, 0.5, 0.7, 0.9])},
                   agg="list", item="{v} at {pct} %")
THREE_SHAPES = ["fig7_macko", "fig7_macko_12288x12288", "fig1_macko"]
F7, F7_12288, F1, F4 = "fig7_macko", "fig7_macko_12288x12288", "fig1_macko", "fig4_macko"
F7_4096, F7_11008 = "fig7_macko_4096x4096", "fig7_macko_11008x4096"   # Figs. 6 and 8 (H200 on)
PUBLIC_30_TO_90 = dict(field="speedup_vs_own_cublas", fmt=".2f", unit="×", agg="list",
                       item="{v} at {pct} %", where={"method": "public_macko",
                                                     "sparsity": ("in", [0.3, 0.5, 0.7, 0.9])})
T1 = dict(results="table1_macko", view="table1_macko:table")
T1_LAYERS = dict(results="table1_macko", view="table1_macko:layers", where={"sparsity": 0.5},
                 agg="list")
APPC_EQ10 = dict(results="appc_macko", view="appc_macko:thresholds")
CUBLAS_TIME = dict(where={"method": "cublas"}, field="median_us", agg="median", fmt=".1f",
                   unit=" µs")
_HBM = "the H100's HBM3 is about 3× the RTX 4090's memory bandwidth"
APPC = dict(label="App. C", script="experiments/appc_macko.py", script_note="CPU")
FIG2 = dict(label="Fig. 2", script="experiments/fig2_macko.py", script_note="CPU")
FIG2_CROSS = dict(results="fig2_macko", view="fig2_macko:crossings", where={"value_bits": 16})
FIG2_Q8 = dict(results="fig2_macko", view="fig2_macko:quantized", where={"quant_bits": 8})
_SEC42 = "stated in its text, Sec. 4.2"
CSRV_12288 = dict(results="baseline_csr", where={"shape": [12288, 12288], "dtype": "float32",
                                                 "sparsity": 0.5, "method": "csr_vector"})


def _at(s, method="macko"):
    return {"method": method, "sparsity": s}


# Table 1 rows: field of table1_macko.table() -> (format, unit, the paper's value from its row
# (dense GB, MACKO GB, dense tok/s, MACKO tok/s), note on the paper's value)
_T1_FIELDS = {
    "dense_gb": (".2f", " GB", lambda p: p[0], "whole model"),
    "macko_gb": (".2f", " GB", lambda p: p[1], None),
    "memory_reduction": (".2f", "×", lambda p: p[0] / p[1], "from its sizes"),
    "dense_tok_s": (".0f", " tok/s", lambda p: p[2], "end to end"),
    "macko_tok_s": (".0f", " tok/s", lambda p: p[3], "end to end"),
    "speedup": (".2f", "×", lambda p: p[3] / p[2], "from its tokens/s"),
}


def _table1(what: str, sparsity: float, field: str, why: str) -> dict:
    fmt, unit, paper, note = _T1_FIELDS[field]
    derived = field in ("memory_reduction", "speedup")
    return dict(label="Table 1", what=what, script="experiments/table1_macko.py",
                paper=paper(MACKO_TABLE1[sparsity]), paper_fmt=".2f" if derived else "g",
                paper_note=note, why=why,
                ours=dict(T1, where={"sparsity": sparsity}, field=field, fmt=fmt, unit=unit))


VALUES = {
    "copy_bandwidth": COPY,
    "anchor_4096x11008": dict(SPEEDUP, results=F7, agg="list", sep=" / ",
                              where={"method": "macko", "sparsity": ("in", [0.5, 0.7, 0.9])}),
    "anchor_12288x12288": dict(SPEEDUP, results=F7_12288, agg="list", sep=" / ",
                               where={"method": "macko", "sparsity": ("in", [0.5, 0.7, 0.9])}),
    "anchor_bandwidth": dict(results=[F7, F7_12288], where=_at(0.5), field="tb_s", agg="range",
                             fmt=".1f", unit=" TB/s"),
    # the public kernel measured in our own fig7 run (spmvlab.anchors; H200 onwards)
    "public_4096x11008": dict(results=F7, agg="list", sep=" / ", field="speedup_vs_own_cublas",
                              fmt=".2f", unit="×", devices=["h200"],
                              where={"method": "public_macko", "sparsity": ("in", [0.5, 0.7, 0.9])}),
    "public_cublas_4096x11008": dict(results=F7, where={"method": "public_cublas"}, field="mean_us",
                                     agg="range", fmt=".0f", unit=" µs", devices=["h200"]),
    "our_cublas_4096x11008": dict(CUBLAS_TIME, results=F7, fmt=".0f", devices=["h200"]),
}

FOUNDATION = [
    dict(label="—", what="device-to-device copy bandwidth (read + write)",
         script="experiments/baseline_csr.py", paper=None, ours=COPY,
         why="no paper: the ceiling every bandwidth below is compared with"),
    dict(label="—", what="numba CSR-vector (4-entry vector loads) speed relative to cuSPARSE, "
                         "fp32, 50–90 % sparsity, 4 shapes",
         script="experiments/baseline_csr.py", paper=None,
         ours=dict(results="baseline_csr", field="speedup_vs_cusparse", agg="range", fmt=".2f",
                   unit="×", where={"method": "csr_vector", "dtype": "float32",
                                    "sparsity": (">=", 0.5)}),
         why="no paper (our baseline). The hand-written version of this file said 0.93–1.37×; "
             "the committed results give the range shown (lowest: 4096×11008 at 50 %, highest: "
             "11008×4096 at 90 %)"),
    dict(label="—", what="its slowest case: 4096×11008 fp32 at 50 %, CSR-vector vs cuSPARSE",
         script="experiments/baseline_csr.py", paper=None,
         ours=dict(results="baseline_csr", field="median_us", agg="list", item="{method} {v}",
                   fmt=".1f", unit=" µs",
                   where={"shape": [4096, 11008], "dtype": "float32", "sparsity": 0.5,
                          "method": ("in", ["csr_vector", "cusparse"])}),
         why="—"),
    dict(label="—", what="CSR-vector, 12288×12288 fp32 at 50 %: time",
         script="experiments/baseline_csr.py", paper=None,
         ours=dict(CSRV_12288, field="median_us", fmt=".0f", unit=" µs"), why="—"),
    dict(label="—", what="… its bandwidth", script="experiments/baseline_csr.py", paper=None,
         ours=dict(CSRV_12288, field="tb_s", fmt=".2f", unit=" TB/s"), why="—"),
    dict(label="—", what="… as a share of copy bandwidth", script="experiments/baseline_csr.py",
         paper=None, why="—",
         ours=dict(CSRV_12288, field="tb_s", fmt=".0f", unit=" %", scale=100, divide_by=COPY)),
]

_WARPS = "4096 rows = 31 warps per SM: latency-bound (see below)"
MACKO = [
    # Abstract -----------------------------------------------------------------------------
    dict(label="Abstract", what="MACKO speedup over cuSPARSE at 50 % (4096×11008, 12288×12288, "
                                "36864×12288)",
         script=["experiments/fig7_macko.py", "experiments/fig1_macko.py"],
         paper="2.8–13.0× (its shapes and 3 GPUs)",
         ours=dict(SPEEDUP, field="speedup_vs_cusparse", results=THREE_SHAPES, where=_at(0.5),
                   agg="range"),
         why="our cuSPARSE (torch CSR: fp16 values, int32 indices) moves more bytes than MACKO "
             "by the factor in the next row, but streams at a higher share of copy bandwidth "
             "(the row after) than our MACKO does (Sec. 6 rows), so it loses by less than "
             "that factor. The paper's lowest ratio lies above the same factor, so its "
             "cuSPARSE (if it also stored CSR with int32 indices) streamed at a lower share of "
             "bandwidth than its MACKO"),
    dict(label="Abstract", what="… bytes cuSPARSE moves / bytes MACKO moves at 50 % (4096×11008)",
         script="experiments/fig7_macko.py", paper=None,
         ours=dict(results=F7, where=_at(0.5, "cusparse"), field="bytes", fmt=".2f", unit="×",
                   divide_by=dict(results=F7, where=_at(0.5), field="bytes")),
         why="matrix, x and y; eq. 4 over eq. 10 gives about the same"),
    dict(label="Abstract", what="… cuSPARSE bandwidth at 50 %, share of copy bandwidth (same 3 "
                                "shapes)",
         script=["experiments/fig7_macko.py", "experiments/fig1_macko.py"], paper=None,
         ours=dict(results=THREE_SHAPES, where=_at(0.5, "cusparse"), field="tb_s", agg="range",
                   scale=100, divide_by=COPY, fmt=".0f", unit=" %"),
         why="—"),
    # Fig. 1 -------------------------------------------------------------------------------
    dict(label="Fig. 1", what="sparsity from which MACKO beats cuBLAS, 36864×12288 fp16",
         script="experiments/fig1_macko.py", paper=25, paper_note="about; RTX 4090",
         ours=dict(results=F1, view="fig1_macko:crossing", field="sparsity", scale=100, fmt=".0f",
                   unit=" %"),
         why="the paper's value is read off its figure; ours is interpolated linearly between "
             "the measured sparsities (next row)"),
    dict(label="Fig. 1", what="MACKO speedup over cuBLAS", script="experiments/fig1_macko.py",
         paper=None, ours=dict(AT_30_TO_90, results=F1), why="—"),
    dict(label="Fig. 1", what="sparsity at which cuSPARSE takes as long as MACKO at 50 %",
         script="experiments/fig1_macko.py", paper=None,
         ours=dict(results=F1, view="fig1_macko:match", where={"sparsity": 0.5},
                   field="matching_sparsity", scale=100, fmt=".0f", unit=" %"),
         why="interpolated linearly between the measured sparsities"),
    dict(label="Fig. 1", what="… so other libraries need this many times fewer nonzeros for "
                              "MACKO's time",
         script="experiments/fig1_macko.py", paper=2.6,
         ours=dict(results=F1, view="fig1_macko:match", where={"sparsity": 0.5},
                   field="fewer_nonzeros", fmt=".1f", unit="×"),
         why="we time cuSPARSE CSR (torch, fp16) only, the one other library here; the H100's "
             "cuSPARSE streams close to copy bandwidth at 50–70 %"),
    dict(label="Fig. 1", what="cuBLAS bandwidth (median over sparsities)",
         script="experiments/fig1_macko.py", paper=None,
         ours=dict(results=F1, where={"method": "cublas"}, field="tb_s", agg="median",
                   fmt=".2f", unit=" TB/s"),
         why="no paper value; explains the ratios: the dense baseline is strong on the H100"),
    dict(label="Fig. 1", what="… as a share of copy bandwidth", script="experiments/fig1_macko.py",
         paper=None,
         ours=dict(results=F1, where={"method": "cublas"}, field="tb_s", agg="median", scale=100,
                   divide_by=COPY, fmt=".0f", unit=" %"),
         why="the copy reads and writes each byte (its rate counts both); a GEMV only reads the "
             "matrix, which on the H200 streams slightly faster than the copy (above 100 %)"),
    dict(label="Fig. 1", what="MACKO bandwidth at 50 %", script="experiments/fig1_macko.py",
         paper=None, ours=dict(results=F1, where=_at(0.5), field="tb_s", fmt=".2f", unit=" TB/s"),
         why="—"),
    # Fig. 2 -------------------------------------------------------------------------------
    dict(FIG2, what="density at which MACKO (4-bit deltas, fp16) is as large as dense: eq. 10",
         paper=0.78, paper_note=_SEC42,
         ours=dict(FIG2_CROSS, field="equals_dense_at", fmt=".2f"),
         why="ours solves eq. 10 (expected case, uniform masks; spmvlab.analysis.density) for "
             "the results' delta width: near d = 0.8 almost no zeros are inserted, so it "
             "crosses dense where the best case does. The paper's 0.78 (sparsity 22 %) is a "
             "number in its text, not read off its plot, and lies at eq. 9's worst case "
             "(next row), rounded down"),
    dict(FIG2, what="… eq. 9 (worst case)", paper=0.78, paper_note=_SEC42,
         ours=dict(FIG2_CROSS, field="worst_equals_dense_at", fmt=".3f"),
         why="the worst case inserts a zero for every 16 zeros (4-bit deltas)"),
    dict(FIG2, what="sparsity at which MACKO (eq. 10, fp16) is as small as dense 8-bit values "
                    "(the plot's Q8 line)",
         paper=60, paper_note="stated in its text, Sec. 3.2",
         ours=dict(FIG2_Q8, field="macko_sparsity", scale=100, fmt=".0f", unit=" %"),
         why="formulas only (eq. 10 and eq. 4 against 8 / 16)"),
    dict(FIG2, what="… CSR32 (eq. 4)", paper=83, paper_note="stated in its text, Sec. 3.2",
         ours=dict(FIG2_Q8, field="csr32_sparsity", scale=100, fmt=".0f", unit=" %"),
         why="as above"),
    dict(FIG2, what="eq. 10 at d = 0.5 (fp16, 4-bit deltas)",
         paper=None,
         ours=dict(results="fig2_macko", view="fig2_macko:with_formula", field="expected",
                   fmt=".3f", where={"source": "uniform", "value_bits": 16, "density": 0.5}),
         why="—"),
    dict(FIG2, what="measured effective density at d = 0.5: uniform 2048² mask",
         paper=None,
         ours=dict(results="fig2_macko", field="macko", fmt=".3f",
                   where={"source": "uniform", "value_bits": 16, "density": 0.5}),
         why="on the expected curve; the excess over eq. 10 is row pointers and end padding, "
             "which the formula leaves out"),
    dict(FIG2, what="… the 4 real mpnet weight matrices, per-row magnitude pruning",
         paper=None,
         ours=dict(results="fig2_macko", field="macko", agg="range", fmt=".3f",
                   where={"source": ("!=", "uniform"), "value_bits": 16, "density": 0.5}),
         why="as above: real weights pruned per row behave like uniform masks"),
    dict(label="Fig. 3", what="worked example (2-bit deltas)",
         script="tests/test_macko_reference.py", script_note="pinned test",
         paper="values 1 2 0 3 4, steps 2 3 4 3 1", ours="identical (packed bytes B9 00)",
         why="—"),
    # Fig. 4 -------------------------------------------------------------------------------
    dict(label="Fig. 4", what="MACKO speedup over cuBLAS at 50 %, 31 LLM shapes (app. D)",
         script="experiments/fig4_macko.py",
         paper="matches cuBLAS at 20–30 %, beats every baseline at 30–90 % on all 3 GPUs",
         ours=dict(SPEEDUP, results=F4, where=_at(0.5), agg="range"),
         why="the H100 run measured 50 % only; the H200 run has every sparsity of the paper "
             "(0-95 %, measured in parts and merged: each part's commit in the results' parts)"),
    *[dict(label="Fig. 4", what=f"… at {round(100 * s)} %", script="experiments/fig4_macko.py",
           paper=None, ours=dict(SPEEDUP, results=F4, where=_at(s), agg="range", devices=["h200"]),
           why="—") for s in (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95)],
    *[dict(label="Fig. 4", what=f"… shapes on which MACKO is faster than cuBLAS at {round(100 * s)} %",
           script="experiments/fig4_macko.py", paper="break-even at 20–30 %" if s == 0.3 else None,
           ours=dict(results=F4, where=_at(s), agg="fraction", devices=["h200"],
                     having={"speedup_vs_cublas": (">", 1.0)}),
           why=("on the H200 MACKO breaks even at 35-55 % (interpolated between the measured "
                "sparsities, median 43 %; none of the 31 shapes faster at 30 %): "
                "cuBLAS streams at 3.2-3.6 TB/s there while MACKO's gathers hold it to 2.2-2.8 TB/s "
                "(issue 8's goal, break-even at 35 % or below, is missed)") if s == 0.3 else "—")
      for s in (0.3, 0.4)],
    dict(label="Fig. 4", what="… median over the shapes", script="experiments/fig4_macko.py",
         paper=None, ours=dict(SPEEDUP, results=F4, where=_at(0.5), agg="median"), why="—"),
    dict(label="Fig. 4", what="… shapes on which MACKO is faster than cuBLAS",
         script="experiments/fig4_macko.py", paper=None,
         ours=dict(results=F4, where=_at(0.5), agg="fraction",
                   having={"speedup_vs_cublas": (">", 1.0)}),
         why="—"),
    dict(label="Fig. 4", what="… shapes on which it is slower", script="experiments/fig4_macko.py",
         paper=None,
         ours=dict(SPEEDUP, results=F4, agg="list", item="{shape_x} ({v})",
                   where={"method": "macko", "sparsity": 0.5, "speedup_vs_cublas": ("<", 1.0)}),
         why="H100: the two smallest shapes (few rows leave SMs short of warps). H200 (all "
             "within 7 % of cuBLAS): two 4096-column shapes, whose rows of ~2048 stored entries "
             "make per-row costs weigh more (Fig. 8 rows), and both 7168-row shapes (not "
             "profiled)"),
    # Figs. 5 / 9 --------------------------------------------------------------------------
    dict(label="Figs. 5 / 9", what="cuBLAS GEMV time, 12288×12288 fp16 (median over sparsities)",
         script="experiments/fig7_macko.py --shape 12288 12288", paper=336,
         ours=dict(CUBLAS_TIME, results=F7_12288), why=_HBM),
    dict(label="Figs. 5 / 9", what="MACKO speedup over cuBLAS at 50 %",
         script="experiments/fig7_macko.py --shape 12288 12288", paper=1.30, paper_fmt=".2f",
         ours=dict(SPEEDUP, results=F7_12288, where=_at(0.5)), why="—"),
    dict(label="Figs. 5 / 9", what="… at 70 %", script="experiments/fig7_macko.py --shape 12288 12288",
         paper=1.96, ours=dict(SPEEDUP, results=F7_12288, where=_at(0.7)), why="—"),
    dict(label="Figs. 5 / 9", what="… at 95 %", script="experiments/fig7_macko.py --shape 12288 12288",
         paper=5.62, ours=dict(SPEEDUP, results=F7_12288, where=_at(0.95)),
         why="at 95 % the kernel is short and its per-row overheads (scan, tail chunks) "
             "dominate on a memory 3× faster"),
    dict(label="Figs. 5 / 9", what="… the public MACKO kernel over its own cuBLAS, same run",
         script="experiments/fig7_macko.py --shape 12288 12288", paper=None,
         ours=dict(PUBLIC_30_TO_90, results=F7_12288, devices=["h200"]),
         why="its own matrix, write flush, mean"),
    dict(label="Figs. 5 / 9", what="… at 30 and 90 %",
         script="experiments/fig7_macko.py --shape 12288 12288", paper=None,
         ours=dict(SPEEDUP, results=F7_12288, agg="list", item="{v} at {pct} %",
                   where={"method": "macko", "sparsity": ("in", [0.3, 0.9])}),
         why="—"),
    # Fig. 6 -------------------------------------------------------------------------------
    dict(label="Fig. 6", what="cuBLAS GEMV time, 4096×4096 fp16",
         script="experiments/fig4_macko.py", script_note="shape included at 50 %", paper=59,
         ours=dict(CUBLAS_TIME, results=F4, agg="value", where={"method": "cublas", "sparsity": 0.5,
                                                                "shape": [4096, 4096]}),
         why="33 MB fits the H100's 50 MB L2 (evicted before every call here by reading a 2×L2 "
             "buffer)"),
    dict(label="Fig. 6", what="MACKO time and speedup over cuBLAS at 50 %",
         script="experiments/fig4_macko.py", script_note="shape included at 50 %", paper=None,
         ours=dict(SPEEDUP, results=F4, agg="list", item="{v} ({median_us:.1f} µs)",
                   where={"method": "macko", "shape": [4096, 4096], "sparsity": 0.5}),
         why="only 4096 warps"),
    dict(label="Fig. 6", what="MACKO speedup over cuBLAS, the figure's own run",
         script="experiments/fig7_macko.py --shape 4096 4096", paper=None,
         ours=dict(AT_30_TO_90, results=F7_4096), why="—"),
    dict(label="Fig. 6", what="… the public MACKO kernel over its own cuBLAS, same run",
         script="experiments/fig7_macko.py --shape 4096 4096", paper=None,
         ours=dict(PUBLIC_30_TO_90, results=F7_4096), why="its own matrix, write flush, mean"),
    # Fig. 7 -------------------------------------------------------------------------------
    dict(label="Fig. 7", what="cuBLAS GEMV time, 4096×11008 fp16 (**main job**)",
         script="experiments/fig7_macko.py", paper=122,
         ours=dict(CUBLAS_TIME, results=F7), why=_HBM),
    dict(label="Fig. 7", what="MACKO speedup over cuBLAS", script="experiments/fig7_macko.py",
         paper=None, ours=dict(AT_30_TO_90, results=F7), why=_WARPS),
    dict(label="Fig. 7", what="MACKO speedup over cuSPARSE at 50 %",
         script="experiments/fig7_macko.py", paper=None,
         ours=dict(SPEEDUP, field="speedup_vs_cusparse", results=F7, where=_at(0.5)), why="—"),
    dict(label="Figs. 7 / 9", what="sparsity from which numba CSR-vector is as fast as MACKO",
         script=["experiments/fig7_macko.py", "experiments/fig7_macko.py --shape 12288 12288"],
         paper=None,
         ours=dict(results=[F7, F7_12288], view="fig7_macko:csr_crossover", field="sparsity",
                   agg="list", item="{shape_x} {v} %", scale=100, fmt=".1f"),
         why="MACKO stores one entry per 16 columns at least (4-bit steps) and decodes every "
             "entry, so near 95 % it moves about CSR's bytes with more work per byte; "
             "interpolated between the measured sparsities (`spmvlab stats` names the "
             "predicted faster format from these runs)"),
    # Fig. 8 -------------------------------------------------------------------------------
    dict(label="Fig. 8", what="cuBLAS GEMV time, 11008×4096 fp16",
         script="experiments/fig4_macko.py", script_note="shape included at 50 %", paper=120,
         ours=dict(CUBLAS_TIME, results=F4, agg="value", where={"method": "cublas", "sparsity": 0.5,
                                                                "shape": [11008, 4096]}),
         why=_HBM),
    dict(label="Fig. 8", what="MACKO speedup over cuBLAS at 50 %",
         script="experiments/fig4_macko.py", script_note="shape included at 50 %", paper=None,
         ours=dict(SPEEDUP, results=F4, where={"method": "macko", "shape": [11008, 4096],
                                                "sparsity": 0.5}),
         why="rows of ~2048 stored entries = 8 chunks: per-row costs (scan per chunk, first/last "
             "partial chunks) weigh more"),
    dict(label="Fig. 8", what="MACKO speedup over cuBLAS, the figure's own run",
         script="experiments/fig7_macko.py --shape 11008 4096", paper=None,
         ours=dict(AT_30_TO_90, results=F7_11008), why="—"),
    dict(label="Fig. 8", what="… the public MACKO kernel over its own cuBLAS, same run",
         script="experiments/fig7_macko.py --shape 11008 4096", paper=None,
         ours=dict(PUBLIC_30_TO_90, results=F7_11008), why="its own matrix, write flush, mean"),
    # Table 1 ------------------------------------------------------------------------------
    _table1("Llama2-7B dense size", 0.5, "dense_gb",
            "ours counts only the 7 linear layers × 32 blocks (no embeddings, attention, norms)"),
    _table1("MACKO size at 50 %", 0.5, "macko_gb", "as above"),
    _table1("… memory reduction at 50 %", 0.5, "memory_reduction",
            "the paper's sizes include the dense parts of the model"),
    _table1("decode tokens/s at 50 %: dense", 0.5, "dense_tok_s",
            "ours sums isolated cold-L2 GEMV/SpMV times of the linear layers (no attention, no "
            "Python framework) on an H100"),
    _table1("… MACKO", 0.5, "macko_tok_s", "as above"),
    _table1("decode speedup at 50 %", 0.5, "speedup",
            "ours is the sum of the layers' times: the 11008×4096 layers (gate, up) gain least "
            "and take the largest share of the time (last rows of this table)"),
    _table1("MACKO size at 70 %", 0.7, "macko_gb", "linear layers only"),
    _table1("decode speedup at 70 %", 0.7, "speedup", "linear layers only, isolated cold-L2 times"),
    _table1("MACKO size at 90 %", 0.9, "macko_gb", "linear layers only"),
    _table1("decode tokens/s at 90 %: MACKO", 0.9, "macko_tok_s",
            "linear layers only, isolated cold-L2 times, H100"),
    _table1("decode speedup at 90 %", 0.9, "speedup", "linear layers only, isolated cold-L2 times"),
    *[dict(label="Table 1", what=f"decode speedup end to end at {round(100 * sp)} %, batch 1: MACKO "
                                 "layers in PyTorch",
           script="experiments/e2e_decode.py", paper=MACKO_TABLE1[sp][3] / MACKO_TABLE1[sp][2],
           paper_fmt=".2f", paper_note="RTX 4090, its own runtime",
           ours=_e2e(method="macko", sparsity=str(sp), batch=1),
           why=_E2E_WHY + "; the paper's weights are real and its GPU has a third of the bandwidth")
      for sp in (0.5, 0.7, 0.9)],
    dict(label="Table 1", what="… the same at 70 % on two other models' shapes",
         script="experiments/e2e_decode.py", paper=None,
         ours=dict(_e2e("list", model=("in", ["llama3.1-8b", "llama2-13b"]), method="macko",
                        sparsity="0.7", batch=1), item="{model} {v}"),
         why="the paper measures Llama-2-7B only; Llama-3.1-8B's larger vocabulary (a 128256-row "
             "LM head) and grouped KV heads, Llama-2-13B's 40 blocks of 5120"),
    dict(label="Table 1", what="MACKO speedup over cuBLAS per layer shape at 50 % (× layers "
                               "per block)",
         script="experiments/table1_macko.py", paper=None,
         ours=dict(T1_LAYERS, field="speedup", fmt=".2f", unit="×",
                   item="{shape_x} (×{layers_per_block}) {v}"),
         why="11008×4096: rows of 4096 columns hold ~2048 stored entries at 50 % = 8 chunks, "
             "so per-row costs weigh more (Fig. 8 row); 4096×4096: only 4096 rows (Fig. 6 row)"),
    dict(label="Table 1", what="… share of MACKO's linear-layer time per layer shape at 50 %",
         script="experiments/table1_macko.py", paper=None,
         ours=dict(T1_LAYERS, field="macko_share", scale=100, fmt=".0f", unit=" %",
                   item="{shape_x} {v}"),
         why="—"),
    # App. C -------------------------------------------------------------------------------
    dict(APPC, what="sparsity from which 1-bit deltas are smaller than dense (eq. 10)",
         paper=7, paper_note="read off its plot",
         ours=dict(APPC_EQ10, where={"delta_bits": 1}, field="below_dense_from", scale=100,
                   fmt=".1f", unit=" %"),
         why="the paper's value is read off a plot"),
    dict(APPC, what="… for 2-, 4- and 8-bit deltas",
         paper=None,
         ours=dict(APPC_EQ10, where={"delta_bits": ("in", [2, 4, 8])}, field="below_dense_from",
                   agg="list", item="{v} ({delta_bits}-bit)", scale=100, fmt=".1f", unit=" %"),
         why="—"),
    dict(APPC, what="sparsities at which each delta width is smallest (eq. 10)",
         paper="2-bit best for 15–45 %; 8-bit for > 95 %",
         ours=dict(APPC_EQ10, field="smallest", agg="list", item="{delta_bits}-bit {v}"),
         why="the paper's ranges are read off a plot"),
    dict(APPC, what="sparsity from which 8-bit deltas are smallest (eq. 10)",
         paper=95, paper_note="read off its plot",
         ours=dict(APPC_EQ10, where={"delta_bits": 8}, field="smallest_from", scale=100,
                   fmt=".0f", unit=" %"),
         why="as above"),
    dict(APPC, what="measured − eq. 10 where it is largest, per delta width (2048² masks)",
         paper=None,
         ours=dict(results="appc_macko", view="appc_macko:worst_deviation", field="diff",
                   agg="list", item="{delta_bits}-bit {v} at {pct} %", fmt="+.4f"),
         why="eq. 10 leaves out the row pointers (next row), so most encodings lie that much "
             "above it. It also assumes endless rows, where every run of zeros ends at a "
             "nonzero and may need inserted zeros; in a finite row the run after the last "
             "nonzero needs none, which saves about 1 / (nonzeros per row + 1) of the inserted "
             "zeros. That matters where inserted zeros are many and rows hold few nonzeros: "
             "1- and 2-bit deltas at 95–98 % (2048 × 0.02 ≈ 41 nonzeros per row at 98 %), "
             "where the encodings come out smaller than eq. 10"),
    dict(APPC, what="… the row pointers' share of the dense size (rows + 1 int32)",
         paper=None,
         ours=dict(results="appc_macko", view="appc_macko:row_pointer_share", field="effd",
                   fmt=".4f"),
         why="a term eq. 10 leaves out; the end padding (< 8 entries) is negligible"),
    # Sec. 6 -------------------------------------------------------------------------------
    dict(APPC, label="Sec. 6", what="theoretical speedup at 50 %: 1 / effective density (eq. "
                                     "10, 4-bit deltas, fp16)",
         paper=1.6,
         ours=dict(results="appc_macko", where={"sparsity": 0.5, "delta_bits": 4},
                   field="expected", invert=True, fmt=".2f", unit="×"),
         why="—"),
    dict(label="Sec. 6", what="MACKO speedup over cuBLAS reached at 50 %, every shape we "
                              "measured (Fig. 4's 31, Figs. 1 and 7)",
         script=["experiments/fig4_macko.py", "experiments/fig7_macko.py",
                 "experiments/fig1_macko.py"],
         paper="1.2–1.5× (its kernel; 1.6× in theory)",
         ours=dict(SPEEDUP, results=[F4] + THREE_SHAPES, where=_at(0.5), agg="range"),
         why="below 1 only on shapes with few rows (Fig. 4 rows); elsewhere our kernel "
             "streams at a lower share of copy bandwidth than cuBLAS (the rows after next)"),
    dict(label="Sec. 6", what="… on the 3 shapes swept over sparsity (4096×11008, "
                              "12288×12288, 36864×12288)",
         script=["experiments/fig7_macko.py", "experiments/fig1_macko.py"], paper=1.6,
         paper_note="the theoretical value",
         ours=dict(SPEEDUP, results=THREE_SHAPES, where=_at(0.5), agg="range"),
         why="our kernel streams at a lower share of copy bandwidth than cuBLAS (next rows)"),
    dict(label="Sec. 6", what="MACKO bandwidth at 50 %, share of copy bandwidth (same 3 shapes)",
         script=["experiments/fig7_macko.py", "experiments/fig1_macko.py"], paper=None,
         ours=dict(results=THREE_SHAPES, where=_at(0.5), field="tb_s", agg="range", scale=100,
                   divide_by=COPY, fmt=".0f", unit=" %"),
         why="—"),
    dict(label="Sec. 6", what="cuBLAS bandwidth, share of copy bandwidth (same 3 shapes, all "
                              "sparsities)",
         script=["experiments/fig7_macko.py", "experiments/fig1_macko.py"], paper=None,
         ours=dict(results=THREE_SHAPES, where={"method": "cublas"}, field="tb_s", agg="range",
                   scale=100, divide_by=COPY, fmt=".0f", unit=" %"),
         why="—"),
]

SECTIONS = {"foundation": FOUNDATION, "macko": MACKO}


# ==============================================================================================
# GeneralSparse (issue 11) -- the paper's values (A100) and the rules that read ours; the rows
# of experiments still awaiting their first H200 run are folded (``_awaiting_gpu``, below).
# ==============================================================================================

_GS_BEST = {"method": "generalsparse_best"}
_A100 = "A100"


def _gs_at(**kw):
    return dict(_GS_BEST, **kw)


GENERALSPARSE = [
    *[dict(label="Fig. 14", what=f"mean speedup of the tuned kernel over cuSPARSE SpMM, N = {n} "
                                 "(6 OPT shapes, magnitude/random, 70/90 %, fp16)",
           script="experiments/fig14_gs.py", paper=p, paper_note=_A100,
           ours=dict(results="fig14_gs", where=_gs_at(n=n), field="speedup_vs_cusparse", agg="mean",
                     fmt=".2f", unit="×"),
           why="arithmetic mean over all 24 matrices (6 shapes x 2 prunings x 70/90 %), measured "
               "at several commits (each part's commit in the file): 7168×7168 at 6ea8d2a and "
               "28672×7168 and 9216×9216 at 70 % and 7168×28672 at 70 % random at 990e90d, "
               "28672×7168 and 9216×9216 at 90 % at b6b8eeb, 7168×28672 at 90 % and at 70 % "
               "magnitude at d33d7b0 (these with the generalsparse default timed beside the "
               "tuned pick); "
               "9216×36864 and "
               "36864×9216 at 70 % at f679411 (gathers of B batched, the default since then); "
               "9216×36864 at 90 % at a531de0 (the cyclic thread division, unbatched); "
               "36864×9216 at 90 % at 06dd8fa (before it). "
               "Batching took -0.4 to 30 % off the re-measured cells (7168×7168 magnitude N = 64: 303 -> "
               "220 us). Below the paper: from N = 8 "
               "to 64 our time grows 3.1-8.6x (a gather of B and N products per nonzero on CUDA "
               "cores), torch's cuSPARSE's 1.1-1.3x. Our picks are faster than CSR SpMM in all 72 "
               "cases (N = 8: geometric mean 1.17x, 1.03-1.59x). cuSPARSE fp16 "
               "is torch's CSR path (GPU_NOTES: 10-100x slower than cuBLAS at these shapes), whose "
               "results miss our fp32-accumulation error bound in 42 of the 72 cases (n_bad > 0; "
               "max error ≈ 5e-4 of sum |a||b|: fp16 rounding of partial sums); their times are "
               "kept")
      for n, p in ((8, 17.15), (32, 19.14), (64, 20.82))],
    *[dict(label="Fig. 14", what=f"speedup of the tuned kernel over cuBLAS GEMM fp16, N = {n}, "
                                 f"{pct} % (range over shapes and prunings)",
           script="experiments/fig14_gs.py", paper=None,
           ours=dict(results="fig14_gs", where=_gs_at(n=n, sparsity=s), field="speedup_vs_cublas",
                     agg="range", fmt=".2f", unit="×"),
           why="issue goal: > 1 at 70 % for N = 8 and 32 and at 90 % for N = 64. The tuned "
               "picks store 4.0-5.3 B per nonzero (compact: fp16 value, 16-bit column, row arrays) "
               "against cuBLAS's 2 B per weight, and from N = 8 on each nonzero costs a gather "
               "of a row of B and N products on CUDA cores, while cuBLAS's time stays flat in N. "
               "A tensor-core probe at 0.82-0.88 B per weight (16×16 bitmap tiles, mma.sync; "
               "results/h200/tc_bitmap_ab.json, second round at 041ff09; docs/probes.md, code "
               "at 21b159a) "
               "took 69 us against cuBLAS's 30 on 7168×7168 at 70 % and N = 8 (85 at N = 32, 129 "
               "at N = 64; 67 at 90 %, every tile still occupied): latency-bound, not issue- or "
               "memory-bound: ncu of its fragment layout shows 0.47 instructions issued per "
               "scheduler-cycle, 58 % of stall cycles waiting on global loads, 43 % occupancy and "
               "12.6 % of DRAM bandwidth (results/h200/ncu_tc_frag_7168x7168_random70_n8.txt). "
               "The CUDA-core pick is alike: 61 % of stalls on global loads, 26 % of DRAM "
               "bandwidth (ncu_gs_cyclic_batch_7168x7168_magnitude70_n8.txt)")
      for n, s, pct in ((8, 0.7, 70), (32, 0.7, 70), (64, 0.9, 90))],
    *[dict(label="Table 4", what=f"mean speedup over cuSPARSE, {pr}, {int(100 * s)} %, col = {n}",
           script="experiments/table4_gs.py", paper=p, paper_note=_A100,
           ours=dict(results="table4_gs", view="table4_gs:table",
                     where={"base": "cusparse", "pruning": pr, "sparsity": s, "n": n},
                     field="mean_timed", fmt=".2f", unit="×", agg="list",
                     item="{v} ({timed_shapes} shapes; cuSPARSE within the error bound in {shapes})"),
           why="mean over the six shapes, every timed cuSPARSE result counted: torch's fp16 "
               "cuSPARSE misses our error bound in 42 of the 72 fig14 cases (table4_gs also "
               "gives the mean over those within it)")
      for (pr, s, n, p) in (("magnitude", 0.7, 8, 23.71), ("magnitude", 0.9, 8, 7.40),
                            ("random", 0.7, 8, 26.13), ("random", 0.9, 8, 11.35),
                            ("magnitude", 0.7, 32, 27.99), ("magnitude", 0.9, 32, 7.01),
                            ("random", 0.7, 32, 29.29), ("random", 0.9, 32, 12.31))],
    dict(label="Table 4", what="largest speedup of the tuned kernel over the generalsparse "
                               "default (the cost model's pick), any pruning, 70/90 %, col = 8, 32",
         script="experiments/table4_gs.py", paper=None,
         ours=dict(results="table4_gs", view="table4_gs:table", where={"base": "generalsparse"},
                   field="max", agg="max", fmt=".2f", unit="×"),
         why="the paper's Table 4 has N = 8 and 32; the next row counts every Fig. 14 cell"),
    dict(label="Fig. 14", what="the generalsparse default's time over the tuned pick's, largest "
                               "over the cells timed with both (N = 8, 32, 64)",
         script="experiments/fig14_gs.py", paper=None,
         ours=dict(results="fig14_gs", view="fig14_gs:default_gap", field="gap", agg="max",
                   fmt=".2f", unit="×"),
         why="issue 29's goal: at most 1.2 on every cell. The default is timed on 48 of the "
             "72 cells so far: 7168×7168 (6ea8d2a), 28672×7168 and 9216×9216 at 70 % and "
             "7168×28672 at 70 % random (990e90d), 28672×7168 and 9216×9216 at 90 % (b6b8eeb), "
             "7168×28672 at 90 % and at 70 % magnitude (d33d7b0; from b6b8eeb on the search "
             "also times the default and keeps it unless beaten; the other cells' rows predate "
             "it); above 1.2 on four (7168×7168 and 9216×9216 random 90 %, N = 32 and 64); "
             "below 1 the default is the faster of the two"),
    *[dict(label="Table 5", what=f"mean speedup over cuSPARSE, random ({b},{b}) blocks, "
                                 f"{int(100 * s)} %, col = {n}",
           script="experiments/table5_gs.py", paper=p, paper_note=_A100,
           ours=dict(results="table5_gs", view="table5_gs:table",
                     where={"base": "cusparse", "block": f"({b},{b})", "sparsity": s, "n": n},
                     field="mean", fmt=".2f", unit="×"),
           why="7168×7168 and 7168×28672 (two of the six shapes, the default); the mean over "
               "the shapes where torch's fp16 cuSPARSE meets our error bound (1 or 2)")
      for (b, s, n, p) in ((1, 0.7, 8, 26.13), (4, 0.7, 8, 27.08), (8, 0.7, 8, 27.10),
                           (1, 0.9, 8, 11.35), (4, 0.9, 8, 13.33), (8, 0.9, 8, 14.01),
                           (1, 0.7, 32, 29.29), (4, 0.7, 32, 30.35), (8, 0.7, 32, 31.37),
                           (1, 0.9, 32, 12.31), (4, 0.9, 32, 12.37), (8, 0.9, 32, 12.45))],
    *[dict(label="Fig. 15", what=f"mean speedup over cuSPARSE SpMM on SuiteSparse, fp32, N = {n}",
           script="experiments/fig15_gs.py", paper=p, paper_note="1168 matrices, A100",
           ours=dict(results="fig15_gs", where=_gs_at(n=n), field="speedup_vs_cusparse", agg="mean",
                     fmt=".2f", unit="×"),
           why="29 local matrices")
      for n, p in ((8, 6.39), (32, 4.38), (64, 7.46))],
    *[dict(label="Table 6", what=f"share of matrices > 1.8× over cuSPARSE, col = {n}",
           script="experiments/table6_gs.py", paper=p, paper_note="1168 matrices, A100",
           ours=dict(results="table6_gs", view="table6_gs:table", where={"base": "cusparse", "n": n},
                     field=">1.8x", fmt=".1f", unit=" %"),
           why="29 local matrices")
      for n, p in ((8, 76.9), (32, 4.2), (64, 0.0))],
    dict(label="Fig. 4", what="time under random pruning over time under magnitude pruning, same "
                              "shape, sparsity and N = 32 (range, geometric mean over 6 matrices)",
         script="experiments/fig4_gs.py", paper="a fixed kernel's speed changes with the pattern",
         paper_note=_A100,
         ours=dict(results="fig4_gs", view="fig4_gs:summary", agg="list", sep="; ", field="geomean",
                   fmt=".2f", item="{method} {low:.2f}–{high:.2f}, geomean {v}"),
         why="the paper shows bars only. Below 1: the random-pruned matrix (rows of nearly equal "
             "length) is the faster one; the fixed kernel (a warp-group per row) loses most on "
             "magnitude pruning (uneven rows), CSR SpMM less"),
    *[dict(label="Fig. 20", what=f"decode speedup end to end, 70 % outer / 90 % middle layers, "
                                 f"batch {B}: the fastest sparse format over dense",
           script="experiments/e2e_decode.py", paper=x, paper_fmt=".2f",
           paper_note="FasterTransformer, LLaMA / OPT models, A100",
           ours=_e2e("max", method=("!=", "dense"), sparsity="mix", batch=B),
           why=_E2E_WHY + "; every format: {each}",
           why_rules=dict(each=dict(_e2e("list", method=("!=", "dense"), sparsity="mix", batch=B),
                                    item="{method} {v}")))
      for B, x in ((8, 2.33), (32, 1.58))],
    dict(label="Fig. 18", what="speedup over base (fixed allocation, thread reduction), geometric "
                               "mean of 20 (matrix, N), and cases where the variant is fastest",
         script="experiments/fig18_gs.py",
         paper="base + op1 + op2 the fastest of the variants", paper_note="bars only, A100",
         ours=dict(results="fig18_gs", view="fig18_gs:summary", agg="list", sep="; ",
                   field="geomean", fmt=".2f", unit="×",
                   item="{variant} {v} (fastest in {fastest})"),
         why="op1+op2 is a model-ranked search over the whole space (its top 6 and the anchors); "
             "op1 searches the thread-reduction strategies only and wins 5 cases (DIMACS10/cs4, "
             "vanHeukelum/cage11, luxembourg_osm at N = 32), where the model ranks the whole "
             "space's better strategies too low. The code optimizer (-opt: every offset loaded) "
             "changes the time by -4 to +16 %"),
    dict(label="§4.6", what="cost-model accuracy on held-out matrices (1 - median |pred/meas - 1|)",
         script=["experiments/search_gs.py", "spmvlab/generalsparse/fit.py"], paper=0.9,
         paper_note="\"approximately 90 %\", A100",
         ours=dict(results="search_gs", view="search_gs:summary", field="median_accuracy", fmt=".2f"),
         why="per-strategy ridge regression on log time, 14 features (the ridge term by 4-fold "
             "cross-validation over the 24 training matrices); every 4th matrix held out; 0.80 "
             "with the nearly unregularised fit first used"),
    dict(label="§4.6", what="share of held-out (matrix, N) whose best of the model's top 4 is within "
                            "10 % of the exhaustive best",
         script=["experiments/search_gs.py", "spmvlab/generalsparse/fit.py"], paper=None,
         ours=dict(results="search_gs", view="search_gs:summary", field="top_within_10pct", scale=100,
                   fmt=".0f", unit=" %"),
         why="issue goal: >= 80 % (23 of 24 cases at 3e06c79; the one miss, SNAP/ego-Facebook at "
             "N = 64: best of the top 4 at 0.80 of the best, the first pick at 0.60; 5 of 8 held-out "
             "matrices are the mpnet weights, where every case is met; at 0a59827, before the cyclic "
             "thread division and its anchors, 19 of 24)"),
    dict(label="§4.6", what="search iterations to reach 90 % of the exhaustive best (median)",
         script=["experiments/search_gs.py", "spmvlab/generalsparse/fit.py"], paper="30–50",
         ours=dict(results="search_gs", view="search_gs:summary", field="median_iterations_to_90",
                   fmt=".0f"),
         why="in the model's order"),
    dict(label="§4.6", what="search seconds to reach 90 % of the exhaustive best (median)",
         script=["experiments/search_gs.py", "spmvlab/generalsparse/fit.py"], paper="10–30 s",
         ours=dict(results="search_gs", view="search_gs:summary", field="median_seconds_to_90",
                   fmt=".1f", unit=" s"),
         why="each try: plan + upload + check + timing as measured, plus one kernel's compile "
             "(2.4 s: 451 kernels compiled in 67 s by 16 processes, the first part on a fresh machine)"),
    dict(label="§4.6", what="exhaustive search seconds per (matrix, N) (median)",
         script="experiments/search_gs.py", paper="≈ 15 min",
         ours=dict(results="search_gs", view="search_gs:summary", field="median_exhaustive_s",
                   fmt=".0f", unit=" s"),
         why="over a fixed sample of 20 % of the strategy keys plus the anchors (62-222 "
             "strategies per matrix and N; the full space is 298-1082), each try charged one "
             "compile as above"),
]


# =============================================================================================
# CSR-dtANS (Schätzle, Pegolotti, Püschel): the dtANS paper's values beside ours (issue 9)
# =============================================================================================

_F6_GOAL = dict(results="fig6_dtans", view="fig6_dtans:goal")
_T1 = dict(results="table1_dtans", agg="list", sep="; ", item="{nnz_per_row}/row {nnz}: {v}",
           field="success", fmt="d")
_CELL_ITEM = "{nnz_per_row}/row {nnz}: {success}/{total}"
_SPEED_NOTE = ("RTX 5090 (1.8 TB/s, 96 MB L2) vs H200 (4.2 TB/s copy, 60 MB L2); baselines CSR "
               "and COO (CuPy) and SELL (ctypes): the fastest of those timed. The kernel decodes "
               "{rate} symbols/s, {share} of the rate that would keep up with the copy "
               "bandwidth (fig7_dtans's throughput table, matrices of 2^23 nnz and more): "
               "decoding, not memory, sets its time")
_SPEED_RULES = dict(
    rate=dict(results="fig7_dtans", view="fig7_dtans:throughput", field="symbols_per_s",
              agg="range", fmt=".1e"),
    share=dict(results="fig7_dtans", view="fig7_dtans:throughput", field="share", agg="range",
               scale=100, fmt=".0f", unit=" %"))


def _dtans_speed(label, cache, dtype, paper):
    table = "table2_dtans" if cache == "warm" else "table3_dtans"
    return dict(label=label, what=f"max SpMV speedup over the fastest cuSPARSE format, {cache} L2, "
                                  f"{dtype}", script=[f"experiments/{'fig7' if cache == 'warm' else 'fig8'}_dtans.py",
                                                      f"experiments/{table}.py"],
                paper=paper, ours=dict(results=table, table="summary", where={"dtype": dtype},
                                       field="best_speedup", fmt=".2f", unit="×"),
                why=_SPEED_NOTE, why_rules=_SPEED_RULES)


def _dtans_large(label, cache, dtype, paper):
    table = "table2_dtans" if cache == "warm" else "table3_dtans"
    return dict(label=label, what=f"matrices > 2^25 nnz where CSR-dtANS is faster, {cache} L2, {dtype} "
                                  "(nnz/row <= 10; > 10)",
                script=f"experiments/{table}.py", paper=paper,
                ours=dict(results=table, where={"dtype": dtype, "source": "all", "nnz": "> 2^25"},
                          agg="list", sep="; ", item=_CELL_ITEM, field="success", fmt="d"),
                why="our > 2^25 matrices are {large} synthetic ones (of 2^26 and 2^27 nnz, those "
                    "timed within fig7_dtans's budget); the paper's 155 are real",
                why_rules=dict(large=dict(results=table, table="summary", where={"dtype": dtype},
                                          field="large", fmt="d")))


def _llm_speed(what: str, method: str, shape: tuple, why: str) -> dict:
    """A dtans_llm_speed row: ``method``'s speedup over cuBLAS on ``shape`` per sparsity."""
    return dict(label="(beyond)", what=what, script="experiments/dtans_llm_speed.py", paper=None,
                ours=dict(results="dtans_llm_speed", where={"method": method, "shape": list(shape)},
                          agg="list", field="speedup_vs_cublas", item="{v} at {pct} %", fmt=".2f",
                          unit="×"),
                why=why)


DTANS = [
    dict(label="Fig. 3", what="tANS example: H(P), bits per symbol", script="experiments/fig3_dtans.py",
         script_note="CPU", paper=1.361, paper_fmt=".3f",
         ours=dict(results="fig3_dtans", view="fig3_dtans:summary", field="entropy", fmt=".3f"),
         why="—"),
    dict(label="Fig. 3", what="… H(P, P′) with the chosen slots abbbbccc; H(P, P″) for P″ = (¼, ½, ¼)",
         script="experiments/fig3_dtans.py", script_note="CPU", paper="1.366; 1.5",
         ours=dict(results="fig3_dtans", view="fig3_dtans:summary", agg="list", field="cross_entropy",
                   item="{v}; {cross_entropy_suboptimal:.1f}", fmt=".3f"),
         why="—"),
    dict(label="Fig. 3", what="… final state and bit count", script="experiments/fig3_dtans.py",
         script_note="CPU", paper="23, 14 bits",
         ours=dict(results="fig3_dtans", view="fig3_dtans:summary", agg="list", field="final_state",
                   item="{v}, {n_bits} bits", fmt="d"),
         why="the paper prints v4 = 01; its arithmetic (and ours) gives 10"),
    dict(label="Fig. 4", what="H(delta-coded columns) / H(columns), largest over 2^8–2^18 nodes and "
                              "degrees 5 / 10 / 20 (median of 3 seeds)",
         script="experiments/fig4_dtans.py", script_note="CPU", paper="below 1 in every case",
         ours=dict(results="fig4_dtans", view="fig4_dtans:summary", agg="list", field="ratio_max",
                   item="{model} ≤ {v}", fmt=".2f"),
         why="the paper gives no values; Watts–Strogatz with rewiring p = 0.1 (not stated)"),
    dict(label="Fig. 6", what="best compression vs the smallest of CSR / COO / SELL, fp64",
         script="experiments/fig6_dtans.py", script_note="CPU", paper=11.77,
         ours=dict(results="fig6_dtans", view="fig6_dtans:best_compression", where={"dtype": "float64"},
                   field="factor", fmt=".2f", unit="×"),
         why="best here: a synthetic power-law matrix; the best real one is ego-Facebook (7.9×). dtANS "
             "spends at least 4 bits per symbol (M = 256 of K = 4096 slots), 8 per nonzero: ≤ 12× for fp64"),
    dict(label="Fig. 6", what="… fp32", script="experiments/fig6_dtans.py", script_note="CPU", paper=7.86,
         ours=dict(results="fig6_dtans", view="fig6_dtans:best_compression", where={"dtype": "float32"},
                   field="factor", fmt=".2f", unit="×"),
         why="as above (≤ 8× for fp32)"),
    dict(label="Table I", what="compressed, fp64, our compact tables (all matrices: 29 real + 80 synthetic)",
         script="experiments/table1_dtans.py", script_note="CPU",
         paper="≤10/row: 0/1266, 1212/3868, 1119/1889; >10/row: 0/14, 189/292, 1060/1061",
         ours=dict(_T1, where={"dtype": "float64", "source": "all", "tables": "our tables"},
                   item=_CELL_ITEM),
         why="our tables store (symbol, count) per kept symbol, not K slots: small matrices compress"),
    dict(label="Table I", what="… fp64, with the paper's K-slot tables (64 KB) counted",
         script="experiments/table1_dtans.py", script_note="CPU", paper="as above",
         ours=dict(_T1, where={"dtype": "float64", "source": "all", "tables": "paper's K-slot tables"},
                   item=_CELL_ITEM),
         why="then, as in the paper, nothing ≤ 2^10 compresses"),
    dict(label="Table I", what="… fp32, our compact tables", script="experiments/table1_dtans.py",
         script_note="CPU",
         paper="≤10/row: 0/1266, 908/3868, 1068/1889; >10/row: 0/14, 168/292, 1060/1061",
         ours=dict(_T1, where={"dtype": "float32", "source": "all", "tables": "our tables"},
                   item=_CELL_ITEM),
         why="as above"),
    dict(label="Table I", what="… the 9 real matrices with > 2^15 nnz and > 10 nnz/row, fp64 and fp32",
         script="experiments/table1_dtans.py", script_note="CPU", paper="1060/1061 (both)",
         ours=dict(results="table1_dtans", agg="list", sep="; ", field="success", fmt="d",
                   item="{dtype} {success}/{total}",
                   where={"source": "suitesparse", "tables": "our tables", "nnz": "> 2^15",
                          "nnz_per_row": "> 10"}),
         why="—"),
    dict(label="(goal)", what="stored size over the order-0 entropy bound nnz·(H(Δ) + H(v)), median of "
                              "matrices ≥ 2^15 nnz and ≥ 10 nnz/row, fp64",
         script="experiments/fig6_dtans.py", script_note="CPU", paper="issue goal: ≤ 5 %",
         ours=dict(_F6_GOAL, where={"dtype": "float64"}, field="total_gap_median", scale=100,
                   fmt=".0f", unit=" %"),
         why="not reachable with the paper's parameters: every symbol costs ≥ log2(K/M) = 4 bits "
             "(low-entropy deltas and pattern values need < 1), rare values are escaped raw (64 bits) "
             "once K = 4096 slots are used, and each row carries its coder state (next rows)"),
    dict(label="(goal)", what="… the same symbols under the matrix's own dtANS tables, over H0 (median, "
                              "bits per nonzero: H0 → tables → stored)",
         script="experiments/fig6_dtans.py", script_note="CPU", paper=None,
         ours=dict(_F6_GOAL, where={"dtype": "float64"}, agg="list", field="entropy_bits_median",
                   item="{v} → {table_bits_median:.1f} → {bits_per_nnz_median:.1f}", fmt=".1f"),
         why="the table bound includes the 4-bit floor and raw escapes"),
    dict(label="(goal)", what="… word streams over the tables' own bound (median)",
         script="experiments/fig6_dtans.py", script_note="CPU", paper=None,
         ours=dict(_F6_GOAL, where={"dtype": "float64"}, field="table_gap_median", scale=100,
                   fmt=".0f", unit=" %"),
         why="the coder state: o = 3 words start each row, one word is read unconditionally per "
             "8-symbol segment"),
    _dtans_speed("Fig. 7", "warm", "float64", 3.29),
    _dtans_speed("Fig. 7", "warm", "float32", 2.67),
    _dtans_large("Table II", "warm", "float64", "65/80; 40/75"),
    _dtans_large("Table II", "warm", "float32", "36/80; 42/75"),
    _dtans_speed("Fig. 8", "cold", "float64", 3.48),
    _dtans_speed("Fig. 8", "cold", "float32", 2.72),
    _dtans_large("Table III", "cold", "float64", "64/80; 46/75"),
    _dtans_large("Table III", "cold", "float32", "37/80; 46/75"),
    dict(label="Fig. 8 (issue 28)", what="SpMV speedup over the fastest cuSPARSE format, cold L2, "
         "float64, synthetic matrices above 2^25 nnz, the paper's layout",
         script="experiments/fig7_dtans.py", paper=3.48,
         paper_note="the paper's best case over all its matrices (RTX 5090)",
         ours=dict(results="fig7_dtans", view="fig7_dtans:throughput",
                   where={"dtype": "float64", "nnz": (">", 2 ** 25)},
                   agg="list", field="speedup", fmt=".2f", unit="×", item="{matrix} {v}"),
         why="bound by the instructions the walk issues per symbol (ncu, docs/performance.md); "
             "first deltas from the row and packed short rows beyond the paper's layout: "
             "docs/performance.md"),
    dict(label="(issue 28)", what="CSR-dtANS decode rate, symbols per SM per clock, float64, same "
         "matrices", script="experiments/fig7_dtans.py", paper=2.0,
         paper_note="worked back from the 3.48x best case on the RTX 5090 (issue 28's estimate)",
         ours=dict(results="fig7_dtans", view="fig7_dtans:throughput",
                   where={"dtype": "float64", "nnz": (">", 2 ** 25)},
                   field="symbols_per_sm_clock", agg="range", fmt=".2f"),
         why="a lane per row: short rows pay a stream's set-up (docs/performance.md)"),
    dict(label="(beyond, issue 28)", what="SpMV speedup over the fastest cuSPARSE format, cold L2, "
         "2^25 nnz, first deltas from the row and 1 / 2 / 4 rows per lane (rows_per_lane)",
         script="tools/time_csr_dtans.py", paper=None,
         ours=dict(results="time_csr_dtans_rows_per_lane_b53fee4",
                   where={"method": ("in", ["csr_dtans[first_delta='diagonal']",
                                            "csr_dtans[first_delta='diagonal',rows_per_lane=2]",
                                            "csr_dtans[first_delta='diagonal',rows_per_lane=4]"])},
                   agg="list", field="speedup_vs_best_baseline", fmt=".2f", unit="×",
                   item="{matrix} {dtype} {method} {v}"),
         why="short rows gain from packing, 17-nonzero rows lose; rows_per_lane='auto' packs by "
             "mean row length where x's gathers are local and enough streams remain "
             "(reference.csr_dtans.choose_rows_per_lane)"),
    dict(label="(ours)", what="fast encoder, 2^25 nnz (fp16 values, 8–24 per row): seconds and "
                              "symbols/s vs the reference",
         script="tools/time_csr_dtans_encoder.py", script_note="CPU, 2 cores",
         paper="issue goal: < 60 s, ≥ 50× the reference",
         ours=dict(results="encoder_csr_dtans", agg="list", field="symbols_per_s", fmt=".3g",
                   where={"median_s": (">", 1.0)}, item="{encoder} {median_s:.2f} s for {nnz} nnz ({v}/s)"),
         why="median of 5 runs on a loaded 2-core machine (best 5.6 s, 51×); the reference is "
             "partly vectorised NumPy"),
    dict(label="(beyond)", what="pruned mpnet weights, fp16: bytes per weight, CSR-dtANS",
         script="experiments/dtans_llm.py", script_note="CPU", paper=None,
         ours=dict(results="dtans_llm", view="dtans_llm:table", where={"dtype": "float16"}, agg="list",
                   field="csr_dtans_bpw", fmt=".2f",
                   item="{v} at {pct} % (MACKO {macko_bpw:.2f}, CSR {csr_bpw:.2f}, H0 {entropy_bpw:.2f})"),
         why="no paper: dense fp16 is 2 bytes per weight"),
    dict(label="(beyond)", what="… the long-row layout (lanes_per_row=32), fp16",
         script="experiments/dtans_llm.py", script_note="CPU", paper=None,
         ours=dict(results="dtans_llm", view="dtans_llm:table", where={"dtype": "float16"}, agg="list",
                   field="csr_dtans_lanes32_bpw", fmt=".2f",
                   item="{v} at {pct} % (one stream per row: {csr_dtans_bpw:.2f})"),
         why="no paper: each row cut into 32 independently decoded streams, so a warp decodes a "
             "row; the pieces' initial words, stream ends and escaped first columns are the "
             "difference, large here because mpnet's rows are short (768 or 3072 columns: 32 "
             "pieces of a few to a few dozen nonzeros)"),
    dict(label="(beyond)", what="… fp32 values", script="experiments/dtans_llm.py", script_note="CPU",
         paper=None,
         ours=dict(results="dtans_llm", view="dtans_llm:table", where={"dtype": "float32"}, agg="list",
                   field="csr_dtans_bpw", fmt=".2f",
                   item="{v} at {pct} % (MACKO {macko_bpw:.2f}, CSR {csr_bpw:.2f})"),
         why="fp32 weights are almost all distinct: most values are escaped raw"),
    _llm_speed("CSR-dtANS SpMV speedup over cuBLAS GEMV, 4096×11008 fp16, cold L2", "csr_dtans",
               (4096, 11008),
               "no paper. CSR-dtANS gives each row to one thread and decodes its symbols one after "
               "another: a 4096-row layer is 128 warps for 132 SMs, each lane decoding all "
               "1100-5500 nonzeros of its row (90-50 %). LLM layers need several lanes per row: "
               "the long-row layout (next rows) does that"),
    _llm_speed("… the long-row layout (lanes_per_row=32: a warp per row), 4096×11008",
               "csr_dtans[lanes_per_row=32]", (4096, 11008),
               "no paper; issue 28's goal: at least 1.0× cuBLAS at 70 % and faster than MACKO at "
               "90 % (rows above and below: MACKO on the same matrices); the 32 streams per row "
               "store the bytes of dtans_llm.py's long-row row"),
    _llm_speed("… the long-row layout, 12288×12288", "csr_dtans[lanes_per_row=32]", (12288, 12288),
               "as above; MACKO on this shape in the same run: dtans_llm_speed.json's rows"),
    _llm_speed("… MACKO on the same matrices (value pool of the real weights)", "macko",
               (4096, 11008),
               "bytes per weight (rows' bytes_per_weight): MACKO 1.25 / 0.75 / 0.31 against "
               "CSR-dtANS 1.31 / 0.73 / 0.23 at 50 / 70 / 90 %; MACKO decodes with a warp per row"),
]

def _awaiting_gpu(rows: list) -> list:
    """``rows`` with each run of consecutive rows that read one GPU experiment without results
    yet (flagged ``AWAITING_FIRST_GPU_RUN``) folded into one row saying how to make them."""
    from spmvlab.experiment import load_experiment, result_devices
    out = []
    for r in rows:
        name = r["ours"].get("results") if isinstance(r["ours"], dict) else None
        if (not isinstance(name, str) or result_devices(name)
                or not getattr(load_experiment(name), "AWAITING_FIRST_GPU_RUN", False)):
            out.append(r)
        elif out and out[-1].get("_awaits") == name:
            out[-1]["what"] += "; " + r["what"]
        else:
            out.append(dict(label=r["label"], script=f"experiments/{name}.py", what=r["what"],
                            paper="see the rows once measured", why="—", _awaits=name,
                            ours=f"not yet run on the H200: `python experiments/{name}.py`"))
    return [{k: v for k, v in r.items() if k != "_awaits"} for r in out]


SECTIONS["macko"] = _awaiting_gpu(MACKO)
SECTIONS["dtans"] = _awaiting_gpu(DTANS)
SECTIONS["generalsparse"] = _awaiting_gpu(GENERALSPARSE)


# =============================================================================================
# EC-SpMV (Lin et al., papers/000_fdb5a61c744e272d.txt): the {{table:ec}} rows
# =============================================================================================

_EC_F9 = dict(results="fig9_ec", view="fig9_ec:summary", field="reduction_vs_csr32", scale=100,
              fmt=".1f", unit=" %", agg="list", item="{v} at {pct} %")
_EC_T2 = dict(results="table2_ec", view="table2_ec:table", field="padding_overhead", scale=100,
              fmt=".2f", unit=" %", agg="list", item="{v} at {pct} %")
_EC_F7 = dict(results="fig7_ec", view="fig7_ec:speedups", field="geomean", fmt=".2f", unit="×",
              agg="list", item="{v} at {pct} %")
_EC_F10 = dict(results="fig10_ec", view="fig10_ec:gains", fmt=".3f", unit="×", agg="list",
               item="{v} at {pct} %")
_EC_UNIFORM = ("uniform masks at the Llama2 shapes, not SparseGPT-pruned weights (no row "
               "correlations to exploit)")
_EC_NO_BASELINE = "AlphaSparse / DASP are not available: our baselines are cuBLAS, cuSPARSE, CSR-vector, MACKO"


def _ec_f9(dtype: str, fmt: str, paper: str, why: str, group: str = "llama2") -> dict:
    name = {"ec_csr8": "EC-CSR-8", "ec_csr4": "EC-CSR-4"}[fmt]
    return dict(label="Fig. 9", script="experiments/fig9_ec.py", script_note="CPU",
                what=f"{name} storage reduction vs CSR-32, {'FP32' if dtype == 'float32' else 'FP16'} "
                     f"values ({'10 Llama2 shapes, uniform' if group == 'llama2' else 'mpnet, per-row magnitude'})",
                paper=paper, ours=dict(_EC_F9, where={"group": group, "dtype": dtype, "format": fmt}),
                why=why)


_EC_NAMES = {"cublas": "cuBLAS", "cusparse": "cuSPARSE", "macko": "MACKO", "csr_vector": "CSR-vector"}


def _ec_f7(dtype: str, kind: str, baseline: str, paper, why: str) -> dict:
    what = "SpMV" if kind == "spmv" else "SpMM (N = 8)"
    return dict(label="Fig. 7", script="experiments/fig7_ec.py",
                what=f"EC-SpMV {what} speedup over {_EC_NAMES[baseline]}, {'FP32' if dtype == 'float32' else 'FP16'} "
                     f"(geomean over the 5 shapes of fig7_ec)",
                paper=paper, ours=dict(_EC_F7, where={"dtype": dtype, "kind": kind, "baseline": baseline}),
                why=why)


EC = [
    dict(label="Table 1", what="test machines", script="experiments/ec_common.py",
         script_note="cpu_info() in the CPU results",
         paper="RTX 3080 Ti / 3090 / 4090; Xeon Silver 4316 (20 cores), W5-3435 (16 cores); CUDA 12.2",
         ours="H200 for the timings (GPU metadata in every results/h200/*.json); the CPU figures "
              "(Figs. 5, 8, 9, Table 2, census) on a 2-core Xeon (results/cpu/*_ec.json: `cpu`)",
         why="those GPUs are not available"),
    dict(label="Fig. 5", script="experiments/fig5_ec.py", script_note="CPU",
         what="deltas at or below 32 / 64 / 128 at 70 / 80 / 90 % (Llama2-70B shapes, uniform; "
              "7B and 13B agree to 0.01 %)",
         paper="most",
         ours=dict(results="fig5_ec", view="fig5_ec:at_paper_threshold", where={"group": "Llama2-70B"},
                   field="frac", scale=100, fmt=".3f", unit=" %", agg="list",
                   item="{v} (≤ {threshold}, {pct} %)"),
         why=_EC_UNIFORM),
    dict(label="Fig. 5", script="experiments/fig5_ec.py", script_note="CPU",
         what="… the same on the real mpnet weights pruned per row by magnitude",
         paper="most",
         ours=dict(results="fig5_ec", view="fig5_ec:at_paper_threshold", where={"source": "weights"},
                   field="frac", scale=100, fmt=".3f", unit=" %", agg="list",
                   item="{v} (≤ {threshold}, {pct} %)"),
         why="—"),
    dict(label="Fig. 5", script="experiments/fig5_ec.py", script_note="CPU",
         what="deltas above 15 (beyond EC-CSR-4's range), Llama2-7B shapes",
         paper=None,
         ours=dict(results="fig5_ec", view="fig5_ec:beyond", where={"group": "Llama2-7B"},
                   field="over_15", agg="list", item="{v} at {pct} %", scale=100, fmt=".2f",
                   unit=" %"),
         why="the CDF at 15 explains Table 2's EC-CSR-4 row: every step above 15 in a 1-grained row costs a zero"),
    _ec_f9("float32", "ec_csr8", "38.9 / 37.3 / 33.7 %", _EC_UNIFORM + "; our CSR-32 counts int32 row pointers too"),
    _ec_f9("float32", "ec_csr4", "40.9 / 38.2 / 22.7 %", "as above"),
    _ec_f9("float16", "ec_csr8", "52.0 / 49.9 / 45.8 %", "as above (the issue's goal: ≥ 50 % at 70 %)"),
    _ec_f9("float16", "ec_csr4", "55.4 / 53.5 / 41.3 %", "as above (55.4 % is the abstract's headline)"),
    _ec_f9("float16", "ec_csr8", None, "the real matrices are 768 or 3072 wide: fewer shared columns, fewer blocks", group="mpnet"),
    dict(label="Table 2", script=["experiments/table2_ec.py", "experiments/fig9_ec.py"], script_note="CPU",
         what="EC-CSR-4 padding overhead (explicit zeros / nonzeros), 10 Llama2 shapes pooled",
         paper="6.35 / 7.39 / 30.43 %",
         ours=dict(_EC_T2, where={"group": "llama2", "format": "ec_csr4"}),
         why=_EC_UNIFORM + "; the 90 % value follows the share of steps above 15 (Fig. 5 row)"),
    dict(label="Table 2", script=["experiments/table2_ec.py", "experiments/fig9_ec.py"], script_note="CPU",
         what="EC-CSR-8 padding overhead, 10 Llama2 shapes pooled",
         paper="0.75 / 0.71 / 1.87 %",
         ours=dict(_EC_T2, where={"group": "llama2", "format": "ec_csr8"}),
         why="as above"),
    dict(label="Fig. 8", script="experiments/fig8_ec.py", script_note="CPU",
         what="preprocessing time (extraction + conversion), 4096×11008 and 8192×28672 at 70 %",
         paper="< 100 s for most matrices",
         ours=dict(results="fig8_ec", where={"sparsity": 0.7, "shape": ("in", [[4096, 11008], [8192, 28672]])},
                   field="total_s", agg="list", item="{shape_x} {v}", fmt=".1f", unit=" s"),
         why="our CPU has 2 cores (theirs 16-20); the issue's goal: 8192×28672 in < 60 s"),
    dict(label="Fig. 8", script="experiments/fig8_ec.py", script_note="CPU",
         what="… slowest of the 10 Llama2 shapes at 70 %",
         paper="< 100 s for most matrices",
         ours=dict(results="fig8_ec", where={"sparsity": 0.7}, field="total_s", agg="max", fmt=".1f",
                   unit=" s"),
         why="28672×8192: the similarity counts of every matching round grow with rows²"),
    dict(label="census", script="experiments/census_ec.py", script_note="CPU",
         what="share of nonzeros in blocks of ≥ 2 rows, real (per-row magnitude) minus per-row random "
              "mask, EC-CSR-8, warp 8 × vector 2",
         paper=None,
         ours=dict(results="census_ec", view="census_ec:real_vs_random",
                   where={"delta_bits": 8, "warp_size": 8}, field="diff", agg="range", fmt="+.3f"),
         why="not in the paper; the issue asks whether real weights hold more blocks than random masks"),
    _ec_f7("float16", "spmv", "cublas", "> 1 on every matrix",
           "paper: RTX 30/40 GPUs, SparseGPT weights; here H200, uniform masks"),
    _ec_f7("float32", "spmv", "cublas", "> 1 on every matrix", "as above"),
    _ec_f7("float16", "spmv", "cusparse", "2.31–4.63× over its FP16 baselines (geomeans per GPU)", _EC_NO_BASELINE),
    _ec_f7("float16", "spmv", "macko", None, "MACKO is not in the paper; the issue's goal: faster at 80 and 90 %"),
    dict(label="Fig. 7", script="experiments/fig7_ec.py",
         what="EC-SpMV SpMV speedup over cuBLAS per shape at 70 %, FP16",
         paper="> 1 on every matrix",
         ours=dict(results="fig7_ec", field="speedup_vs_cublas", fmt=".2f", unit="×", agg="list",
                   item="{shape_x}: {v}", where={"method": "ec_csr", "dtype": "float16",
                                                  "kind": "spmv", "sparsity": 0.7}),
         why="the issue's goal at 70 % (faster than cuBLAS on every shape) is met since x is staged in "
             "shared memory (ECCSRConfig.x_in_shared), narrowest on 11008×4096; Nsight Compute there "
             "(results/h200/ncu_ec_csr_spmv_11008x4096_70_xs{0,5}_5524f71.txt): 1.31 → 1.59 TB/s, no "
             "eligible warp in 59.9 → 46.8 % of cycles. ≥ 2.3× on 12288×12288 is missed: the profile "
             "of the earlier kernel (results/h200/ncu_ec_csr_spmv_12288x12288_70.txt) found it "
             "latency-bound (DRAM at 34 % of peak, no eligible warp in 63 % of cycles)"),
    dict(label="Fig. 7", script="tools/time_ec_csr.py",
         what="EC-SpMV SpMV speedup over cuBLAS at 12288×12288, FP16 (the 4c5d083 kernel: x via L1)",
         paper=None, ours=dict(results="time_ec_csr", field="speedup_vs_cublas", fmt=".2f", unit="×",
                               where={"method": "ec_csr", "dtype": "float16", "kind": "spmv",
                                      "shape": [12288, 12288]}, agg="list", item="{v} at {pct} %"),
         why="not a Llama2 shape: the issue's goal, ≥ 2.3× at 70 %; EC-CSR streams 1.9 TB/s here "
             "against cuBLAS's 3.7 (time_ec_csr.json: tb_s). With x staged in shared memory "
             "(the default since 3580ca8) fig7_ec's rows of this shape give the current kernel"),
    dict(label="Fig. 7", script="tools/time_ec_csr.py",
         what="… EC-SpMV over MACKO at 12288×12288, FP16",
         paper=None, ours=dict(results="time_ec_csr", field="speedup_vs_macko", fmt=".2f", unit="×",
                               where={"method": "ec_csr", "dtype": "float16", "kind": "spmv",
                                      "shape": [12288, 12288]}, agg="list", item="{v} at {pct} %"),
         why="EC-CSR stores more bytes than MACKO at every sparsity here (time_ec_csr.json: bytes, "
             "e.g. 49.2 vs 46.4 MB at 90 %) and streams them slower"),
    _ec_f7("float16", "spmm", "cublas", None, "SpMM is not in the paper"),
    _ec_f7("float16", "spmm", "macko", None,
           "the issue's goal: EC-CSR's SpMM within 1.25× of MACKO's time; "
           "results/h200/ncu_ec_csr_spmm8_12288x12288_70.txt profiles an earlier SpMM kernel (773 µs "
           "at 12288×12288, 70 %, against fig7_ec's time now) and no longer describes it"),
    dict(label="Fig. 10", script="experiments/fig10_ec.py",
         what="index compression only vs CSR-vector, FP32 (geomean over the shapes)",
         paper=1.154, paper_note="+15.4 % over AlphaSparse",
         ours=dict(_EC_F10, where={"dtype": "float32", "shape": "geomean"}, field="index_vs_csr_vector"),
         why=_EC_NO_BASELINE),
    dict(label="Fig. 10", script="experiments/fig10_ec.py",
         what="+ block extraction over index compression only, FP32",
         paper=1.157, paper_note="+15.7 %",
         ours=dict(_EC_F10, where={"dtype": "float32", "shape": "geomean"}, field="extraction_gain"),
         why=_EC_UNIFORM),
    dict(label="Fig. 10", script="experiments/fig10_ec.py",
         what="+ load balancing (clipping, reordering) over extraction, FP32",
         paper=1.1012, paper_note="up to +10.12 % on some matrices",
         ours=dict(_EC_F10, where={"dtype": "float32", "shape": "geomean"}, field="balancing_gain"),
         why="ours is a geomean, the paper's a maximum"),
    dict(label="Table 3", script="experiments/e2e_decode.py",
         what="decode speedup, Llama2-7B at 70 %, batch 1: EC-CSR layers over dense",
         paper=49.97 / 43.64, paper_fmt=".2f",
         paper_note="llama.cpp, SparseGPT pruning, 128 tokens, RTX 3090 (64 / 256 tokens: 1.15 / 1.11)",
         ours=_e2e(method="ec_csr", sparsity="0.7", batch=1),
         why=_E2E_WHY + "; llama.cpp and SparseGPT-pruned weights are not available here"),
]



def _ec_gpu_rows(name: str, rows: list) -> list:
    """``rows`` once results of ``name`` exist on some GPU, else one row saying how to make them
    (a rule without results has nothing to read)."""
    from spmvlab.experiment import result_devices
    if any(d != "cpu" for d in result_devices(name)):
        return rows
    return [dict(label=rows[0]["label"], script=f"experiments/{name}.py",
                 what="; ".join(r["what"] for r in rows), paper="see the rows once measured",
                 ours=f"not yet run on the H200: `python experiments/{name}.py`", why="—")]


# issue 29's table (experiments/spmm_llm.py): the fastest of our formats per cell, over cuBLAS
# GEMM fp16 timed in the same run; no paper has Hopper numbers, the anchors' A100 values are in
# the template's prose
_BEST = dict(results="spmm_llm", view="spmm_llm:best", field="speedup", fmt=".2f", unit="×",
             agg="list", item="{v} {shape_x} ({method})", sep="; ")
_SPMM_GOAL = {(8, 0.5): 1.0, (8, 0.7): 1.5, (8, 0.9): 2.5, (32, 0.7): 1.0, (32, 0.9): 1.5,
              (64, 0.7): 1.0, (64, 0.9): 1.5}
SECTIONS["spmm_llm"] = [
    dict(label="—", what=f"fastest of ours over cuBLAS, fp16, {round(100 * sp)} % sparse, N = {k}",
         script="experiments/spmm_llm.py", paper=None,
         ours=dict(_BEST, where={"sparsity": sp, "k": k}),
         why=(f"no paper on Hopper; issue 29's goal {_SPMM_GOAL[(k, sp)]}×"
              if (k, sp) in _SPMM_GOAL else "no paper on Hopper; no goal set"))
    for k in (8, 32, 64) for sp in (0.5, 0.7, 0.9)] + [
    dict(label="—", what=f"EC-CSR SpMM's time over MACKO SpMM's, fp16, {round(100 * sp)} % sparse, N = 8",
         script="experiments/spmm_llm.py", paper=None,
         ours=dict(results="spmm_llm", view="spmm_llm:ec_over_macko", where={"sparsity": sp, "k": 8},
                   field="ratio", fmt=".2f", unit="×", agg="list", item="{v} {shape_x}", sep="; "),
         why="issue 29's goal: at most 1.25×. EC-CSR SpMM on uint32 positions throughout: "
             "7168×7168 and 28672×7168 at 50 % measured at 6ea8d2a, 4096×11008 and "
             "28672×7168 at 70/90 % at 5524f71")
    for sp in (0.5, 0.7, 0.9)]

SECTIONS["ec"] = ([r for r in EC if r["label"] not in ("Fig. 7", "Fig. 10", "Table 3")]
                  + _ec_gpu_rows("fig7_ec", [r for r in EC if r["label"] == "Fig. 7"])
                  + _ec_gpu_rows("fig10_ec", [r for r in EC if r["label"] == "Fig. 10"])
                  + _awaiting_gpu([r for r in EC if r["label"] == "Table 3"]))


# ---------------------------------------------------------------------------------------------
# the README's summary table: one row per format, read out of the results as the sections are
# ---------------------------------------------------------------------------------------------

_LAYER = dict(shape=[4096, 11008], sparsity=0.7, dtype="float16")
_X = dict(fmt=".2f", unit="×")


def _speed(results, method, k=None, **where):
    """Speedup over cuBLAS of ``method`` on the layer (``k``: SpMM columns; None: any row of
    an SpMV-only results file, whose older runs record no ``k``)."""
    return dict(results=results, where=dict(_LAYER, method=method, **where,
                                            **({} if k is None else dict(k=k))),
                field="speedup_vs_cublas", **_X)


def _weight_bytes(results, method, shape=(4096, 11008), **where):
    return dict(results=results, where=dict(_LAYER, method=method, **where), field="format_bytes",
                scale=1.0 / (shape[0] * shape[1]), fmt=".2f", unit=" B")


#: format -> (paper, bytes per weight, SpMV vs cuBLAS, SpMM N = 8 vs cuBLAS); a text instead of
#: a rule where nothing is measured
README_SUMMARY = [
    dict(format="CSR (csr_vector)", paper="baseline", bytes=_weight_bytes("fig7_ec", "csr_vector", k=1),
         spmv=_speed("fig7_macko", "csr_vector"), spmm=_speed("fig7_ec", "csr_vector", k=8)),
    dict(format="MACKO", paper="MACKO", bytes=_weight_bytes("fig7_ec", "macko", k=1),
         spmv=_speed("fig7_macko", "macko"), spmm=_speed("fig7_ec", "macko", k=8)),
    dict(format="EC-CSR", paper="EC-SpMV", bytes=_weight_bytes("fig7_ec", "ec_csr", k=1),
         spmv=_speed("fig7_ec", "ec_csr", k=1), spmm=_speed("fig7_ec", "ec_csr", k=8)),
    dict(format="CSR-dtANS", paper="dtANS", bytes=_weight_bytes("dtans_llm_speed", "csr_dtans"),
         spmv=dict(_speed("dtans_llm_speed", "csr_dtans"), fmt=".3f"), spmm="not timed"),
    dict(format="CSR-dtANS, long rows (lanes_per_row=32)", paper="beyond dtANS",
         bytes=_weight_bytes("dtans_llm_speed", "csr_dtans[lanes_per_row=32]"),
         spmv=_speed("dtans_llm_speed", "csr_dtans[lanes_per_row=32]"), spmm="not timed"),
    dict(format="split 2:4 (split24)", paper="beyond (2:4 + CSR residual)",
         bytes=_weight_bytes("spmm_llm", "split24", k=8), spmv="SpMM only",
         spmm=_speed("spmm_llm", "split24", k=8)),
    dict(format="GeneralSparse (tuned)", paper="GeneralSparse",
         bytes=dict(_weight_bytes("fig14_gs", "generalsparse_best", shape=(7168, 7168), n=8,
                                  pruning="random"), where=dict(method="generalsparse_best",
                                  shape=[7168, 7168], sparsity=0.7, n=8, pruning="random")),
         spmv="SpMM only",
         spmm=dict(results="fig14_gs", where=dict(method="generalsparse_best", shape=[7168, 7168],
                                                  sparsity=0.7, n=8, pruning="random"),
                   field="speedup_vs_cublas", note="7168×7168", **_X)),
]
