"""``laminardb bench``: the reference workloads W1 and W2 driven from Python.

The data is the one of ``shared/bench/README.md`` (event ``i``: ``z =
splitmix64_mix((i + 1) * 0x9E3779B97F4A7C15)``, ``symbol = 'S%03d' % (z %
100)``, ``volume = 1 + (z >> 8) % 1000``, ``price = 100 + ((z >> 24) % 100000) /
1000``, ``ts = 1700000000000 + i``), generated with numpy (not timed) and pushed
as 8192-row ``pyarrow.RecordBatch`` objects with a plain ``pa.string()`` symbol
column. The driver is the inline one: every batch is pushed, then
``run_until_idle`` runs the operators in this thread and the subscription is
drained; after the last batch the watermark ``2**63 - 1`` closes the open
windows. The timed span covers exactly that loop; the median of ``--reps`` runs
is reported, as rows/s and ns/row, with the ratio to ``limit_vwap``'s W1b / W2b
when their figures (M rows/s, measured on the same machine in the same session)
are given.

W1 (1-second tumbling VWAP) must emit one row per (symbol, second) that holds a
trade: 999958 rows for 10 million events; W2 (filter and project) one row per
trade with ``volume > 500``. A run whose counts differ fails (exit status 1).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

import laminardb

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BATCH_ROWS",
    "TS0",
    "W1_ROWS_10M",
    "W1_SQL",
    "W2_SQL",
    "WORKLOADS",
    "BenchResult",
    "add_parser",
    "expected_rows",
    "main",
    "require_extra",
    "require_numpy",
    "run_bench",
    "splitmix64_mix",
    "symbol_array",
    "trade_batches",
    "trade_columns",
]

#: First event time of the reference data (epoch milliseconds).
TS0 = 1_700_000_000_000
#: Rows per pushed batch.
BATCH_ROWS = 8192
#: Symbols of the reference data (``S000`` .. ``S099``).
SYMBOLS = 100
#: Result rows of W1 over the first 10 million events (``limit_vwap`` agrees).
W1_ROWS_10M = 999_958
#: The watermark that closes every window.
FINAL_WATERMARK = 2**63 - 1

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

_SOURCE_SQL = (
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
)
#: W1: 1-second tumbling VWAP per symbol, watermark = max ts, zero lateness.
W1_SQL = _SOURCE_SQL + (
    " CREATE STREAM w1 AS SELECT window_start, symbol, "
    "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS trades, "
    "MAX(price) AS max_price, MIN(price) AS min_price FROM trades "
    "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
)
#: W2: filter and project.
W2_SQL = _SOURCE_SQL + (
    " CREATE STREAM w2 AS SELECT symbol, price * volume AS notional FROM trades WHERE volume > 500;"
)
#: Workload name -> (SQL, stream name).
WORKLOADS: dict[str, tuple[str, str]] = {"W1": (W1_SQL, "w1"), "W2": (W2_SQL, "w2")}

TRADES_SCHEMA = pa.schema(
    [
        pa.field("symbol", pa.string(), nullable=False),
        pa.field("price", pa.float64(), nullable=False),
        pa.field("volume", pa.int64(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
    ]
)


def require_extra(module: str) -> ModuleType:
    """Import a module of the ``demo`` extra (numpy, rich) on first use.

    ``laminardb`` itself needs neither: only ``laminardb demo`` and
    ``laminardb bench`` do, installed with ``pip install 'laminardb[demo]'``.

    Args:
        module: The module's name, ``"numpy"`` or ``"rich"`` (or a submodule).

    Returns:
        The module.

    Raises:
        ModuleNotFoundError: If it is missing, saying how to install it.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".")[0]
        raise ModuleNotFoundError(
            f"laminardb demo and bench need {top}, which laminardb itself does not: "
            "pip install 'laminardb[demo]'",
            name=top,
        ) from e


def require_numpy() -> ModuleType:
    """Import numpy on first use (:func:`require_extra`).

    Returns:
        The ``numpy`` module.

    Raises:
        ModuleNotFoundError: If numpy is missing, saying how to install it.
    """
    return require_extra("numpy")


