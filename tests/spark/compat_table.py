"""The compatibility table of docs/SPARK.md, from the ``spark-compat:`` lines that
tests/spark/quickstart.py printed in scripts/test.sh step 4b (one run per Spark
line): renders the table and checks the doc's copy (between its
``spark-compat`` markers) is the same, so the table says what the tests that
ran found. ``--write`` puts the rendered table in the doc instead.

    python tests/spark/compat_table.py .spark-compat.txt docs/SPARK.md [--write]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

BEGIN, END = "<!-- spark-compat: begin -->", "<!-- spark-compat: end -->"
LINE = re.compile(r"^spark-compat: pyspark=(\S+) (.*)$")


def cells(lines: list[str]) -> dict[str, dict[str, str]]:
    """Per PySpark version, its cells: ``scala``, ``jar`` and one per
    ``engine=E mode=M`` checked (its ``result``)."""
    found: dict[str, dict[str, str]] = {}
    for line in lines:
        m = LINE.match(line.strip())
        if m is None:
            continue
        version, rest = m.groups()
        fields = dict(kv.split("=", 1) for kv in re.findall(r"\S+=\S*\([^)]*\)|\S+=\S+", rest))
        row = found.setdefault(version, {})
        if "scala" in fields:
            row.update(scala=fields["scala"], jar=fields["jar"])
        else:
            row[f"engine={fields['engine']} mode={fields['mode']}"] = fields["result"]
    return found


def render(found: dict[str, dict[str, str]]) -> str:
    """The markdown table, newest PySpark first."""

    def cell(row: dict[str, str], engine: str) -> str:
        def got(mode: str) -> str:
            return row.get(f"{engine} mode={mode}", "not run")

        parts = [f"batch {got('batch')}", f"streaming with a restart {got('streaming(restart)')}"]
        prefix = f"{engine} mode=streaming(state from "
        parts += [f"state from {key[len(prefix):-1]} {result}"
                  for key, result in sorted(row.items()) if key.startswith(prefix)]
        return ", ".join(parts)

    out = ["| PySpark | Scala | JVM engine jar (`laminardb/jars/`) | Python engine | JVM engine |",
           "|---|---|---|---|---|"]
    for version in sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True):
        row = found[version]
        out.append(f"| {version} | {row.get('scala', '?')} | `{row.get('jar', '?')}` | "
                   f"{cell(row, 'engine=python')} | {cell(row, 'engine=jvm')} |")
    return "\n".join(out) + "\n"


def main() -> int:
    """Check (or write) the doc's table; non-zero when it differs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("compat", type=Path, help="the spark-compat: lines of step 4b")
    ap.add_argument("doc", type=Path, help="docs/SPARK.md")
    ap.add_argument("--write", action="store_true", help="put the table in the doc")
    args = ap.parse_args()
    table = render(cells(args.compat.read_text().splitlines()))
    doc = args.doc.read_text()
    start, end = doc.index(BEGIN) + len(BEGIN) + 1, doc.index(END)
    if doc[start:end] == table:
        print(f"compat_table: {args.doc} agrees with the runs")
        return 0
    if args.write:
        args.doc.write_text(doc[:start] + table + doc[end:])
        print(f"compat_table: {args.doc} rewritten")
        return 0
    print(f"compat_table: {args.doc}'s table is not what the runs found; theirs:\n{table}",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
