"""laminardb.spark in batch: W1 and a filter/project query over a generated
DataFrame equal DuckDB's answer and one embedded engine's; the driver rejects
bad SQL, a DataFrame that does not fit the source and a missing event-time
column before any Spark job runs; with_expr evaluates a SQL expression over
Spark's Arrow batches. Windowed aggregations run in two phases by default
(partial per input partition, shuffle of partial rows, final); both that and
the whole-stream path (``two_phase=False``) are compared with DuckDB.

Runs in the session's local Spark (conftest ``spark``); marked ``spark`` and
left out of the ASan pytest run (scripts/test.sh).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _oracle_util import assert_same_rows, duck, run_engine

import laminardb
import laminardb.spark as lspark
from laminardb.bench import TRADES_SCHEMA, W1_SQL, W2_SQL, symbol_array, trade_columns

pytestmark = pytest.mark.spark

#: W1 over a source whose watermark lags 300 ms, so shuffled input would
#: lose rows if the adapter did not sort each partition by event time.
W1_DUCK = (
    "SELECT (ts // 1000) * 1000 AS window_start, symbol, SUM(price * volume) / SUM(volume) "
    "AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price "
    "FROM t GROUP BY ALL"
)
W2_DUCK = "SELECT symbol, price * volume AS notional FROM t WHERE volume > 500"


def trades(rng: np.random.Generator, rows: int, symbols: int = 11) -> pa.Table:
    """Reference trades (bench.trade_columns) in a shuffled order."""
    cols = trade_columns(int(rng.integers(0, 1_000_000)), rows, symbols=symbols)
    table = pa.table(
        [
            symbol_array(cols["symbol_id"], symbols),
            pa.array(cols["price"]),
            pa.array(cols["volume"]),
            pa.array(cols["ts"]),
        ],
        schema=TRADES_SCHEMA,
    )
    return table.take(pa.array(rng.permutation(rows)))


def spark_frame(spark: Any, table: pa.Table, path: Path, files: int = 4) -> Any:  # noqa: ANN401
    """Write ``table`` as ``files`` Parquet files under ``path`` and read them in Spark."""
    path.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // files)
    for i in range(files):
        pq.write_table(table.slice(i * step, step), path / f"part-{i}.parquet")
    return spark.read.parquet(str(path))


def rows_of(frame: Any) -> list[tuple]:  # noqa: ANN401
    """Collect a DataFrame's rows as tuples."""
    return [tuple(row) for row in frame.collect()]


def test_w1_equals_duckdb_and_one_engine(spark: Any, rng: np.random.Generator,
                                          tmp_path: Path) -> None:
    table = trades(rng, 20_000)
    df = spark_frame(spark, table, tmp_path / "in")
    out = lspark.run(df, W1_SQL, source="trades", stream="w1")
    assert out.columns == ["window_start", "symbol", "vwap", "trades", "max_price", "min_price"]
    got = rows_of(out)
    columns, want = duck(W1_DUCK, t=table)
    assert_same_rows(got, want, columns)
    engine = run_engine(W1_SQL, table.sort_by("ts").to_batches(4096), source="trades",
                        stream="w1")
    assert_same_rows(got, [tuple(r.values()) for r in engine.table.to_pylist()], columns)


def test_w1_with_watermark_delay_and_one_partition(spark: Any, rng: np.random.Generator,
                                                   tmp_path: Path) -> None:
    table = trades(rng, 5_000, symbols=3)
    sql = W1_SQL.replace("WATERMARK FOR ts AS ts", "WATERMARK FOR ts AS ts - INTERVAL '300' "
                         "MILLISECOND")
    out = lspark.run(spark_frame(spark, table, tmp_path / "in"), sql, partitions=1)
    assert out.rdd.getNumPartitions() == 1
    columns, want = duck(W1_DUCK, t=table)
    assert_same_rows(rows_of(out), want, columns)


