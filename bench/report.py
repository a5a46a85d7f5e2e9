#!/usr/bin/env python3
"""Turn one bench/run.sh run into the current tables of docs/BENCHMARKS.md.

    python3 bench/report.py RESULTS_DIR [--docs DOCS_DIR]

RESULTS_DIR is run.sh's raw output (build-bench/results: one <key>.txt per benchmark,
commands.txt with the exact command of each, meta.txt). Prints the tables; with
--docs it writes DOCS_DIR/benchmarks/results.md (the tables), DOCS_DIR/benchmarks/
ratios.csv (what bench/plot.py draws) and copies the tables into DOCS_DIR/BENCHMARKS.md
between its BEGIN / END markers. Standard library only (no runtime dependency).
A benchmark that ran but printed no line for a row (e.g. a strategy or mode the run
skipped) leaves "not in this run"; one that failed (run.sh's failed.txt) leaves
"failed", and the exit status is then 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BEGIN = "<!-- BEGIN bench/run.sh results (generated: edit bench/report.py, not this) -->"
END = "<!-- END bench/run.sh results -->"
HEADER = "| benchmark | figure | ratio | target | command |"
RULE = "|---|---:|---:|---|---|"
NUM = r"([0-9][0-9.]*)"


@dataclass
class Row:
    """One line of a table: where its figure comes from and what it is compared to."""

    name: str
    key: str  # raw file <key>.txt and command of commands.txt
    pattern: str  # regex; group 1 is the figure (more groups: joined with " / ")
    unit: str
    limit: str | None = None  # "W1b", "W2b", "W3b": ratio = figure / limit
    target: str = "—"
    ratio_group: int | None = None  # or the ratio is this group of the match


@dataclass
class Table:
    """One workload: a heading, a sentence saying what is measured, its rows."""

    title: str
    what: str
    rows: list[Row]


def rate(name: str, key: str, tag: str, limit: str | None = None, target: str = "—") -> Row:
    """A row whose figure is the "X M rows/s" of line "RESULT <tag> ..." of `key`."""
    return Row(name, key, rf"^RESULT {tag} .*? {NUM} M rows/s", "M rows/s", limit, target)


def pair(name: str, key: str, pattern: str, unit: str, target: str = "—") -> Row:
    """A row of two figures (p50 / p99, whole / stall, ...) and no ratio."""
    return Row(name, key, pattern, unit, None, target)


def versus(name: str, key: str, pattern: str, unit: str, target: str) -> Row:
    """A row whose pattern's last group is the ratio (Spark, scaling)."""
    return Row(name, key, pattern, unit, None, target, ratio_group=pattern.count("(["))


def vwap_rows(w: str, target: str) -> list[Row]:
    """bench_vwap's rows of workload `w` (W1, W2): inline, threaded, paced latency."""
    return [
        rate(f"{w} inline", "vwap", f"{w} +inline", f"{w}b", target),
        rate(f"{w} threaded", "vwap", f"{w} +threaded", f"{w}b", target),
        pair(
            f"{w} paced p50 / p99 latency",
            "vwap",
            rf"^LATENCY {w} +paced\S* .*?p50={NUM} p99={NUM}",
            "µs",
        ),
    ]


SCALING = rf"^SCALING W1 \S+ cores=\S+ +{NUM} M rows/s vs {NUM} M rows/s +ratio {NUM}"
SPARK = r"^RESULT spark-{kind} W1 .*?{what}_s=" + NUM + r" .*?ratio=" + NUM
CKPT = r"^RESULT {tag} groups=\d+ total=" + NUM + r" s stall=" + NUM + r" s"
LAT = r"^RESULT {prog} {s} rate=\S+ .*?p50=" + NUM + r" us p99=" + NUM + r" us"
# bench_kafka: the bare loop's line, then the figure's (groups: bare, ours, ratio).
KAFKA = (
    r"^RESULT kafka_{f}_bare "
    + NUM
    + r" M rows/s$(?s:.*?)^RESULT kafka_{f}_{tag} "
    + NUM
    + r" M rows/s ratio "
    + NUM
)
WIDE = (
    r"^WIDE n={n} ordered .*?cpu +{num} ms/push(?:.*\n)*?"
    r"WIDE n={n} reversed .*?cpu +{num} ms/push"
)

