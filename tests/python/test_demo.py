"""The ``laminardb demo`` and ``laminardb bench`` subcommands and bench/bench_python.py.

They run end to end (a short demo without a terminal, a small benchmark) and
their counts are checked, W1's against DuckDB; nothing here asserts a timing.
"""

from __future__ import annotations

import doctest
import io
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from rich.console import Console

import laminardb
from laminardb import bench, cli, demo

REPO_ROOT = Path(__file__).resolve().parents[2]

SUMMARY = re.compile(
    r"summary: (?P<events>\d+) events in [\d.]+ s \((?P<rate>\d+) events/s\), "
    r"(?P<windows>\d+) windows closed, (?P<rows>\d+) rows emitted "
    r"\((?P<vwap>\d+) vwap \+ (?P<bars>\d+) bars\), (?P<late>\d+) late rows"
)


def test_demo_command_without_a_terminal():
    """``laminardb demo --seconds 2`` ends by itself, exits 0 and reports progress."""
    result = subprocess.run(
        [sys.executable, "-m", "laminardb.cli", "demo", "--seconds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    match = SUMMARY.search(result.stdout)
    assert match, result.stdout
    assert int(match["events"]) > 0
    assert int(match["windows"]) > 0
    assert int(match["rows"]) == int(match["vwap"]) + int(match["bars"]) > 0
    assert int(match["vwap"]) == int(match["bars"])
    assert int(match["late"]) == 0
    assert "open/high/low/close" in result.stdout  # the header names the bars' columns
    assert "S019" in result.stdout  # 20 symbols by default, all in the final table


def test_run_demo_accounts_for_every_event():
    """In process: every pushed trade is counted in exactly one closed window."""
    out = io.StringIO()
    stats = demo.run_demo(symbols=3, seconds=0.5, rate=50_000, console=Console(file=out))
    assert stats.events > 0
    assert stats.trades_in_windows == stats.events
    assert stats.late_rows == 0
    assert stats.vwap_rows == stats.bars_rows > 0
    assert stats.windows > 0
    assert sorted(stats.latest) == ["S000", "S001", "S002"]
    assert stats.bad_bars == 0
    for entry in stats.latest.values():
        assert entry["low"] <= entry["vwap"] <= entry["high"]
        assert entry["low"] <= entry["open"] <= entry["high"]
        assert entry["low"] <= entry["close"] <= entry["high"]
        assert 100.0 <= entry["low"]
        assert entry["high"] < 200.0
    assert "S002" in out.getvalue()


def test_demo_rejects_bad_arguments(capsys):
    assert cli.main(["demo", "--symbols", "0", "--seconds", "0.1"]) == 2
    assert "symbols" in capsys.readouterr().err


def test_demo_exits_nonzero_on_an_engine_error(monkeypatch, capsys):
    """An engine error ends the demo with status 1 and its LDB code on stderr."""
    monkeypatch.setattr(demo, "demo_sql", lambda delay_ms: "CREATE SOURCE trades (")
    assert cli.main(["demo", "--seconds", "0.2"]) == 1
    assert "LDB-1001" in capsys.readouterr().err


def test_bench_counts_match_duckdb():
    """W1's row count equals DuckDB's count of distinct (symbol, second); W2's too."""
    events = 200_000
    results = {r.workload: r for r in bench.run_bench(events, reps=1)}
    batches, _ = bench.trade_batches(events)
    table = pa.Table.from_batches(batches)
    assert table.num_rows == events
    con = duckdb.connect()
    con.register("trades", table)
    (w1_rows,) = con.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT symbol, ts // 1000 FROM trades)"
    ).fetchone()
    (w2_rows,) = con.execute("SELECT COUNT(*) FROM trades WHERE volume > 500").fetchone()
    assert results["W1"].rows_out == w1_rows
    assert results["W2"].rows_out == w2_rows
    assert all(r.ok for r in results.values())


def test_bench_data_follows_the_reference():
    """Event 0 of shared/bench/README.md's generator, recomputed with Python ints."""
    mask = (1 << 64) - 1

    def mix(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    batches, _ = bench.trade_batches(3, batch_rows=2)
    rows = pa.Table.from_batches(batches).to_pylist()
    for i, row in enumerate(rows):
        z = mix(((i + 1) * 0x9E3779B97F4A7C15) & mask)
        assert row == {
            "symbol": f"S{z % 100:03d}",
            "price": 100 + ((z >> 24) % 100000) / 1000.0,
            "volume": 1 + (z >> 8) % 1000,
            "ts": 1_700_000_000_000 + i,
        }


def test_bench_command_and_script():
    """``laminardb bench`` and bench/bench_python.py print RESULT lines and exit 0."""
    for command in (
        [sys.executable, "-m", "laminardb.cli", "bench", "-n", "30000", "--reps", "1"],
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "bench_python.py"),
            "-n",
            "3e4",
            "--reps",
            "1",
            "--workload",
            "W1",
            "--limit-w1b",
            "100",
        ],
    ):
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert re.search(r"RESULT W1 python-inline N=30000 reps=1 .* rows out\)", result.stdout)
    assert "ratio" in result.stdout