def test_filter_project_equals_duckdb(spark: Any, rng: np.random.Generator,
                                      tmp_path: Path) -> None:
    table = trades(rng, 10_000)
    df = spark_frame(spark, table, tmp_path / "in")
    plan = lspark.plan(df, W2_SQL)
    assert (plan.source, plan.stream, plan.partitioning, plan.keys) == ("trades", "w2", "any", ())
    out = lspark.run(df, W2_SQL)
    columns, want = duck(W2_DUCK, t=table)
    assert out.columns == columns
    assert_same_rows(rows_of(out), want, columns)


def test_plan_reports_key_event_time_and_schema(spark: Any, tmp_path: Path) -> None:
    df = spark_frame(spark, trades(np.random.default_rng(1), 100), tmp_path / "in", files=1)
    plan = lspark.plan(df, W1_SQL)
    assert (plan.partitioning, plan.keys, plan.event_time, plan.delay_ms) == (
        "key", ("symbol",), "ts", 0)
    assert plan.output_schema.names == ["window_start", "symbol", "vwap", "trades",
                                        "max_price", "min_price"]
    # GROUP BY with no plain column: all rows in one engine.
    single = W1_SQL.replace("GROUP BY symbol,", "GROUP BY upper(symbol),").replace(
        "SELECT window_start, symbol,", "SELECT window_start, upper(symbol) AS s,")
    assert lspark.plan(df, single).partitioning == "single"
    assert lspark.run(df, single, two_phase=False).rdd.getNumPartitions() == 1
    # Two phases: the partial rows carry upper(symbol), the final spreads them.
    assert lspark.plan(df, single).two_phase is not None
    assert lspark.run(df, single, partitions=3).rdd.getNumPartitions() == 3


#: Streams for the two-phase tests (source: the W1 trades), with DuckDB's answer.
TWO_PHASE_CASES = {
    "hop_avg_having": (
        "CREATE STREAM h AS SELECT symbol, window_start, window_end, AVG(volume) AS av, "
        "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n FROM trades "
        "WHERE volume > 100 GROUP BY symbol, hop(ts, INTERVAL '3' SECOND, INTERVAL '1' SECOND) "
        "HAVING COUNT(*) > 2;",
        "SELECT symbol, ws AS window_start, ws + 3000 AS window_end, AVG(volume) AS av, "
        "SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n FROM (SELECT *, "
        "unnest(range(CAST(ceil((ts - 2999) / 1000) AS BIGINT), ts // 1000 + 1)) * 1000 AS ws "
        "FROM t WHERE volume > 100) GROUP BY symbol, ws HAVING COUNT(*) > 2",
        True,
    ),
    "no_key": (
        "CREATE STREAM h AS SELECT window_start, COUNT(*) AS n, MAX(price) - MIN(price) AS r "
        "FROM trades GROUP BY tumble(ts, INTERVAL '500' MILLISECOND);",
        "SELECT (ts // 500) * 500 AS window_start, COUNT(*) AS n, MAX(price) - MIN(price) AS r "
        "FROM t GROUP BY ALL",
        True,
    ),
    "statistics": (
        "CREATE STREAM h AS SELECT symbol, window_start, stddev(price) AS sd, "
        "var_pop(volume) AS vp, corr(price, volume) AS c, regr_slope(price, volume) AS rs, "
        "covar_samp(volume, price) AS cs, bool_and(volume > 100) AS big FROM trades "
        "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
        "SELECT symbol, (ts // 1000) * 1000 AS window_start, stddev(price) AS sd, "
        "var_pop(volume) AS vp, corr(price, volume) AS c, regr_slope(price, volume) AS rs, "
        "covar_samp(volume, price) AS cs, bool_and(volume > 100) AS big FROM t GROUP BY ALL",
        True,
    ),
    "quantiles_fall_back": (
        "CREATE STREAM h AS SELECT symbol, window_start, median(price) AS m, "
        "quantile_cont(volume, 0.25) AS qc, quantile_disc(price, 0.9) AS qd "
        "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
        "SELECT symbol, (ts // 1000) * 1000 AS window_start, median(price) AS m, "
        "quantile_cont(volume, 0.25) AS qc, quantile_disc(price, 0.9) AS qd "
        "FROM t GROUP BY ALL",
        False,
    ),
    "count_distinct_falls_back": (
        "CREATE STREAM h AS SELECT symbol, window_start, COUNT(DISTINCT volume) AS d "
        "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);",
        "SELECT symbol, (ts // 1000) * 1000 AS window_start, COUNT(DISTINCT volume) AS d "
        "FROM t GROUP BY ALL",
        False,
    ),
}