TABLES = [
    Table(
        "Limits (the speed of light)",
        "Hand-written single-threaded loops over the same data, no engine "
        "(`../shared/bench/`); every ratio below divides by the faster of the two "
        "limit_vwap runs that bracket the engine runs.",
        [
            rate("W1a (symbol as dictionary id)", "limit_vwap", "W1a"),
            rate("W1b (symbol as utf8, hashed per row)", "limit_vwap", "W1b"),
            rate("W2a (filter + project, id)", "limit_vwap", "W2a"),
            rate("W2b (filter + project, utf8)", "limit_vwap", "W2b"),
            rate("W1b, after the engine runs", "limit_vwap_after", "W1b"),
            rate("W2b, after the engine runs", "limit_vwap_after", "W2b"),
            rate("W3a (ASOF join, id)", "limit_asof", "W3a"),
            rate("W3b (ASOF join, utf8)", "limit_asof", "W3b"),
        ],
    ),
    Table(
        "W1: tumbling VWAP (C)",
        "`bench_vwap`: W1 end to end through `laminar.h`, 8,192-row batches; inline = "
        "push, run_until_idle, drain on one thread; threaded = `laminar_start` and a "
        "consumer thread; paced = threaded at 50% of the threaded rate (latency from the "
        "push that closed a window to the result, µs).",
        vwap_rows("W1", "≥ 0.5×"),
    ),
    Table(
        "W2: filter and project (C)",
        "`bench_vwap`: `SELECT symbol, price * volume AS notional WHERE volume > 500`, "
        "modes as W1.",
        vwap_rows("W2", "≥ 0.4×"),
    ),
    Table(
        "W3: ASOF join of trades with quotes (C)",
        "`bench_asof`: `FROM trades t ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON "
        "t.symbol = q.symbol` over limit_asof's feed (10^7 events, 1,000 symbols, 75% "
        "quotes), blocks of 8,192 events pushed as a quotes and a trades batch, inline "
        "(push, run_until_idle, drain on one thread); cpu = the same run's rate over "
        "its CPU time (a loaded machine stretches the wall time, not this); p50 / p99 "
        "of a block's time; Python = `bench/bench_asof.py`, the same blocks as pyarrow "
        "batches, with pandas `merge_asof` and DuckDB's ASOF JOIN on the same tables.",
        [
            rate("W3 inline", "asof", "W3 asof inline", "W3b", "≥ 0.35×"),
            # No ratio: W3b is a wall-clock figure.
            Row(
                "W3 inline, CPU time",
                "asof",
                rf"^CPU W3 asof inline .*? {NUM} M rows/s",
                "M rows/s",
            ),
            pair(
                "W3 block p50 / p99", "asof", rf"^RESULT W3 asof .*?p50 {NUM} us p99 {NUM} us", "µs"
            ),
            rate("W3 Python (laminardb, inline)", "python_asof", "python-W3", "W3b", "≥ 0.3×"),
            rate("W3 pandas merge_asof", "python_asof", "pandas-merge_asof", "W3b"),
            rate("W3 DuckDB ASOF JOIN, 1 thread", "python_asof", "duckdb-1thread", "W3b"),
            rate("W3 DuckDB ASOF JOIN, 2 threads", "python_asof", "duckdb-2threads", "W3b"),
        ],
    ),
    Table(
        "W3i: interval join of trades with quotes within ±50 ms (C)",
        "`bench_asof --interval 50`: W3's data and blocks through `FROM trades t JOIN "
        "quotes q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts - INTERVAL '50' "
        "MILLISECOND AND t.ts + INTERVAL '50' MILLISECOND`, inline; cpu as W3; "
        "Python = `bench/bench_asof.py --interval 50` on 10^6 events (DuckDB's join of "
        "the same query takes minutes at 10^7), ratios to the same W3b.",
        [
            rate("W3i inline", "interval", "W3i interval inline", "W3b", "≥ 0.25×"),
            Row(
                "W3i inline, CPU time",
                "interval",
                rf"^CPU W3i interval inline .*? {NUM} M rows/s",
                "M rows/s",
            ),
            rate("W3i Python (laminardb, inline)", "python_interval", "python-W3i", "W3b"),
            rate("W3i DuckDB JOIN, 1 thread", "python_interval", "duckdb-1thread", "W3b"),
            rate("W3i DuckDB JOIN, 2 threads", "python_interval", "duckdb-2threads", "W3b"),
        ],
    ),
    Table(
        "Lookup join of W1's events with a 10^6-row table",
        "`bench_lookup`: W1's events `JOIN ref r ON r.k = t.ts % 1000000` with `ref (k "
        "BIGINT PRIMARY KEY, tier VARCHAR, w DOUBLE)` of 10^6 rows (loaded untimed; every "
        "event matches, checked), 8,192-row batches, inline (push, run_until_idle, drain "
        "on one thread); cpu = the same run's rate over its CPU time; Python = "
        "`bench/bench_lookup.py`, the same through the `laminardb` package.",
        [
            rate("lookup inline", "lookup", "lookup inline", "W1b", "≥ 0.4×"),
            Row(
                "lookup inline, CPU time",
                "lookup",
                rf"^CPU lookup inline .*? {NUM} M rows/s",
                "M rows/s",
            ),
            Row(
                "lookup Python (laminardb, inline)",
                "python_lookup",
                rf"^RESULT lookup_join .*?rows_per_s={NUM}M",
                "M rows/s",
                "W1b",
            ),
        ],
    ),
    Table(
        "Window kinds and emit modes (C)",
        "`bench_windows`: W1's data and aggregates, inline; hop = 1 s windows every "
        "100 ms, session = 5 s gap over bursty symbols, changes = W1 with EMIT CHANGES, "
        "running = GROUP BY symbol EMIT CHANGES (no window), approx_percentile / median = "
        "W1 with approx_percentile(price, 0.99) / median(price) too.",
        [
            rate(f"W1 {v}", "windows", f"{v} +inline", "W1b", t)
            for v, t in [
                ("hop", "≥ 0.15×"),
                ("session", "≥ 0.2×"),
                ("changes", "≥ 0.15×"),
                ("running", "—"),
                ("session_changes", "≥ 0.15×"),
                ("approx_percentile", "≥ 0.25×"),
                ("median", "—"),
            ]
        ],
    ),
    Table(
        "Thread-per-core scaling (C)",
        "`bench_vwap --cores 1,N`: W1 threaded with N reactors and with 1 (M rows/s; the "
        "ratio column is N over 1); queued = every batch queued before start (the "
        "reactors alone).",
        [
            versus("W1 threaded, cores N / 1", "cores", SCALING, "M rows/s", "≥ 1.7×"),
            versus("W1 queued, cores N / 1", "cores_queued", SCALING, "M rows/s", "≥ 1.7×"),
        ],
    ),
    Table(
        "Python",
        "`bench/bench_python.py`: W1 and W2 through the `laminardb` package, inline "
        "driver, pyarrow batches of 8,192 rows.",
        [
            rate("Python W1 inline", "python", "W1 python-inline", "W1b"),
            rate("Python W2 inline", "python", "W2 python-inline", "W2b"),
        ],
    ),
    Table(
        "User-defined functions (C, Python)",
        "`bench_vwap --udf` / `--udaf`: W1 inline with the price through a C scalar function "
        "`fx` (x * 1.0) in its SUM and MAX / with `SUM(price * volume)` as a C aggregate "
        "`pvsum`; `bench/bench_udf.py`: W1 through the `laminardb` package, inline, with "
        "`SUM(fx(price) * volume)`, `fx` a Python `arrow` function (pyarrow.compute, times "
        "a constant) or a `row` one (a tenth of the events), the cost of one call of an "
        "empty arrow function (per 8,192-row chunk, over W1 without one; wall and the "
        "thread's CPU time), and DuckDB's "
        "arrow UDF over the same data as one table (`GROUP BY symbol, ts // 1000`).",
        [
            rate("C scalar function, W1 inline", "udf", "W1 +inline", "W1b", "≥ 0.45×"),
            rate("C aggregate function, W1 inline", "udaf", "W1 +inline", "W1b"),
            rate("Python W1 without a function", "python_udf", "W1", "W1b"),
            rate("Python arrow function", "python_udf", "W1-fx", "W1b", "≥ 0.3×"),
            pair(
                "Python empty arrow function, per call: wall / CPU",
                "python_udf",
                r"^RESULT W1-empty .*? overhead=\S+ ns/row \((-?[0-9.]+) us/chunk\) "
                r"cpu_overhead=\S+ ns/row \((-?[0-9.]+) us/chunk\)",
                "µs",
            ),
            rate("Python row function", "python_udf", "W1-row", "W1b"),
            rate("DuckDB arrow UDF (peer)", "python_udf", "duckdb-fx", "W1b"),
        ],
    ),
    Table(
        "Java",
        "`W1Bench` (bindings/java): W1 through the JNI binding, Arrow Java batches "
        "exported zero-copy, after three untimed warm-up runs.",
        [
            rate("Java W1 inline", "java", "JW1 +inline", "W1b", "≥ 0.4×"),
            rate("Java W1 threaded", "java", "JW1 +threaded", "W1b"),
        ],
    ),
    Table(
        "Spark",
        "`bench/bench_spark.py`: W1 on `local[2]`, 4 partitions, into the `noop` sink: "
        "the adapter (two-phase, Python engine; JVM engine) against Spark's own "
        "`groupBy(window(...))`, seconds; the ratio is Spark's time over the adapter's. "
        "Both Spark lines in the same run: the newest PySpark 4 (`.venv`) and 3.5 "
        "(`.venv-spark35`).",
        [
            versus(f"{line}: {kind}, {name}", key, SPARK.format(kind=k, what=w), "s", target)
            for line, key in (("PySpark 4", "spark"), ("PySpark 3.5", "spark35"))
            for kind, s in (("batch", "batch"), ("streaming", "stream"))
            # Issue 22: the JVM engine ≥ 2×, the Python engine's ratio beside it.
            for name, k, w, target in (
                ("Python engine", s, "adapter", "—"),
                ("JVM engine", f"{s}-jvm", "jvm", "≥ 2×"),
            )
        ],
    ),
    Table(
        "Kafka (C, Python)",
        "`bench_kafka`: W1 trades in a 4-partition topic of a local broker "
        "(`tests/kafka/broker.sh`), JSON and CSV: the bare librdkafka consume loop, our "
        "source's consume + decode + push, and end to end (W1 into an exactly-once Kafka "
        "sink, its last checkpoint included); `bench/bench_kafka.py` (N ≤ 10^6, JSON): the "
        "confluent-kafka loop + `json.loads` + `insert` most Python users write, and our "
        "source from Python. Ratio: ours (the Python client's) over the bare loop of the same "
        "run.",
        [
            versus(
                f"{f} {name}: bare / ours",
                "kafka",
                KAFKA.format(f=f.lower(), tag=tag),
                "M rows/s",
                t,
            )
            for f in ("JSON", "CSV")
            for name, tag, t in (
                ("source, consume + decode", "source", "≥ 0.5×"),
                ("end to end, W1 + EO sink", "e2e", "≥ 0.3×"),
            )
        ]
        + [
            Row(
                "Python: confluent-kafka + insert / our source",
                "kafka_python",
                rf"^RESULT kafka_python {NUM} M rows/s ratio {NUM}$(?s:.*?)"
                rf"^RESULT kafka_py_source {NUM} M rows/s",
                "M rows/s",
                ratio_group=2,
            )
        ],
    ),
    Table(
        "Durability overhead (C)",
        "`bench_vwap --durable`: W1 inline into a database on disk (/tmp): off, a WAL "
        "written by the background writer (async) and one synced per push (sync), with "
        "checkpoints.",
        [
            rate(f"W1 inline, {m}", f"durable_{m}", "W1 +inline", "W1b", t)
            for m, t in [("off", "—"), ("async", "—"), ("sync", "≥ 1 M rows/s")]
        ],
    ),
    Table(
        "WAL alone (C)",
        "`bench_wal`: T threads encode an 8,192-row W1 batch each, append and commit "
        "(sync: fdatasync, group commit; async: the write), with pwrite / io_uring.",
        [
            pair(
                f"{m}, {t} thread{'s' if t > 1 else ''}: pwrite / uring",
                "wal",
                # (either order in the output; the uring line may be missing)
                rf"\A(?=(?s:.*?)^RESULT wal_{m}_pwrite_t{t} {NUM} M rows/s)"
                rf"(?=(?:(?s:.*?)^RESULT wal_{m}_uring_t{t} {NUM} M rows/s)?)",
                "M rows/s",
                "≥ 1 M rows/s" if m == "sync" else "—",
            )
            for m in ("sync", "async")
            for t in (1, 4)
        ],
    ),
    Table(
        "Checkpoints (C)",
        "`bench_checkpoint`: open windows, sessions and a view of N groups, one "
        "checkpoint: the whole checkpoint and its stall (graph stopped), seconds.",
        [
            pair(f"{what}: whole / stall", "checkpoint", CKPT.format(tag=tag), "s")
            for what, tag in [
                ("tumbling window", "checkpoint"),
                ("sessions", "checkpoint_session"),
                ("materialized view", "checkpoint_view"),
            ]
        ]
        + [
            Row(
                "sync WAL + file sink: stall median",
                "checkpoint",
                rf"^RESULT checkpoint_stall .*?median={NUM} us",
                "µs",
            )
        ],
    ),
    Table(
        "Recovery (Python)",
        "`bench/bench_recovery.py`: N groups checkpointed, N more rows in the async WAL, "
        "close, then `laminardb.open` timed (checkpoint restore + WAL replay).",
        [
            pair(
                "take the checkpoint / recover",
                "recovery",
                rf"^RESULT recovery .*?take_checkpoint={NUM} s recovery={NUM} s",
                "s",
                "< 5 s per GB",
            )
        ],
    ),
    Table(
        "Streaming latency, queues",
        "`bench_latency` / `bench/bench_latency.py`: one-row pushes at 10,000 events/s, "
        "push to subscription, p50 / p99 µs (no coordinated omission); `bench_mpsc`, "
        "`bench_ring`: the source queue and the subscriber ring alone, M items/s.",
        [
            pair(f"C, {s}", "latency", LAT.format(prog="latency", s=re.escape(s)), "µs", t)
            for s, t in [("spin", "p99 < 5 µs"), ("park", "—"), ("spin_yield(100)", "—")]
        ]
        + [
            pair(f"Python, {s}", "py_latency", LAT.format(prog="py_latency", s=s), "µs", t)
            for s, t in [("spin", "p99 < 30 µs"), ("park", "—")]
        ]
        + [
            Row(f"MPSC {w}", "mpsc", rf"^RESULT {w} median {NUM} M items/s", "M items/s")
            for w in ("mpsc_2p_single", "mpsc_2p_runs32", "broadcast_3_each")
        ]
        + [
            Row(f"SPSC ring, {w}", "ring", rf"^{w}\s+median\s+{NUM}", "M items/s", None, "≥ 50 M")
            for w in ("single push/pop", "batch 64")
        ],
    ),
    Table(
        "Wide pushes (C)",
        "`bench_wide_push`: a one-row push into a source of N BIGINT columns, thread "
        "CPU time per push (ms), columns in order / reversed.",
        [
            pair(
                f"{n:,} columns, in order / reversed", "wide_push", WIDE.format(n=n, num=NUM), "ms"
            )
            for n in (1000, 4000, 16000)
        ],
    ),
]