def test_bench_rejects_bad_arguments():
    with pytest.raises(ValueError, match="positive"):
        bench.run_bench(0)
    with pytest.raises(ValueError, match="unknown workload"):
        bench.run_bench(10, workloads=["W9"])


def test_bench_docstring_examples():
    result = doctest.testmod(bench, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_version_still_works():
    assert cli.main(["version"]) == 0
    assert laminardb.__version__


def test_cli_without_numpy():
    """numpy is needed by demo/bench only: ``version`` works without it, demo says why not."""
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from laminardb import cli\n"
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    version = subprocess.run(
        [sys.executable, "-c", code, "version"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    demo_run = subprocess.run(
        [sys.executable, "-c", code, "demo", "--seconds", "0.1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert demo_run.returncode == 1
    assert "pip install 'laminardb[demo]'" in demo_run.stderr
    assert "summary" not in demo_run.stdout


def test_demo_bars_open_and_close_match_duckdb():
    """The demo's bars over its own feed (out of order within the delay) equal DuckDB's
    OHLC: open/close are the prices of the earliest/latest trade by event time, ties
    by arrival."""
    feed = demo._Feed(symbols=5, rate=20_000.0, speedup=10.0, jitter_ms=50)
    batch = feed.batch(0, 20_000)
    with laminardb.open() as db:
        db.execute(demo.demo_sql(100))
        sub = db.subscribe("bars")
        db.insert("trades", batch)
        db.source("trades").watermark(demo.FINAL_WATERMARK)
        db.run_until_idle()
        got = sub.to_arrow_table()
    assert got.num_rows > 0
    con = duckdb.connect()
    trades = pa.Table.from_batches([batch])
    con.register("trades", trades.append_column("i", pa.array(range(trades.num_rows))))
    columns = ["window_start", "symbol", "open", "high", "low", "close", "volume", "trades"]
    cursor = con.execute(
        """SELECT ts - ts % 1000 AS window_start, symbol,
                  first(price ORDER BY ts, i) AS open, max(price) AS high,
                  min(price) AS low, last(price ORDER BY ts, i) AS close,
                  sum(volume) AS volume, count(*) AS trades
           FROM trades GROUP BY ALL ORDER BY window_start, symbol"""
    )
    want = [dict(zip(columns, row)) for row in cursor.fetchall()]
    key = [("window_start", "ascending"), ("symbol", "ascending")]
    assert got.select(columns).sort_by(key).to_pylist() == want


def test_package_needs_neither_numpy_nor_rich():
    """numpy and rich are the demo extra's: not required, and laminardb runs without them."""
    from importlib.metadata import requires

    required = requires("laminardb") or []
    unconditional = {re.split(r"[ ;<>=!\[]", r)[0] for r in required if "extra ==" not in r}
    assert "numpy" not in unconditional, required
    assert "rich" not in unconditional, required
    demo_extra = [r for r in required if 'extra == "demo"' in r]
    assert {r.split(";")[0].strip() for r in demo_extra} == {"numpy", "rich"}
    code = (
        "import sys\n"
        "hidden = sys.argv.pop(1).split(',')\n"
        "for m in hidden: sys.modules[m] = None  # import m raises ModuleNotFoundError\n"
        "import laminardb\n"
        "from laminardb import cli, spark\n"
        "with laminardb.open(':memory:') as db:\n"
        "    db.execute(\"CREATE SOURCE t (k VARCHAR, v BIGINT);\"\n"
        "               \"CREATE STREAM s AS SELECT k, v * 2 AS w FROM t\")\n"
        "    sub = db.subscribe('s')\n"
        "    db.insert('t', {'k': 'a', 'v': 21})\n"
        "    db.run_until_idle()\n"
        "    assert sub.to_arrow_table().to_pylist() == [{'k': 'a', 'w': 42}]\n"
        "assert all(sys.modules[m] is None for m in hidden)  # nothing needed them\n"
        "sys.exit(cli.main(sys.argv[1:]))"
    )

    def run(hidden: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", code, hidden, *args], capture_output=True, text=True,
            timeout=60,
        )

    version = run("numpy,rich,pandas", "version")
    assert version.returncode == 0, version.stdout + version.stderr
    for module in ("rich", "numpy"):
        demo_run = run(module, "demo", "--seconds", "0.1")
        assert demo_run.returncode == 1, demo_run.stdout + demo_run.stderr
        assert f"need {module}" in demo_run.stderr, demo_run.stderr
        assert "pip install 'laminardb[demo]'" in demo_run.stderr