def test_w1_two_phase_and_whole_paths_equal_duckdb(spark: Any, rng: np.random.Generator,
                                                   tmp_path: Path) -> None:
    """The same W1 through both batch paths: partial per input partition then
    final (the default), and the whole stream per key partition."""
    table = trades(rng, 20_000)
    df = spark_frame(spark, table, tmp_path / "in", files=5)
    plan = lspark.plan(df, W1_SQL)
    assert plan.two_phase is not None
    assert plan.two_phase.keys == ("__k0", "__ws")
    columns, want = duck(W1_DUCK, t=table)
    for two_phase in (True, False):
        out = lspark.run(df, W1_SQL, two_phase=two_phase, partitions=3)
        assert out.columns == columns
        assert_same_rows(rows_of(out), want, columns)


@pytest.mark.parametrize("case", sorted(TWO_PHASE_CASES))
def test_two_phase_cases_equal_duckdb(spark: Any, rng: np.random.Generator, tmp_path: Path,
                                      case: str) -> None:
    stream, oracle, splits = TWO_PHASE_CASES[case]
    table = trades(rng, 8_000, symbols=5)
    df = spark_frame(spark, table, tmp_path / "in", files=3)
    sql = W1_SQL.split("CREATE STREAM")[0] + stream
    assert (lspark.plan(df, sql).two_phase is not None) == splits
    out = lspark.run(df, sql)
    columns, want = duck(oracle, t=table)
    assert out.columns == columns
    assert_same_rows(rows_of(out), want, columns)


def no_job_runs(spark: Any, call: Any) -> BaseException:  # noqa: ANN401
    """Run ``call`` under a fresh job group; return what it raised (it must raise)
    and check that Spark started no job for it."""
    group = f"laminardb-driver-check-{id(call)}"
    spark.sparkContext.setJobGroup(group, "driver-side checks")
    try:
        with pytest.raises(laminardb.LaminarError) as info:
            call()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
    return info.value


def test_errors_on_the_driver(spark: Any, tmp_path: Path) -> None:
    table = trades(np.random.default_rng(2), 100)
    df = spark_frame(spark, table, tmp_path / "in", files=1)

    bad = no_job_runs(spark, lambda: lspark.run(
        df, "CREATE SOURCE trades (symbol VARCHAR, ts BIGINT);\nCREATE STREAM s AS SELEC 1"))
    assert isinstance(bad, laminardb.SQLError)
    assert bad.code == "LDB-1001"
    assert (bad.line, bad.column) == (2, 20)
    assert "LDB-1001" in str(bad)

    unknown = no_job_runs(spark, lambda: lspark.run(
        df, "CREATE SOURCE trades (symbol VARCHAR, ts BIGINT);\n"
            "CREATE STREAM s AS SELECT nope FROM trades"))
    assert unknown.code == "LDB-1003"
    assert (unknown.line, unknown.column) == (2, 27)

    missing = no_job_runs(spark, lambda: lspark.run(
        df, W1_SQL.replace("volume BIGINT", "qty BIGINT").replace("* volume", "* qty")
        .replace("SUM(volume)", "SUM(qty)")))
    assert isinstance(missing, laminardb.IngestError)
    assert missing.code == "LDB-3003"
    assert missing.column_name == "qty"
    assert "no column 'qty'" in str(missing)

    no_ts = no_job_runs(spark, lambda: lspark.run(df.drop("ts"), W1_SQL))
    assert no_ts.code == "LDB-3003"
    assert no_ts.column_name == "ts"
    assert "event-time column of source 'trades'" in str(no_ts)

    wrong = no_job_runs(spark, lambda: lspark.run(df.withColumn("volume", df.price), W1_SQL))
    assert wrong.code == "LDB-3004"
    assert wrong.column_name == "volume"
    assert "double" in str(wrong)

    stream = no_job_runs(spark, lambda: lspark.run(df, W1_SQL, stream="nope"))
    assert stream.code == "LDB-1002"
    source = no_job_runs(spark, lambda: lspark.run(df, W1_SQL, source="quotes"))
    assert source.code == "LDB-1002"
    assert "reads source 'trades'" in str(source)
    view = no_job_runs(spark, lambda: lspark.run(
        df, W1_SQL + " CREATE MATERIALIZED VIEW mv AS SELECT symbol FROM trades", stream="mv"))
    assert view.code == "LDB-1005"
    two = no_job_runs(spark, lambda: lspark.run(df, W1_SQL + W2_SQL.split(";", 1)[1]))
    assert two.code == "LDB-1005"
    assert "stream=" in str(two)