def read(results: Path, key: str) -> str | None:
    """The raw output of benchmark `key`, or None when it was not run."""
    path = results / f"{key}.txt"
    return path.read_text(errors="replace") if path.exists() else None


def parse_kv(path: Path, sep: str) -> dict[str, str]:
    """Lines `key<sep>value` of a file (missing file: empty)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if sep in line:
            key, value = line.split(sep, 1)
            out.setdefault(key.strip(), value.strip())
    return out


def limits(results: Path) -> dict[str, float]:
    """W1b, W2b, W3b: the faster of the limit runs (M rows/s)."""
    out: dict[str, float] = {}
    for key in ("limit_vwap", "limit_vwap_after", "limit_asof"):
        text = read(results, key) or ""
        for tag in ("W1b", "W2b", "W3b"):
            m = re.search(rf"^RESULT {tag} .* {NUM} M rows/s", text, re.M)
            if m:
                out[tag] = max(out.get(tag, 0.0), float(m.group(1)))
    return out


def render(results: Path) -> tuple[str, list[tuple[str, str, float, str]], bool]:
    """The markdown of every table, the (table, row, ratio, target) list, and ok."""
    meta = parse_kv(results / "meta.txt", "=")
    commands = parse_kv(results / "commands.txt", "\t")
    failed = parse_kv(results / "failed.txt", "\t")
    lim = limits(results)
    ok = not failed
    quick = meta.get("quick") == "1"
    lines = [
        f"Run: {meta.get('date', '?')}, commit {meta.get('commit', '?')}, "
        f"`bench/run.sh{' --quick' if quick else ''}`: N = {int(meta.get('n', '0')):,} events, "
        f"median of {meta.get('reps', '?')}; {meta.get('machine', '?')}; load average "
        f"{meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after"
        + (
            " (quick sizes: the machine was shared and loaded; absolute figures are low, "
            "the ratios are the figures to read)."
            if quick
            else "."
        ),
        "Limits of this run (the faster of two): "
        + ", ".join(f"{k} {v:g} M rows/s" for k, v in sorted(lim.items()))
        + ".",
    ]
    ratios: list[tuple[str, str, float, str]] = []
    for table in TABLES:
        # Tight: GFM splits the sentence off as a paragraph before the table's header.
        lines += ["", f"### {table.title}", table.what, HEADER, RULE]
        for row in table.rows:
            text = read(results, row.key)
            command = commands.get(row.key)
            figure, ratio = "not run", "—"
            if text is not None:
                m = re.search(row.pattern, text, re.M)
                if m is None:
                    figure = "failed" if row.key in failed else "not in this run"
                else:
                    # (an optional group that did not match: "—")
                    values = [g or "—" for i, g in enumerate(m.groups(), 1) if i != row.ratio_group]
                    figure = " / ".join(values) + f" {row.unit}"
                    r = None
                    if row.ratio_group is not None:
                        r = float(m.group(row.ratio_group))
                        ratio = f"{r:.2f}×"
                    elif row.limit and lim.get(row.limit):
                        r = float(m.group(1)) / lim[row.limit]
                        ratio = f"{r:.3f}× {row.limit}"
                    if r is not None:
                        ratios.append((table.title, row.name, r, row.target))
            cmd = f"`{command}`" if command else "—"
            lines.append(f"| {row.name} | {figure} | {ratio} | {row.target} | {cmd} |")
    return "\n".join(lines) + "\n", ratios, ok


def splice(doc: Path, block: str) -> None:
    """Put `block` between the markers of `doc` (which must hold both, in order)."""
    text = doc.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"report.py: {doc} lacks the markers {BEGIN!r} ... {END!r}")
    doc.write_text(text[: start + len(BEGIN)] + "\n" + block + text[end:])


def main(argv: list[str] | None = None, out: Callable[[str], object] = print) -> int:
    """Command line entry point; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--docs", type=Path)
    args = ap.parse_args(argv)
    block, ratios, ok = render(args.results)
    out(block)
    if args.docs is not None:
        (args.docs / "benchmarks").mkdir(exist_ok=True)
        (args.docs / "benchmarks" / "results.md").write_text(block)
        csv = ["table,benchmark,ratio,target"]
        csv += [f'"{t}","{n}",{r:.4f},"{g}"' for t, n, r, g in ratios]
        (args.docs / "benchmarks" / "ratios.csv").write_text("\n".join(csv) + "\n")
        splice(args.docs / "BENCHMARKS.md", block)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
