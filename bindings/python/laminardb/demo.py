"""``laminardb demo``: live market data through two continuous SQL queries.

Synthetic trades for ``--symbols`` symbols (the value distributions of the
reference benchmark data, ``shared/bench/README.md``) are pushed at ``--rate``
events per wall-clock second into an in-memory database running its reactor
thread (``Connection.start``). Event time is simulated: it starts at the wall
clock and runs ``--speedup`` times faster than it, with up to ``--jitter`` ms of
disorder (less than the source's watermark delay, so no row is late), so
1-second windows close several times per second of the run. Two streams read
the trades:

* ``vwap``: per symbol and second, ``SUM(price * volume) / SUM(volume)`` and
  ``COUNT(*)``;
* ``bars``: per symbol and second, open (``FIRST_VALUE(price)``: the price of
  the trade with the earliest event time), high (``MAX``), low (``MIN``), close
  (``LAST_VALUE(price)``: the latest), average price, traded volume and trade
  count.

The latest closed window of every symbol is shown live with ``rich`` (plain
periodic lines and one final table when stdout is not a terminal). The demo
needs numpy and rich, the ``demo`` extra: ``pip install 'laminardb[demo]'``. After
``--seconds`` the watermark ``2**63 - 1`` closes the windows still open, the
runtime stops, and a summary line reports events, events/s, windows closed and
rows emitted. The demo checks that the closed windows account for every event;
it exits 1 if they do not or if the engine reports an error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

import laminardb
from laminardb.bench import (
    TRADES_SCHEMA,
    require_extra,
    require_numpy,
    symbol_array,
    trade_columns,
)

if TYPE_CHECKING:  # rich is the demo extra's: imported when the demo runs
    from rich.console import Console, Group

__all__ = ["DemoStats", "add_parser", "demo_sql", "main", "run_demo"]

#: The watermark that closes every window.
FINAL_WATERMARK = 2**63 - 1
#: Largest batch pushed at once (rows).
MAX_BATCH = 65_536
#: Seconds between two renders of the live table.
RENDER_EVERY = 0.1
#: Seconds between two progress lines when stdout is not a terminal.
PLAIN_EVERY = 1.0


def demo_sql(delay_ms: int) -> str:
    """Return the DDL of the demo: the ``trades`` source and the two streams.

    Args:
        delay_ms: The watermark delay of the source, in milliseconds.

    Returns:
        The SQL text.
    """
    return f"""
CREATE SOURCE trades (
  symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, volume BIGINT NOT NULL, ts BIGINT NOT NULL,
  WATERMARK FOR ts AS ts - INTERVAL '{delay_ms}' MILLISECOND);