def splitmix64_mix(z: np.ndarray) -> np.ndarray:
    """Apply the splitmix64 finalizer to every element (wrapping uint64 arithmetic).

    Args:
        z: A ``uint64`` array.

    Returns:
        A new ``uint64`` array.

    Example:
        >>> import numpy as np
        >>> golden = np.array([0x9E3779B97F4A7C15], dtype=np.uint64)
        >>> hex(int(splitmix64_mix(golden)[0]))  # splitmix64's first output for seed 0
        '0xe220a8397b1dcdaf'
    """
    np = require_numpy()
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def trade_columns(start: int, count: int, *, symbols: int = SYMBOLS) -> dict[str, np.ndarray]:
    """Generate events ``start .. start + count - 1`` of the reference data.

    Args:
        start: Index of the first event (0-based).
        count: Number of events.
        symbols: Number of distinct symbols (100 in the reference data).

    Returns:
        numpy columns ``symbol_id`` (int32), ``price`` (float64), ``volume``
        (int64), ``ts`` (int64, ``TS0 + i``) and ``z`` (the uint64 hash, for
        callers that derive more columns from it).
    """
    np = require_numpy()
    index = np.arange(start, start + count, dtype=np.uint64)
    z = splitmix64_mix((index + np.uint64(1)) * np.uint64(_GOLDEN))
    return {
        "symbol_id": (z % np.uint64(symbols)).astype(np.int32),
        "price": 100.0 + ((z >> np.uint64(24)) % np.uint64(100_000)).astype(np.float64) / 1000.0,
        "volume": (np.uint64(1) + (z >> np.uint64(8)) % np.uint64(1000)).astype(np.int64),
        "ts": index.astype(np.int64) + TS0,
        "z": z,
    }


def symbol_array(symbol_ids: np.ndarray, symbols: int = SYMBOLS) -> pa.Array:
    """Turn symbol ids into a plain ``pa.string()`` array of ``S000``-style names.

    Args:
        symbol_ids: int32 ids in ``[0, symbols)``.
        symbols: Number of distinct symbols.

    Returns:
        A ``pa.StringArray`` (not dictionary-encoded).
    """
    names = pa.array([f"S{k:03d}" for k in range(symbols)], type=pa.string())
    return names.take(pa.array(symbol_ids, type=pa.int32()))


def trade_batches(
    count: int, *, batch_rows: int = BATCH_ROWS, symbols: int = SYMBOLS
) -> tuple[list[pa.RecordBatch], dict[str, np.ndarray]]:
    """Generate ``count`` reference events as record batches.

    Args:
        count: Number of events.
        batch_rows: Rows per batch (the last one may be shorter).
        symbols: Number of distinct symbols.

    Returns:
        The batches (each with its own buffers, offset 0) and the numpy columns
        they were built from.
    """
    columns = trade_columns(0, count, symbols=symbols)
    names = pa.array([f"S{k:03d}" for k in range(symbols)], type=pa.string())
    batches = []
    for lo in range(0, count, batch_rows):
        hi = min(count, lo + batch_rows)
        batches.append(
            pa.record_batch(
                [
                    names.take(pa.array(columns["symbol_id"][lo:hi])),
                    pa.array(columns["price"][lo:hi]),
                    pa.array(columns["volume"][lo:hi]),
                    pa.array(columns["ts"][lo:hi]),
                ],
                schema=TRADES_SCHEMA,
            )
        )
    return batches, columns


