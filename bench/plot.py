#!/usr/bin/env python3
"""Draw docs/benchmarks/ratios.png from the ratios bench/run.sh wrote.

    python bench/plot.py docs/benchmarks/ratios.csv docs/benchmarks/ratios.png

One horizontal bar per figure that has a ratio (to the limit loop of the same run, or
Spark's time over the adapter's, or N reactors over one), grouped by table, with the
target drawn as a tick where it is a ratio. Needs matplotlib (bench/requirements.txt).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def target_value(text: str) -> float | None:
    """The number of a ratio target such as ``≥ 0.5×``; None for other targets."""
    m = re.fullmatch(r"≥ ([0-9.]+)×", text.strip())
    return float(m.group(1)) if m else None


# Tables whose row names need the table's name beside them on the plot.
PREFIX = {"Thread-per-core": "scaling", "Spark": "Spark", "Durability": "durable"}


def label(table: str, benchmark: str) -> str:
    """The bar's label: the row's name, with a short table name where it needs one."""
    for start, short in PREFIX.items():
        if table.startswith(start):
            return f"{short}: {benchmark}"
    return benchmark


def main(argv: list[str]) -> int:
    """Read the CSV, write the PNG; see the module docstring."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with Path(argv[0]).open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"plot.py: {argv[0]} holds no ratio", file=sys.stderr)
        return 1
    labels = [label(r["table"], r["benchmark"]) for r in rows]
    values = [float(r["ratio"]) for r in rows]
    tables = list(dict.fromkeys(r["table"] for r in rows))
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(rows) + 1.4))
    ys = range(len(rows))[::-1]
    ax.barh(list(ys), values, color=[colors(tables.index(r["table"]) % 10) for r in rows])
    for y, r, v in zip(ys, rows, values):
        t = target_value(r["target"])
        if t is not None:
            ax.plot([t, t], [y - 0.4, y + 0.4], color="black", linewidth=2)
        ax.text(v, y, f" {v:.2f}", va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel(
        "ratio to the same run's limit loop (Spark: Spark's time / ours;"
        " scaling: N reactors / 1); black tick: target",
        fontsize=8,
    )
    ax.set_xlim(0, max(max(values), 2.0) * 1.12)
    ax.set_title("LaminarDB benchmarks (bench/run.sh)", fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