CREATE STREAM vwap AS
  SELECT window_start, symbol, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS trades
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;
CREATE STREAM bars AS
  SELECT window_start, symbol, FIRST_VALUE(price) AS open, MAX(price) AS high,
         MIN(price) AS low, LAST_VALUE(price) AS close, AVG(price) AS avg_price,
         SUM(volume) AS volume, COUNT(*) AS trades
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;
"""


@dataclass
class DemoStats:
    """What the demo pushed and received.

    Attributes:
        events: Trades pushed.
        seconds: Wall-clock seconds from start to the last result.
        windows: Distinct window starts closed (from ``vwap``).
        rows: Result rows received from both streams.
        vwap_rows: Result rows of ``vwap``.
        bars_rows: Result rows of ``bars``.
        trades_in_windows: Sum of ``vwap.trades`` (every event, once all closed).
        bad_bars: ``bars`` rows whose open or close lies outside [low, high]
            (0 when the engine is right).
        late_rows: Trades the ``vwap`` stream dropped as late.
        latest: Symbol -> fields of its latest closed window.
    """

    events: int = 0
    seconds: float = 0.0
    windows: int = 0
    rows: int = 0
    vwap_rows: int = 0
    bars_rows: int = 0
    trades_in_windows: int = 0
    bad_bars: int = 0
    late_rows: int = 0
    latest: dict[str, dict[str, float]] = field(default_factory=dict)
    _window_starts: set[int] = field(default_factory=set, repr=False)

    @property
    def events_per_s(self) -> float:
        """Events pushed per wall-clock second."""
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def take(self, stream: str, batch: pa.RecordBatch) -> None:
        """Account for one result batch and remember each symbol's latest window.

        Args:
            stream: ``"vwap"`` or ``"bars"``.
            batch: The batch.
        """
        self.rows += batch.num_rows
        if stream == "vwap":
            self.vwap_rows += batch.num_rows
            trades = batch.column("trades")
            self.trades_in_windows += int(pc.sum(trades).as_py() or 0)
            self._window_starts.update(batch.column("window_start").unique().to_pylist())
            self.windows = len(self._window_starts)
        else:
            self.bars_rows += batch.num_rows
            low, high = batch.column("low"), batch.column("high")
            for name in ("open", "close"):
                price = batch.column(name)
                inside = pc.and_(pc.less_equal(low, price), pc.less_equal(price, high))
                self.bad_bars += batch.num_rows - int(pc.sum(inside).as_py() or 0)
        for row in batch.to_pylist():
            entry = self.latest.setdefault(row["symbol"], {"window_start": row["window_start"]})
            if row["window_start"] < entry["window_start"]:
                continue
            if row["window_start"] > entry["window_start"]:
                entry.clear()
                entry["window_start"] = row["window_start"]
            entry.update({k: v for k, v in row.items() if k not in ("symbol", "window_start")})

    def summary(self) -> str:
        """Render the final one-line summary.

        Returns:
            The line (``test_demo`` parses it).
        """
        return (
            f"summary: {self.events} events in {self.seconds:.2f} s "
            f"({self.events_per_s:.0f} events/s), {self.windows} windows closed, "
            f"{self.rows} rows emitted ({self.vwap_rows} vwap + {self.bars_rows} bars), "
            f"{self.late_rows} late rows"
        )


def _clock(ms: float) -> str:
    """Format epoch milliseconds as ``HH:MM:SS`` UTC.

    Args:
        ms: Epoch milliseconds.

    Returns:
        The time of day.
    """
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%H:%M:%S")


def _render(stats: DemoStats, symbols: int, header: str | None, *, final: bool) -> Group:
    """Build the live view: a header line and one table row per symbol.

    Args:
        stats: The counters and latest windows.
        symbols: Number of symbols.
        header: The first line, or None for none.
        final: Whether the run is over (changes the title).

    Returns:
        A renderable.
    """
    box = require_extra("rich.box")
    Table = require_extra("rich.table").Table  # noqa: N806 -- rich's class
    Text = require_extra("rich.text").Text  # noqa: N806 -- rich's class
    Group = require_extra("rich.console").Group  # noqa: N806 -- rich's class
    title = (
        "last windows, closed by the final watermark"
        if final
        else "latest closed 1-second window per symbol"
    )
    table = Table(
        title=f"{title}, UTC", title_justify="left", box=box.SIMPLE_HEAVY, pad_edge=False
    )
    table.add_column("symbol")
    table.add_column("window", min_width=8)  # HH:MM:SS
    for name in ("vwap", "open", "high", "low", "close"):  # prices: 2 decimals, fits 80
        table.add_column(name, justify="right")
    table.add_column("volume", justify="right")
    table.add_column("trades", justify="right")
    for k in range(symbols):
        symbol = f"S{k:03d}"
        entry = stats.latest.get(symbol)
        if entry is None:
            table.add_row(symbol, "-", *["" for _ in range(7)])
            continue

        def cell(key: str, fmt: str, entry: dict[str, float] = entry) -> str:
            value = entry.get(key)
            return "" if value is None else format(value, fmt)

        table.add_row(
            symbol,
            _clock(entry["window_start"]),
            cell("vwap", ".2f"),
            cell("open", ".2f"),
            cell("high", ".2f"),
            cell("low", ".2f"),
            cell("close", ".2f"),
            cell("volume", "d"),
            cell("trades", "d"),
        )
    status = Text(
        f"{stats.events:,} events  {stats.events_per_s:,.0f} events/s  "
        f"{stats.windows} windows closed  {stats.rows:,} rows emitted"
    )
    parts = [table, status] if header is None else [Text(header, style="bold"), table, status]
    return Group(*parts)


class _Feed:
    """Generates the demo's trades: reference distributions, simulated event time."""

    def __init__(self, symbols: int, rate: float, speedup: float, jitter_ms: int) -> None:
        self.symbols = symbols
        self.ts0 = int(time.time() * 1000)
        # Simulated milliseconds per event: `rate` events per wall second, event
        # time `speedup` times faster than the wall clock.
        self.ms_per_event = 1000.0 * speedup / rate
        self.jitter_ms = jitter_ms
        self.names = pa.array([f"S{k:03d}" for k in range(symbols)], type=pa.string())

    def batch(self, start: int, count: int) -> pa.RecordBatch:
        """Generate events ``start .. start + count - 1``.

        Args:
            start: Index of the first event.
            count: Number of events.

        Returns:
            The batch, with the source's schema.
        """
        np = require_numpy()
        columns = trade_columns(start, count, symbols=self.symbols)
        index = np.arange(start, start + count, dtype=np.float64)
        ts = self.ts0 + np.floor(index * self.ms_per_event).astype(np.int64)
        if self.jitter_ms > 0:
            jitter = (columns["z"] >> np.uint64(40)) % np.uint64(self.jitter_ms + 1)
            ts = ts - jitter.astype(np.int64)
        return pa.record_batch(
            [
                symbol_array(columns["symbol_id"], self.symbols),
                pa.array(columns["price"]),
                pa.array(columns["volume"]),
                pa.array(ts),
            ],
            schema=TRADES_SCHEMA,
        )


