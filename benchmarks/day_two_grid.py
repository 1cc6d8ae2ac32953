"""Benchmark summary (not a test): every churn chain of a lakehouse against day two's targets.

Reads `overlay_changes` and `overlay_runs` without Spark (the grid may still be running: complete
days only) and prints one row per chain with `benchmarks/day_two.py`'s figures: links changed a
day incremental / fresh (mean), the largest TcoSuppR gap, the rebuilds, the engine-time ratio over
the days designed incrementally and over all days, and the days above the degree budget.

Usage:
  .venv/bin/python benchmarks/day_two_grid.py --lakehouse DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.day_two import chain_figures  # noqa: E402
from benchmarks.design_greedy import print_markdown, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    args = parser.parse_args()
    chains = sorted(set(table(args.lakehouse, "overlay_changes").instance))
    rows = []
    for chain in chains:
        figures = chain_figures(args.lakehouse, chain)
        rows.append(
            {
                "chain": chain,
                "days": len(figures["days"]),
                "changed inc / fresh (mean)": f"{figures['changes_ratio']:.3f}",
                "largest TcoSuppR gap": f"{figures['largest_gap']:.4f}",
                "rebuilds": figures["rebuilds"],
                "engine inc / fresh (incremental days)": f"{figures['engine_ratio']:.3f}",
                "engine, all days": f"{figures['engine_ratio_all_days']:.3f}",
                "days over budget": figures["days_over_budget"],
                "max degree": figures["max_degree"],
            }
        )
    print_markdown(rows)


if __name__ == "__main__":
    main()
