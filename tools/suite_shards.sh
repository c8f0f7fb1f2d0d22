#!/usr/bin/env bash
# The whole test suite on a GPU machine in 14 shards run in parallel, spread over the GPUs
# the machine shows (or those CUDA_VISIBLE_DEVICES names), in one log:
#
#     SPMVLAB_GIT_HASH=<commit> tools/suite_shards.sh OUTDIR
#
# writes OUTDIR/pytest_<gpu>_<commit>_suite.log: the totals and each shard's summary line, then
# every shard's log (a header naming the command, GPU, commit and date; pytest's output;
# "# exit <rc>"), and prints the head. One file, because a device call returns only a few.
# Test files not named below go to the last shard, so a new file is never left out. Run from
# the repository root with the project importable (PYTHONPATH=. on a machine where it is not
# installed).
set -u
out=${1:?usage: tools/suite_shards.sh OUTDIR}
mkdir -p "$out"
H=${SPMVLAB_GIT_HASH:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# the results folder's name for this GPU (h100, h200, ...; cpu without one)
tag=$(python -c "import sys; from spmvlab.runinfo import device_slug; print(device_slug({'name': sys.argv[1]} if sys.argv[1] else None))" "$gpu")
F="tests/test_formats.py"
s5="tests/test_datasets.py tests/test_entropy.py tests/test_cli.py tests/test_crossover.py tests/test_csr.py tests/test_dtans_experiments.py tests/test_ec_csr.py tests/test_generalsparse.py tests/test_macko_encoder.py tests/test_offsets.py tests/test_row_matching.py"
s6="tests/test_anchors.py tests/test_codec.py tests/test_csr_dtans_encoder.py tests/test_cudasim.py tests/test_dtans.py tests/test_ec_experiments.py tests/test_graphs.py tests/test_macko_kernel.py tests/test_ptx.py tests/test_sell.py"
# kernel files that compile many variants, apart from the harness and codegen files
s7="tests/test_bench.py tests/test_codegen.py"
# test_csr_dtans_kernel.py in four: on a GPU each of its layouts compiles its own kernels
# (one shard held the whole file past any call's limit)
K="tests/test_csr_dtans_kernel.py"
L="$K::test_layouts_other_than_a_lane_per_row"
s10="$L -k lanes_per_row"
s12="$L -k rows_per_lane"
s13="$K::test_diagonal_first_deltas tests/test_ec_csr_encoder.py"
s14="$K --deselect $L --deselect $K::test_diagonal_first_deltas"
# host-side files and the GeneralSparse sweeps, apart so that no shard runs much longer than
# the others
s9="tests/test_macko_reference.py tests/test_readme.py tests/test_tans.py tests/test_gs_experiments.py"
s8="tests/test_block_extraction.py tests/test_coo.py tests/test_csr_dtans.py tests/test_density.py tests/test_ec_csr_kernel.py tests/test_gallery.py tests/test_io.py tests/test_methods.py tests/test_repro.py tests/test_tune.py"
s11=""
for f in tests/test_*.py; do
  case " $F $s9 $s5 $s6 $s7 $s8 $s13 $s14 " in *" $f "*) ;; *) s11="$s11 $f";; esac
done
# the GPUs to spread the shards over: CUDA_VISIBLE_DEVICES's list, else every GPU shown
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -ra gpus <<< "$CUDA_VISIBLE_DEVICES"
else read -ra gpus <<< "$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr '\n' ' ')"; fi
# numba's on-disk cache first, in one process: shards compiling the same cached parallel function
# at once can leave its index and code from different processes (numba issue 10128), a segfault
# when loaded
python - <<'PY' || echo "# warm-up of the compiled encoders failed; the shards compile them themselves"
import numpy as np, scipy.sparse as sp
from spmvlab.encoders import csr_dtans, ec_csr, macko
A = sp.random(64, 96, density=0.3, format="csr", random_state=np.random.default_rng(0))
for enc in (csr_dtans, ec_csr, macko):
    enc.encode(A)
PY
keys=("macko" "ec_csr or coo" "csr_dtans" "not macko and not ec_csr and not coo and not csr_dtans")
i=0
shards=("${keys[@]}" "$s5" "$s6" "$s7" "$s8" "$s9" "$s10" "$s12" "$s13" "$s14" "$s11")
# each shard's log in a folder of OUTDIR while it runs (a run stopped by a time limit leaves
# them there), joined into the one log at the end
logs="$out/shards_${H}"
mkdir -p "$logs"
started=$(date +%s)
for k in "${shards[@]}"; do
  [ -n "${k// /}" ] || continue        # no unnamed test files: an empty list would run them all
  i=$((i + 1))
  log="$logs/shard$(printf %02d $i).log"
  (
    if (( i <= 4 )); then args=("$F" -k "$k"); shown="$F -k $k"; else read -ra args <<< "$k"; shown="$k"; fi
    if (( ${#gpus[@]} )); then export CUDA_VISIBLE_DEVICES=${gpus[$(( (i - 1) % ${#gpus[@]} ))]}; fi
    echo "# shard $i of ${#shards[@]} (run in parallel, GPU ${CUDA_VISIBLE_DEVICES:-default}): pytest --hypothesis-profile=ci -q -rs --tb=short $shown"
    echo "# on ${gpu:-no GPU}, git $H, $(date -u +%FT%TZ)"
    # the sm_90 compile check (tests/test_ptx.py) in 4 processes: in one it outlasts every shard
    SPMVLAB_PTX_PROCS=${SPMVLAB_PTX_PROCS:-4} python -m pytest --hypothesis-profile=ci -q -rs --tb=short -p no:cacheprovider --durations=10 "${args[@]}"
    echo "# exit $?"
  ) > "$log" 2>&1 &
done
wait
suite="$out/pytest_${tag}_${H}_suite.log"
python - "$logs" "$suite" "${gpu:-no GPU}" "$H" "$(( $(date +%s) - started ))" <<'PY'
import glob, os, re, sys
logs, suite, gpu, commit, wall = sys.argv[1:]
files = sorted(glob.glob(os.path.join(logs, "shard*.log")))
texts = [open(f, errors="replace").read() for f in files]
# the totals' names -> the word pytest's summary line counts them by
words = {"passed": "passed", "skipped": "skipped", "failed": "failed", "errors": "error"}
lines, totals = [], dict.fromkeys(words, 0)
for f, t in zip(files, texts):
    # pytest's own summary line ("2 failed, 175 passed, ... in 239.84s"), not a traceback's
    # line naming an error that a dead CUDA context prints after it at exit
    summary = ([l for l in t.splitlines()
                if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)\b.* in [\d.]+s", l)]
               or ["(no summary)"])[-1]
    lines.append(f"#   {os.path.basename(f)}: {summary.strip()} {t.rstrip().splitlines()[-1]}")
    for key, word in words.items():
        m = re.search(rf"(\d+) {word}", summary)
        totals[key] += int(m.group(1)) if m else 0
head = [f"# tools/suite_shards.sh on {gpu} at {commit}, {len(files)} shards, {wall} s wall",
        "# totals: " + ", ".join(f"{v} {k}" for k, v in totals.items())] + lines
with open(suite, "w") as out:
    out.write("\n".join(head) + "\n")
    for t in texts:
        out.write(t if t.endswith("\n") else t + "\n")
print("\n".join(head))
PY
[ -s "$suite" ] && rm -rf "$logs"
