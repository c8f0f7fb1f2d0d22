#!/usr/bin/env bash
# The whole test suite on a GPU machine in 11 shards run in parallel, spread over the GPUs
# the machine shows (or those CUDA_VISIBLE_DEVICES names), one log per shard:
#
#     SPMVLAB_GIT_HASH=<commit> tools/suite_shards.sh OUTDIR
#
# writes OUTDIR/pytest_<gpu>_<commit>_shard<i>.log (a header naming the command, GPU, commit and
# date; pytest's output; "# exit <rc>") and prints each shard's summary line. Test files not named
# below go to the last shard, so a new file is never left out. Run from the repository root with the
# project importable (PYTHONPATH=. on a machine where it is not installed).
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
s10="tests/test_csr_dtans_kernel.py tests/test_ec_csr_encoder.py"
# host-side files and the GeneralSparse sweeps, apart so that no shard runs much longer than
# the others
s9="tests/test_macko_reference.py tests/test_readme.py tests/test_tans.py tests/test_gs_experiments.py"
s8="tests/test_block_extraction.py tests/test_coo.py tests/test_csr_dtans.py tests/test_density.py tests/test_ec_csr_kernel.py tests/test_gallery.py tests/test_io.py tests/test_methods.py tests/test_repro.py tests/test_tune.py"
s11=""
for f in tests/test_*.py; do
  case " $F $s9 $s5 $s6 $s7 $s8 $s10 " in *" $f "*) ;; *) s11="$s11 $f";; esac
done
# the GPUs to spread the shards over: CUDA_VISIBLE_DEVICES's list, else every GPU shown
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -ra gpus <<< "$CUDA_VISIBLE_DEVICES"
else read -ra gpus <<< "$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr '\n' ' ')"; fi
# numba's on-disk cache first, in one process: shards compiling the same cached parallel function
# at once can leave its index and code from different processes (numba issue 10128), a segfault
# when loaded (the H200's run at 2426572: shard 7 in the EC-CSR encoder)
python - <<'PY' || echo "# warm-up of the compiled encoders failed; the shards compile them themselves"
import numpy as np, scipy.sparse as sp
from spmvlab.encoders import csr_dtans, ec_csr, macko
A = sp.random(64, 96, density=0.3, format="csr", random_state=np.random.default_rng(0))
for enc in (csr_dtans, ec_csr, macko):
    enc.encode(A)
PY
keys=("macko" "ec_csr or coo" "csr_dtans" "not macko and not ec_csr and not coo and not csr_dtans")
i=0
shards=("${keys[@]}" "$s5" "$s6" "$s7" "$s8" "$s9" "$s10" "$s11")
for k in "${shards[@]}"; do
  [ -n "${k// /}" ] || continue        # no unnamed test files: an empty list would run them all
  i=$((i + 1))
  log="$out/pytest_${tag}_${H}_shard$i.log"
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
for f in "$out"/pytest_${tag}_${H}_shard*.log; do
  echo "$(basename "$f"): $(grep -E 'passed|failed|error' "$f" | tail -1) $(tail -1 "$f")"
done