def test_with_expr_over_arrow_batches(spark: Any, rng: np.random.Generator,
                                      tmp_path: Path) -> None:
    table = trades(rng, 3_000)
    df = spark_frame(spark, table, tmp_path / "in")
    out = lspark.with_expr(df, "notional", "price * volume")
    assert out.columns == ["symbol", "price", "volume", "ts", "notional"]
    got = {(r.ts, r.notional) for r in out.collect()}
    want = dict(zip(table.column("ts").to_pylist(),
                    (np.asarray(table.column("price")) * np.asarray(table.column("volume")))))
    assert len(got) == table.num_rows
    assert all(abs(n - want[ts]) <= 1e-9 * abs(want[ts]) for ts, n in got)
    # A column replaced in place, with a string function; then Spark filters it.
    upper = lspark.with_expr(df, "symbol", "lower(symbol) || '!'").where("volume > 990")
    assert upper.columns == ["symbol", "price", "volume", "ts"]
    names = {r.symbol for r in upper.collect()}
    assert names
    assert all(n.startswith("s") and n.endswith("!") for n in names)


def test_with_expr_errors_point_into_the_expression(spark: Any, tmp_path: Path) -> None:
    df = spark_frame(spark, trades(np.random.default_rng(3), 50), tmp_path / "in", files=1)
    err = no_job_runs(spark, lambda: lspark.with_expr(df, "x", "price +* 2"))
    assert err.code == "LDB-1001"
    assert (err.line, err.column) == (1, 8)
    err = no_job_runs(spark, lambda: lspark.with_expr(df, "x", "price + nope"))
    assert err.code == "LDB-1003"
    assert (err.line, err.column) == (1, 9)