def expected_rows(workload: str, columns: dict[str, np.ndarray]) -> int:
    """Compute with numpy how many rows a workload must emit over the data.

    Args:
        workload: ``"W1"`` or ``"W2"``.
        columns: The numpy columns of :func:`trade_columns`.

    Returns:
        W1: distinct (symbol, ``ts // 1000``) pairs; W2: events with volume > 500.
    """
    np = require_numpy()
    if workload == "W1":
        pairs = (columns["ts"] // 1000) * SYMBOLS + columns["symbol_id"]
        return int(np.unique(pairs).size)
    return int(np.count_nonzero(columns["volume"] > 500))


def _drain(subscription: laminardb.Subscription) -> int:
    """Take every batch queued on ``subscription`` now.

    Args:
        subscription: The subscription.

    Returns:
        The number of rows taken.
    """
    rows = 0
    while True:
        batch = subscription.poll(0)
        if batch is None:
            return rows
        rows += batch.num_rows


def run_once(workload: str, batches: Sequence[pa.RecordBatch]) -> tuple[float, int]:
    """Run one workload over the batches with the inline driver.

    Args:
        workload: ``"W1"`` or ``"W2"``.
        batches: The input.

    Returns:
        The seconds the push/run/drain loop took and the result rows.

    Raises:
        LaminarError: If the engine fails.
    """
    sql, stream = WORKLOADS[workload]
    with laminardb.open() as db:
        db.execute(sql)
        source = db.source("trades")
        subscription = db.subscribe(stream)
        rows = 0
        started = time.perf_counter()
        for batch in batches:
            source.push(batch)
            db.run_until_idle()
            rows += _drain(subscription)
        source.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        rows += _drain(subscription)
        elapsed = time.perf_counter() - started
    return elapsed, rows


@dataclass(frozen=True)
class BenchResult:
    """The outcome of one workload.

    Attributes:
        workload: ``"W1"`` or ``"W2"``.
        events: Input rows.
        reps: Runs measured.
        median_s: Median seconds of the runs.
        rows_out: Result rows (of the last run; every run must agree).
        expected_rows: Result rows the data calls for.
        limit_rows_per_s: The reference figure (rows/s), or None.
    """

    workload: str
    events: int
    reps: int
    median_s: float
    rows_out: int
    expected_rows: int
    limit_rows_per_s: float | None = None

    @property
    def rows_per_s(self) -> float:
        """Input rows per second (median run)."""
        return self.events / self.median_s if self.median_s > 0 else float("inf")

    @property
    def ns_per_row(self) -> float:
        """Nanoseconds per input row (median run)."""
        return self.median_s * 1e9 / self.events if self.events else 0.0

    @property
    def ratio(self) -> float | None:
        """``limit / ours``: how many times slower than the reference, or None."""
        if self.limit_rows_per_s is None:
            return None
        return self.limit_rows_per_s / self.rows_per_s

    @property
    def ok(self) -> bool:
        """Whether the result row count is the expected one."""
        return self.rows_out == self.expected_rows

    def line(self) -> str:
        """Render the result as one ``RESULT`` line (the format of ``bench_vwap``).

        Returns:
            The line.
        """
        text = (
            f"RESULT {self.workload} python-inline N={self.events} reps={self.reps} "
            f"median {self.median_s:.4f} s  {self.rows_per_s / 1e6:8.2f} M rows/s  "
            f"{self.ns_per_row:7.1f} ns/row  ({self.rows_out} rows out)"
        )
        limit = self.limit_rows_per_s
        if limit is not None:
            reference = "W1b" if self.workload == "W1" else "W2b"
            ratio = limit / self.rows_per_s
            text += f"  limit {reference} {limit / 1e6:.1f} M rows/s  ratio {ratio:.1f}x"
        if not self.ok:
            text += f"  CHECK FAILED: expected {self.expected_rows} rows"
        return text


def run_bench(
    events: int = 10_000_000,
    *,
    reps: int = 3,
    workloads: Sequence[str] = ("W1", "W2"),
    batch_rows: int = BATCH_ROWS,
    limits: dict[str, float] | None = None,
    echo: Callable[[str], None] | None = None,
) -> list[BenchResult]:
    """Generate the data and measure each workload ``reps`` times.

    Args:
        events: Input rows.
        reps: Runs per workload; the median is reported.
        workloads: Names out of :data:`WORKLOADS`.
        batch_rows: Rows per pushed batch.
        limits: ``{"W1": rows/s, "W2": rows/s}`` of ``limit_vwap`` (W1b, W2b)
            for the ratios; missing entries print no ratio.
        echo: Called with progress and result lines; None prints nothing.

    Returns:
        One :class:`BenchResult` per workload.

    Raises:
        ValueError: If ``events``, ``reps`` or ``batch_rows`` is not positive,
            or a workload is unknown.
        LaminarError: If the engine fails.

    Example:
        >>> [r.ok for r in run_bench(20_000, reps=1)]
        [True, True]
    """
    if events <= 0 or reps <= 0 or batch_rows <= 0:
        raise ValueError("events, reps and batch_rows must be positive")
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    say = echo if echo is not None else (lambda _line: None)
    limits = limits or {}
    started = time.perf_counter()
    batches, columns = trade_batches(events, batch_rows=batch_rows)
    say(
        f"generated {events} events in {len(batches)} batches of {batch_rows} rows "
        f"({time.perf_counter() - started:.1f} s, not timed)"
    )
    results = []
    for workload in workloads:
        expected = expected_rows(workload, columns)
        if workload == "W1" and events == 10_000_000 and expected != W1_ROWS_10M:
            raise AssertionError(f"generator broken: W1 expects {expected} rows, not 999958")
        times = []
        rows_out = 0
        for rep in range(reps):
            elapsed, rows_out = run_once(workload, batches)
            times.append(elapsed)
            say(f"  {workload} run {rep + 1}/{reps}: {elapsed:.4f} s, {rows_out} rows out")
            if rows_out != expected:
                break
        result = BenchResult(
            workload=workload,
            events=events,
            reps=len(times),
            median_s=statistics.median(times),
            rows_out=rows_out,
            expected_rows=expected,
            limit_rows_per_s=limits.get(workload),
        )
        say(result.line())
        results.append(result)
    return results


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``bench`` subcommand on the CLI's subparsers.

    Args:
        commands: The object ``ArgumentParser.add_subparsers`` returned.
    """
    parser = commands.add_parser(
        "bench",
        help="measure W1 (tumbling VWAP) and W2 (filter+project) from Python",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    configure_parser(parser)
    parser.set_defaults(handler=run_command)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser``.

    Args:
        parser: The parser of the subcommand or of ``bench/bench_python.py``.
    """
    parser.add_argument(
        "-n", "--events", type=_count, default=10_000_000, help="input rows (default 1e7)"
    )
    parser.add_argument("--reps", type=int, default=3, help="runs per workload (median)")
    parser.add_argument(
        "--workload",
        choices=sorted(WORKLOADS),
        action="append",
        help="run only this workload (repeatable; default: all)",
    )
    parser.add_argument(
        "--batch-rows", type=int, default=BATCH_ROWS, help="rows per pushed batch (8192)"
    )
    parser.add_argument(
        "--limit-w1b",
        type=float,
        metavar="MROWS",
        help="limit_vwap's W1b figure in M rows/s (prints the ratio)",
    )
    parser.add_argument(
        "--limit-w2b",
        type=float,
        metavar="MROWS",
        help="limit_vwap's W2b figure in M rows/s (prints the ratio)",
    )


def _count(text: str) -> int:
    """Parse a row count; accepts ``10000000``, ``1e7`` and ``10_000_000``.

    Args:
        text: The argument.

    Returns:
        The count.

    Raises:
        argparse.ArgumentTypeError: If it is not a positive whole number.
    """
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(value)


def run_command(args: argparse.Namespace) -> int:
    """Run the benchmark as parsed from the command line.

    Args:
        args: The parsed options of :func:`configure_parser`.

    Returns:
        0 if every result count checked out, 1 otherwise (or without numpy).
    """
    limits = {}
    if args.limit_w1b is not None:
        limits["W1"] = args.limit_w1b * 1e6
    if args.limit_w2b is not None:
        limits["W2"] = args.limit_w2b * 1e6
    print(f"laminardb {laminardb.__version__}: inline driver, {args.batch_rows}-row batches")
    try:
        results = run_bench(
            args.events,
            reps=args.reps,
            workloads=args.workload or ("W1", "W2"),
            batch_rows=args.batch_rows,
            limits=limits,
            echo=lambda line: print(line, flush=True),
        )
    except ModuleNotFoundError as e:
        print(f"laminardb bench: {e}", file=sys.stderr)
        return 1
    return 0 if all(result.ok for result in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bench`` as a program (``bench/bench_python.py``).

    Args:
        argv: Arguments without the program name; None reads ``sys.argv``.

    Returns:
        The exit status: 0 on success, 1 on a failed check or an engine error.
    """
    parser = argparse.ArgumentParser(prog="bench_python", description=__doc__)
    configure_parser(parser)
    args = parser.parse_args(argv)
    try:
        return run_command(args)
    except laminardb.LaminarError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
