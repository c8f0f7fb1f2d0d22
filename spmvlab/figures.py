"""``python -m spmvlab.figures``: every experiment's figures from the saved results, and
paper_repro.md.

    python -m spmvlab.figures --list              the experiments (from experiments/*.py that
                                                  expose NAME), where they measure, which
                                                  devices have results
    python -m spmvlab.figures [NAME ...]          plot the saved results of every device
                                                  (default: every experiment, each of its RUNS)
    python -m spmvlab.figures --measure [NAME ...]  measure first where this machine can (a GPU
                                                  for GPU experiments; CPU experiments always),
                                                  then plot
    python -m spmvlab.figures --repro             regenerate paper_repro.md (after plotting
                                                  when names or --measure are given too)

Measuring never happens without ``--measure``. Exit status 1 when a named experiment has no
results to plot anywhere.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from . import experiment as X

__all__ = ["main", "listing"]


def listing() -> str:
    """One line per experiment: name, where it measures, devices with results, summary."""
    lines = []
    for name, mod in X.experiments().items():
        devs = sorted({d for run in getattr(mod, "RUNS", [{}])
                       for d in X.result_devices(X.results_name(mod, mod.config(**run)))})
        para = " ".join((mod.__doc__ or "").strip().split("\n\n")[0].split())
        first = re.split(r"\.\s+(?=[A-Z])", para)[0].rstrip(".")
        first = first if len(first) <= 100 else first[:99] + "…"
        where = "GPU" if mod.NEEDS_GPU else "CPU"
        lines.append(f"{name:<14} {where}  results: {','.join(devs) or '-':<10} {first}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m spmvlab.figures", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="experiments (default: all)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--measure", action="store_true",
                   help="measure before plotting, where this machine can")
    p.add_argument("--quick", action="store_true", help="with --measure: small runs (.quick files)")
    p.add_argument("--device", default=None, help="plot only results/DEVICE/")
    p.add_argument("--repro", action="store_true", help="regenerate paper_repro.md")
    args = p.parse_args(argv)
    if args.list:
        print(listing())
        return 0
    exps = X.experiments()
    unknown = [n for n in args.names if n not in exps]
    if unknown:
        p.error(f"unknown experiment(s) {unknown}: expected some of {sorted(exps)}")
    rc = 0
    if args.names or args.measure or not args.repro:
        gpu = X.gpu_available()
        for name in args.names or list(exps):
            mod = exps[name]
            plotted = 0
            for run in getattr(mod, "RUNS", [{}]):
                cfg = mod.config(args.quick, **run)
                if args.measure and (gpu or not mod.NEEDS_GPU):
                    X.run(mod, cfg, quick=args.quick, report=False)
                    plotted += 1
                    continue
                devs = X.result_devices(X.results_name(mod, cfg), args.quick)
                if args.device in devs or (devs and not args.device):
                    plotted += X.replot(mod, cfg, quick=args.quick, device=args.device) == 0
            if not plotted:
                why = " (measuring it needs a GPU)" if args.measure and mod.NEEDS_GPU else ""
                print(f"{name}: no saved results to plot{why}", file=sys.stderr)
                rc = 1 if args.names else rc
    if args.repro:
        from . import repro
        path = repro.write()
        print(f"wrote {os.path.relpath(path, X.ROOT)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