def test_spark_md_examples_run(spark: Any) -> None:  # noqa: ANN401
    """docs/SPARK.md's examples (```py blocks, in order) run in this session.

    They are fenced ``py`` rather than ``python`` so test_docs.py, which also
    runs in the ASan pass where no JVM may start, leaves them to this test.
    """
    text = (Path(__file__).resolve().parents[2] / "docs" / "SPARK.md").read_text()
    blocks = re.findall(r"```py\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "doc:SPARK.md"}
    for block in blocks:
        exec(compile(block, "docs/SPARK.md", "exec"), namespace)  # noqa: S102 -- our docs
    assert namespace["spark"] is spark  # getOrCreate() found the suite's session


def check_timestamp_event_time(spark: Any, rng: np.random.Generator, path: Path,  # noqa: ANN401
                               **run_options: Any) -> Any:  # noqa: ANN401
    """Run a TIMESTAMP event-time query with ``run_options``; check it against DuckDB.

    Returns:
        The output DataFrame.
    """
    table = trades(rng, 4_000, symbols=5)
    stamped = table.set_column(3, "ts", table.column("ts").cast(pa.timestamp("ms"))
                               .cast(pa.timestamp("us", "UTC")))
    sql = """
      CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts TIMESTAMP,
                            WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
      CREATE STREAM bars AS SELECT symbol, window_start, SUM(volume) AS v, COUNT(*) AS n
        FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
    """
    out = lspark.run(spark_frame(spark, stamped, path), sql, **run_options)
    assert dict(out.dtypes)["window_start"] == "timestamp"
    got = [(r.symbol, int(r.window_start.timestamp() * 1000), r.v, r.n) for r in out.collect()]
    columns, want = duck("SELECT symbol, (ts // 1000) * 1000 AS w, SUM(volume), COUNT(*) "
                         "FROM t GROUP BY ALL", t=table)
    assert_same_rows(got, want, columns)
    return out


def test_timestamp_event_time(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                              tmp_path: Path) -> None:
    """A TIMESTAMP event-time column: Spark's timestamp[us, UTC] goes in as it is,
    window_start comes back as a Spark timestamp (the Python engine; the JVM one:
    test_spark_jvm.py)."""
    check_timestamp_event_time(spark, rng, tmp_path / "in", engine="python")


#: A window over the UNION ALL of two sources whose columns differ in name,
#: order and integer width: each input is routed by its own key column.
UNION_SQL = """
CREATE SOURCE nyse (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                    WATERMARK FOR ts AS ts - INTERVAL '300' MILLISECOND);
CREATE SOURCE nasdaq (ts BIGINT, sym VARCHAR, qty INT, px DOUBLE, WATERMARK FOR ts);
CREATE STREAM bars AS
  SELECT symbol, window_start, COUNT(*) AS trades, SUM(notional) AS notional
  FROM (SELECT symbol, price * volume AS notional, ts FROM nyse
        UNION ALL SELECT sym, px * qty, ts FROM nasdaq WHERE qty > 2)
  GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
"""
UNION_DUCK = (
    "SELECT symbol, (ts // 1000) * 1000 AS window_start, COUNT(*) AS trades, "
    "SUM(notional) AS notional FROM (SELECT symbol, price * volume AS notional, ts "
    "FROM nyse UNION ALL SELECT sym, px * qty, ts FROM nasdaq WHERE qty > 2) GROUP BY ALL"
)


@pytest.mark.parametrize("partitions", [1, 3])
def test_union_of_two_dataframes_equals_duckdb(spark: Any, rng: np.random.Generator,
                                               tmp_path: Path, partitions: int) -> None:
    """One DataFrame per source of a UNION ALL (Python engine) equals DuckDB.

    The inputs arrive shuffled across files; each is hash-partitioned on its
    own key column and sorted by event time with the other's rows, so no row
    is late and every window closes at the end: DuckDB's batch answer.
    """
    a = trades(rng, 3000, symbols=7)
    n = 2000
    b = pa.table({
        "ts": pa.array(rng.integers(0, 30_000, n), pa.int64()),
        "sym": symbol_array(rng.integers(0, 7, n), 7),
        "qty": pa.array(rng.integers(0, 9, n), pa.int32()),
        "px": pa.array(rng.uniform(1, 100, n)),
    })
    frames = {"nyse": spark_frame(spark, a, tmp_path / "a", 3),
              "NASDAQ": spark_frame(spark, b, tmp_path / "b", 2)}
    p = lspark.plan(frames, UNION_SQL)
    assert (p.partitioning, [i.source for i in p.inputs]) == ("key", ["nyse", "nasdaq"])
    assert [i.keys for i in p.inputs] == [("symbol",), ("sym",)]
    out = lspark.run(frames, UNION_SQL, partitions=partitions)
    assert out.columns == ["symbol", "window_start", "trades", "notional"]
    columns = ["symbol", "window_start", "trades", "notional"]
    _, want = duck(UNION_DUCK, nyse=a, nasdaq=b)
    assert_same_rows(rows_of(out), want, columns)


#: An ASOF JOIN of two sources whose key and time columns differ in name: each
#: DataFrame is hash-partitioned on its own key column.
ASOF_SQL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '300' MILLISECOND);
CREATE SOURCE quotes (sym VARCHAR, qts BIGINT, bid DOUBLE, WATERMARK FOR qts);
CREATE STREAM tq AS
  SELECT t.symbol, t.ts, t.volume, q.qts, q.bid
  FROM trades t LEFT ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.qts) ON t.symbol = q.sym;
