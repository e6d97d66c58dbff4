"""Not a speed benchmark: the Monte Carlo table of docs/compare.md for ``preflab compare --sequential``.

At each true win rate (no ties), 20,000 (null) or 4,000 simulated runs look after every pair, up to six times
the fixed-n design's pairs (at least 1,000): the anytime-valid e-process (:mod:`judge.gate.sequential`) against the
exact sign test repeated after every pair, beside the fixed-n exact sign test at 80% power
(:func:`arena.simulation.power.exact_pairs_needed`). Monte Carlo standard errors in brackets.
Run: ``.venv/bin/python -m benchmarks.sim_sequential``; writes ``benchmarks/results/sim_sequential.md``.
"""

from __future__ import annotations

from arena.simulation.power import exact_pairs_needed
from benchmarks.common import write_table
from judge.gate.sequential import DEFAULT_PRIOR, simulate


def main() -> None:
    rows = []
    for p in (0.5, 0.55, 0.60, 0.70, 0.80):
        fixed = exact_pairs_needed(p)[0] if p != 0.5 else None
        n_max = max(1000, 6 * fixed) if fixed else 1000
        r = simulate(p, n_max, 20_000 if p == 0.5 else 4_000, alpha=0.05, seed=11)
        rows.append([f"{p:.2f}", n_max, f"{r['rejection_rate']:.4f} ({r['rejection_se']:.4f})",
                     f"{r['naive_rejection_rate']:.4f} ({r['naive_rejection_se']:.4f})",
                     f"{r['mean_pairs']:.1f} ({r['mean_pairs_se']:.1f})", f"{r['median_pairs']:.0f}",
                     f"{r['pairs_for_80pct']:.0f}", fixed or "—"])
    write_table("sim_sequential",
                f"sequential sign test, Beta({DEFAULT_PRIOR:g}, {DEFAULT_PRIOR:g}) mixture, alpha 0.05",
                ["true win rate", "look after every pair, up to", "e-process rejects (se)",
                 "naive repeated sign test rejects (se)", "mean pairs judged (se)", "median", "80% stopped by",
                 "fixed n, exact test, 80% power"], rows)


if __name__ == "__main__":
    main()
