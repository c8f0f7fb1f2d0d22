"""dtANS paper, Fig. 3: the worked tANS example, as tables computed by ``reference/tans.py``
(nothing typed in but the message, K and L).

The message ``cbcbccbbba`` is counted, the K = 8 slot multiplicities are chosen to minimise
the cross entropy (``tans.normalize``), the slots are spread (``abbbbccc``), and the message is
encoded right to left from state L = 16 and decoded again (``tans.encode_step`` /
``tans.decode_step``, one row per step). Rows:

* ``kind="slot"``: slot j, its symbol, digit and base (the paper's coding tables);
* ``kind="encode"``: step i (the symbol u_i, i = 9 .. 0), state before, bits emitted, state after;
* ``kind="decode"``: step i (i = 0 .. 9), state before, bits read, symbol, state after.

Extras: the counts, entropies H(P), H(P, P') and H(P, P'') for the paper's suboptimal
P'' = (1/4, 1/2, 1/4), the final state and the bit stream. The paper prints the fourth
bit string as 01; the arithmetic (and this table) gives 10 (see ../shared/papers/README.md).

    python experiments/fig3_dtans.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig3_dtans"
NEEDS_GPU = False
FULL = dict(message="cbcbccbbba", K=8, L=16, suboptimal={"a": 2, "b": 4, "c": 2},
            decode_steps=None, seed=0)
#: --quick decodes the first three steps only (the figure shows them all)
QUICK = dict(decode_steps=3)


def config(quick: bool = False, **overrides) -> dict:
    """``seed`` is unused (the example is deterministic); ``decode_steps`` None: all."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def measure(cfg: dict) -> dict:
    from reference import tans as T
    msg, K, L = cfg["message"], int(cfg["K"]), int(cfg["L"])
    counts = T.count(msg)
    q = T.normalize(counts, K)
    table = T.Table.from_counts(counts, K)
    rows = [dict(kind="slot", slot=j, symbol=table.symbol[j], digit=table.digit[j],
                 base=table.base[j]) for j in range(table.K)]
    s = L
    for i in reversed(range(len(msg))):           # right to left, as the encoder runs
        s_new, bits = T.encode_step(s, msg[i], table, L)
        rows.append(dict(kind="encode", step=i, symbol=msg[i], state_before=s, bits=bits,
                         state_after=s_new))
        s = s_new
    final, stream = T.encode(msg, table, L)
    n_dec = len(msg) if cfg["decode_steps"] is None else min(int(cfg["decode_steps"]), len(msg))
    s, at = final, 0
    for i in range(n_dec):
        s_new, u, at_new = T.decode_step(s, stream, at, table, L)
        rows.append(dict(kind="decode", step=i, state_before=s, bits=stream[at:at_new], symbol=u,
                         slot=s % table.K, state_after=s_new))
        s, at = s_new, at_new
    decoded = "".join(T.decode(final, stream, table, len(msg), L))
    return dict(rows=rows, counts=counts, multiplicities=q, slots="".join(table.symbol),
                entropy=T.entropy(counts), cross_entropy=T.cross_entropy(counts, q, K),
                cross_entropy_suboptimal=T.cross_entropy(counts, cfg["suboptimal"], K),
                final_state=final, bits=stream, n_bits=len(stream), decoded=decoded,
                round_trip=decoded == msg)


def _cells(rows, keys):
    return [[str(r.get(k, "")) if r.get(k, "") != "" else "–" for k in keys] for r in rows]


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    rows = results["rows"]
    slots = [r for r in rows if r["kind"] == "slot"]
    enc = [r for r in rows if r["kind"] == "encode"]
    dec = [r for r in rows if r["kind"] == "decode"]
    fig = plt.figure(figsize=(P.PAGE_WIDTH, 3.0))
    gs = fig.add_gridspec(2, 3, width_ratios=[4, 5, 6], height_ratios=[1, 0.22], wspace=0.12,
                          left=0.01, right=0.99, top=0.86, bottom=0.01, hspace=0.05)
    panels = [
        (gs[0, 0], "coding tables (K = %d)" % len(slots), ["slot", "symbol", "digit", "base"], slots),
        (gs[0, 1], "encoding, right to left", ["step", "symbol", "state_before", "bits", "state_after"], enc),
        (gs[0, 2], "decoding, left to right",
         ["step", "state_before", "slot", "symbol", "bits", "state_after"], dec),
    ]
    heads = {"state_before": "state", "state_after": "next", "step": "i", "symbol": "u"}
    for spec, title, keys, rs in panels:
        ax = fig.add_subplot(spec)
        ax.axis("off")
        ax.set_title(title)
        if rs:
            t = ax.table(cellText=_cells(rs, keys), colLabels=[heads.get(k, k) for k in keys],
                         loc="upper center", cellLoc="center")
            t.auto_set_font_size(False)
            t.set_fontsize(7)
            t.scale(0.95, 1.0)
    ax = fig.add_subplot(gs[1, :])
    ax.axis("off")
    cfg = results["config"]
    q = results["multiplicities"]
    text = (f"message u = {cfg['message']} (n = {len(cfg['message'])}), counts "
            f"{results['counts']}, L = {cfg['L']}\n"
            f"slots {results['slots']} (multiplicities {q});  "
            f"final state {results['final_state']}, {results['n_bits']} bits: "
            f"{results['bits']};  decodes back: {results['round_trip']}\n"
            f"H(P) = {results['entropy']:.3f} bits,  H(P, P') = {results['cross_entropy']:.3f} "
            f"bits,  H(P, P'') = {results['cross_entropy_suboptimal']:.3f} bits for P'' = "
            f"{cfg['suboptimal']} / {cfg['K']}")
    ax.text(0.0, 1.0, text, fontsize=6.5, va="top", family="monospace", linespacing=1.4)
    fig.suptitle("dtANS paper Fig. 3: tANS worked example (computed by reference/tans.py)")
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    for kind, cols in (("slot", [("slot", "slot", ""), ("symbol", "symbol", ""), ("digit", "digit", ""),
                                 ("base", "base", "")]),
                       ("encode", [("step", "i", ""), ("symbol", "u", ""), ("state_before", "state", ""),
                                   ("bits", "bits", ""), ("state_after", "next", "")])):
        P.print_table(results["rows"], cols, where=lambda r, k=kind: r["kind"] == k)
    print(f"H = {results['entropy']:.4f}, H' = {results['cross_entropy']:.4f}, "
          f"H'' = {results['cross_entropy_suboptimal']:.4f}; final state {results['final_state']}, "
          f"{results['n_bits']} bits")


def summary(results: dict) -> list[dict]:
    """One row of the example's headline numbers (for paper_repro)."""
    return [dict(entropy=results["entropy"], cross_entropy=results["cross_entropy"],
                 cross_entropy_suboptimal=results["cross_entropy_suboptimal"],
                 final_state=results["final_state"], n_bits=results["n_bits"])]


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