"""
ASOF_DUCK = (
    "SELECT t.symbol, t.ts, t.volume, q.qts, q.bid FROM trades t "
    "ASOF LEFT JOIN quotes q ON t.symbol = q.sym AND t.ts >= q.qts"
)


@pytest.mark.parametrize("partitions", [1, 3])
def test_asof_join_of_two_dataframes_equals_duckdb(spark: Any, rng: np.random.Generator,
                                                   tmp_path: Path, partitions: int) -> None:
    """One DataFrame per side of an ASOF JOIN (Python engine) equals DuckDB.

    Both arrive shuffled across files; each is hash-partitioned on its own
    key column and sorted by event time with the other's rows, so each
    engine joins its symbols as the whole would: DuckDB's batch answer.
    """
    a = trades(rng, 3000, symbols=7)
    n = 2000
    qts = rng.choice(30_000, n, replace=False)  # unique per symbol: one match
    b = pa.table({
        "sym": symbol_array(rng.integers(0, 8, n), 8),  # one symbol never traded
        "qts": pa.array(qts, pa.int64()),
        "bid": pa.array(rng.uniform(1, 100, n)),
    })
    frames = {"trades": spark_frame(spark, a, tmp_path / "a", 3),
              "quotes": spark_frame(spark, b, tmp_path / "b", 2)}
    p = lspark.plan(frames, ASOF_SQL)
    assert (p.partitioning, [i.source for i in p.inputs]) == ("key", ["trades", "quotes"])
    assert [i.keys for i in p.inputs] == [("symbol",), ("sym",)]
    out = lspark.run(frames, ASOF_SQL, partitions=partitions)
    columns = ["symbol", "ts", "volume", "qts", "bid"]
    assert out.columns == columns
    _, want = duck(ASOF_DUCK, trades=a, quotes=b)
    assert_same_rows(rows_of(out), want, columns)


def test_asof_join_refusals_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """An ASOF JOIN runs on batch DataFrames with the Python engine; else LDB-1005."""
    a = pa.table({"symbol": ["A"], "price": [1.0], "volume": [1], "ts": [5]})
    b = pa.table({"sym": ["A"], "qts": [4], "bid": [2.0]})
    fa, fb = spark_frame(spark, a, tmp_path / "a", 1), spark_frame(spark, b, tmp_path / "b", 1)
    with pytest.raises(laminardb.LaminarError) as info:
        lspark.run({"trades": fa, "quotes": fb}, ASOF_SQL, engine="jvm")
    assert info.value.code == "LDB-1005"
    assert "ASOF JOIN" in str(info.value)
    streaming = spark.readStream.schema(fa.schema).parquet(str(tmp_path / "a"))
    with pytest.raises(laminardb.LaminarError) as info:
        lspark.run({"trades": streaming, "quotes": fb}, ASOF_SQL)
    assert info.value.code == "LDB-1005"
    assert "ASOF JOIN" in str(info.value)
    with pytest.raises(laminardb.LaminarError) as info:
        lspark.run(fa, ASOF_SQL)  # one DataFrame for two sources
    assert info.value.code == "LDB-6002"
    assert "ASOF JOIN" in str(info.value)


def test_union_errors_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """A union wants one DataFrame per source, batch, on the Python engine."""
    a = pa.table({"symbol": ["A"], "price": [1.0], "volume": [1], "ts": [5]})
    b = pa.table({"ts": [5], "sym": ["A"], "qty": pa.array([3], pa.int32()), "px": [2.0]})
    fa, fb = spark_frame(spark, a, tmp_path / "a", 1), spark_frame(spark, b, tmp_path / "b", 1)
    cases: list[tuple[Any, dict[str, Any], str]] = [
        (fa, {}, "LDB-6002"),  # one DataFrame for two sources
        ({"nyse": fa}, {}, "LDB-6002"),  # nasdaq has none
        ({"nyse": fa, "nasdaq": fb, "arca": fa}, {}, "LDB-1002"),
        ({"nyse": fa, "nasdaq": fa}, {}, "LDB-3003"),  # nasdaq's columns missing
        ({"nyse": fa, "nasdaq": fb}, {"engine": "jvm"}, "LDB-1005"),
    ]
    for frames, kwargs, code in cases:
        with pytest.raises(laminardb.LaminarError) as info:
            lspark.run(frames, UNION_SQL, **kwargs)
        assert info.value.code == code, (code, str(info.value))