def _drain(subscriptions: dict[str, laminardb.Subscription], stats: DemoStats) -> None:
    """Take every result batch queued now.

    Args:
        subscriptions: Stream name -> subscription.
        stats: Updated with each batch.
    """
    for stream, subscription in subscriptions.items():
        while True:
            batch = subscription.poll(0)
            if batch is None:
                break
            stats.take(stream, batch)


def run_demo(
    *,
    symbols: int = 20,
    rate: float = 200_000.0,
    seconds: float = 5.0,
    speedup: float = 10.0,
    delay_ms: int = 100,
    jitter_ms: int = 50,
    console: Console | None = None,
) -> DemoStats:
    """Run the demo and return its counters.

    Args:
        symbols: Distinct symbols (1..1000).
        rate: Target events per wall-clock second (pushing may fall short).
        seconds: Wall-clock duration of the feed.
        speedup: Simulated event time per wall-clock time.
        delay_ms: Watermark delay of the source.
        jitter_ms: Largest disorder of event times (keep it within ``delay_ms``
            so that no row is late).
        console: Where to render; None makes a ``rich.console.Console``.

    Returns:
        The :class:`DemoStats` after every window closed.

    Raises:
        ValueError: If an argument is out of range.
        ModuleNotFoundError: If numpy or rich is missing (the ``demo`` extra).
        LaminarError: If the engine reports an error.
    """
    if not 1 <= symbols <= 1000:
        raise ValueError(f"symbols must be in 1..1000, got {symbols}")
    if rate <= 0 or seconds < 0 or speedup <= 0 or delay_ms < 0 or jitter_ms < 0:
        raise ValueError("rate and speedup must be positive; seconds, delays non-negative")
    require_numpy()
    Live = require_extra("rich.live").Live  # noqa: N806 -- rich's class
    console = console if console is not None else require_extra("rich.console").Console()
    header = (
        f"LaminarDB {laminardb.__version__} demo: {symbols} symbols, target {rate:,.0f} "
        f"events/s, event time x{speedup:g}, 1-second tumbling windows: VWAP and bars "
        "(open/high/low/close/avg)"
    )
    stats = DemoStats()
    feed = _Feed(symbols, rate, speedup, jitter_ms)
    with laminardb.open() as db:
        db.execute(demo_sql(delay_ms))
        source = db.source("trades")
        subscriptions = {name: db.subscribe(name) for name in ("vwap", "bars")}
        interactive = console.is_terminal
        if not interactive:
            console.print(header)
        shown = header if interactive else None
        db.start()
        started = time.monotonic()
        deadline = started + seconds
        with Live(
            _render(stats, symbols, shown, final=False),
            console=console,
            auto_refresh=False,
            transient=False,
        ) as live:
            last_render = last_plain = started
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                target = int((now - started) * rate)
                if target > stats.events:
                    count = min(target - stats.events, MAX_BATCH)
                    source.push(feed.batch(stats.events, count))
                    stats.events += count
                else:
                    time.sleep(min(0.002, deadline - now))
                _drain(subscriptions, stats)
                stats.seconds = time.monotonic() - started
                if interactive and now - last_render >= RENDER_EVERY:
                    live.update(_render(stats, symbols, shown, final=False), refresh=True)
                    last_render = now
                if not interactive and now - last_plain >= PLAIN_EVERY:
                    console.print(
                        f"t={now - started:4.1f}s  {stats.events} events  "
                        f"{stats.windows} windows closed  {stats.rows} rows emitted"
                    )
                    last_plain = now
            # Close the windows still open, let the reactor finish, take the rest.
            source.watermark(FINAL_WATERMARK)
            db.stop()
            _drain(subscriptions, stats)
            stats.seconds = time.monotonic() - started
            stats.late_rows = db.late_rows("vwap")  # bars reads the same rows
            live.update(_render(stats, symbols, shown, final=True), refresh=True)
        if not interactive:
            console.line()  # Live leaves its last line open when not on a terminal
    return stats


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``demo`` subcommand on the CLI's subparsers.

    Args:
        commands: The object ``ArgumentParser.add_subparsers`` returned.
    """
    parser = commands.add_parser(
        "demo",
        help="live market-data demo: VWAP and OHLC bars over 1-second windows",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--symbols", type=int, default=20, help="distinct symbols (20)")
    parser.add_argument(
        "--rate", type=float, default=200_000.0, help="target events per second (200000)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of the feed (5)")
    parser.add_argument(
        "--speedup", type=float, default=10.0, help="event time per wall-clock time (10)"
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run the demo as parsed from the command line and print the summary.

    Args:
        args: The parsed options of the ``demo`` subcommand.

    Returns:
        0 on success; 1 if the closed windows do not account for every event
        (or numpy or rich is missing); 2 for an argument out of range; 130 on Ctrl-C.

    Raises:
        LaminarError: If the engine reports an error (the CLI prints it and
            exits 1).
    """
    try:
        stats = run_demo(
            symbols=args.symbols, rate=args.rate, seconds=args.seconds, speedup=args.speedup
        )
    except ValueError as e:
        if isinstance(e, laminardb.LaminarError):
            raise
        print(f"laminardb demo: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        print(f"laminardb demo: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("laminardb demo: interrupted", file=sys.stderr)
        return 130
    print(stats.summary(), flush=True)
    accounted = stats.trades_in_windows + stats.late_rows
    if accounted != stats.events or stats.vwap_rows != stats.bars_rows or stats.bad_bars:
        print(
            f"laminardb demo: check failed: {stats.events} events pushed, "
            f"{stats.trades_in_windows} counted in windows + {stats.late_rows} late; "
            f"{stats.vwap_rows} vwap rows vs {stats.bars_rows} bars rows; "
            f"{stats.bad_bars} open/close prices outside [low, high]",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo as a program (``python -m laminardb.demo``).

    Args:
        argv: Arguments without the program name; None reads ``sys.argv``.

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(prog="laminardb demo")
    commands = parser.add_subparsers(dest="command")
    add_parser(commands)
    args = parser.parse_args(["demo", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.handler(args))
    except laminardb.LaminarError as e:
        print(f"laminardb demo: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
