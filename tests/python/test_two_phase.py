"""Connection.two_phase (laminar_stream_two_phase): the partial query run over
random splits of the input (each part shuffled: no order at all), its rows
hashed by key into final databases, equals DuckDB's batch answer and one
engine's output -- tumbling and hopping windows, AVG/COUNT/SUM/MIN/MAX inside
expressions, expression keys, NULL keys, WHERE, HAVING, an upstream
projection. Streams that do not decompose are refused with LDB-1005 and the
reason. Runs without Spark (and in the ASan pass)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import announce_seed, assert_same_rows, duck, rows_of, run_engine, window_table

import laminardb


def _source(delay: int) -> str:
    return ("CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT, "
            f"WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);")


def _tumble_start(size: int) -> str:
    return f"CAST(floor(ts / {size}) AS BIGINT) * {size}"


# name -> (LaminarDB stream SQL with {size}, DuckDB query with {size}, output columns)
CASES: dict[str, tuple[str, str, list[str]]] = {
    "aggregates": (
        "CREATE STREAM w AS SELECT k, window_start, window_end, COUNT(*) AS n, COUNT(x) AS cx, "
        "SUM(x) * 2 + COUNT(*) AS e, SUM(y) AS sy, AVG(x) AS ax, AVG(y) AS ay, MIN(s) AS mn, "
        "MAX(y) AS mx FROM t GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND);",
        "SELECT k, {ws} AS window_start, {ws} + {size} AS window_end, COUNT(*) AS n, "
        "COUNT(x) AS cx, SUM(x) * 2 + COUNT(*) AS e, SUM(y) AS sy, AVG(x) AS ax, AVG(y) AS ay, "
        "MIN(s) AS mn, MAX(y) AS mx FROM t GROUP BY k, {ws}",
        ["k", "window_start", "window_end", "n", "cx", "e", "sy", "ax", "ay", "mn", "mx"],
    ),
    "expr_key_where_having": (
        "CREATE STREAM w AS SELECT s, g % 2 AS parity, window_start, COUNT(*) AS n, "
        "MAX(ts) - window_start AS last_at FROM t WHERE x <> 0 "
        "GROUP BY s, g % 2, tumble(ts, INTERVAL '{size}' MILLISECOND) HAVING COUNT(*) > 1;",
        "SELECT s, g % 2 AS parity, {ws} AS window_start, COUNT(*) AS n, "
        "MAX(ts) - {ws} AS last_at FROM t WHERE x <> 0 GROUP BY s, g % 2, {ws} "
        "HAVING COUNT(*) > 1",
        ["s", "parity", "window_start", "n", "last_at"],
    ),
    "hop": (
        "CREATE STREAM w AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x) AS sx, "
        "MIN(y) AS mn FROM t "
        "GROUP BY k, hop(ts, INTERVAL '{size3}' MILLISECOND, INTERVAL '{size}' MILLISECOND);",
        "SELECT k, ws AS window_start, ws + {size3} AS window_end, COUNT(*) AS n, SUM(x) AS sx, "
        "MIN(y) AS mn FROM (SELECT *, unnest(range(CAST(ceil((ts - {size3} + 1) / {size}) AS "
        "BIGINT), CAST(floor(ts / {size}) AS BIGINT) + 1)) * {size} AS ws FROM t) "
        "GROUP BY k, ws",
        ["k", "window_start", "window_end", "n", "sx", "mn"],
    ),
    # by values are injective functions of x (ties give the same x): any order agrees
    "bool_arg": (
        "CREATE STREAM w AS SELECT k, window_start, bool_and(x > 0) AS ba, bool_or(y < 0) AS bo, "
        "arg_min(x - 1, (x % 7) * 10000 + x) AS amn, arg_max(CAST(x AS VARCHAR), x) AS amx, "
        "arg_min(y * 2, y) AS amy FROM t WHERE s <> 'a' "
        "GROUP BY k, hop(ts, INTERVAL '{size3}' MILLISECOND, INTERVAL '{size}' MILLISECOND);",
        "SELECT k, ws AS window_start, bool_and(x > 0) AS ba, bool_or(y < 0) AS bo, "
        "arg_min(x - 1, (x % 7) * 10000 + x) AS amn, arg_max(CAST(x AS VARCHAR), x) AS amx, "
        "arg_min(y * 2, y) AS amy "
        "FROM (SELECT *, unnest(range(CAST(ceil((ts - {size3} + 1) / {size}) AS "
        "BIGINT), CAST(floor(ts / {size}) AS BIGINT) + 1)) * {size} AS ws FROM t "
        "WHERE s <> 'a') GROUP BY k, ws",
        ["k", "window_start", "ba", "bo", "amn", "amx", "amy"],
    ),
    # Chan's merge of partial (count, mean, sum of squares); y + 1e6: an offset
    "moments": (
        "CREATE STREAM w AS SELECT k, window_start, var_samp(y + 1e6) AS vs, var_pop(x) AS vp, "
        "stddev(y) AS sd, stddev_pop(x) AS sp, variance(x) * 2 AS v2 FROM t "
        "GROUP BY k, hop(ts, INTERVAL '{size3}' MILLISECOND, INTERVAL '{size}' MILLISECOND);",
        "SELECT k, ws AS window_start, var_samp(y + 1e6) AS vs, var_pop(x) AS vp, "
        "stddev(y) AS sd, stddev_pop(x) AS sp, variance(x) * 2 AS v2 "
        "FROM (SELECT *, unnest(range(CAST(ceil((ts - {size3} + 1) / {size}) AS "
        "BIGINT), CAST(floor(ts / {size}) AS BIGINT) + 1)) * {size} AS ws FROM t) "
        "GROUP BY k, ws",
        ["k", "window_start", "vs", "vp", "sd", "sp", "v2"],
    ),
    # the co-moment merged by polarization; rows where y or x is NULL skipped
    "bivariate": (
        "CREATE STREAM w AS SELECT k, window_start, covar_samp(y, x) AS cs, covar_pop(x, y) AS cp, "
        "corr(y, x) AS c, regr_slope(y, x) AS rs, regr_intercept(y, x) AS ri, "
        "regr_r2(y, x) AS r2, regr_count(y, x) AS rc FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND);",
        "SELECT k, {ws} AS window_start, covar_samp(y, x) AS cs, covar_pop(x, y) AS cp, "
        "corr(y, x) AS c, regr_slope(y, x) AS rs, regr_intercept(y, x) AS ri, "
        "regr_r2(y, x) AS r2, regr_count(y, x) AS rc FROM t GROUP BY k, {ws}",
        ["k", "window_start", "cs", "cp", "c", "rs", "ri", "r2", "rc"],
    ),
    "upstream_projection": (
        "CREATE STREAM f AS SELECT k AS key, x * 2 AS x2, ts FROM t WHERE y > 0;"
        "CREATE STREAM w AS SELECT key, SUM(x2) AS s2, COUNT(*) AS n FROM f "
        "GROUP BY key, tumble(ts, INTERVAL '{size}' MILLISECOND);",
        "SELECT k AS key, SUM(x * 2) AS s2, COUNT(*) AS n FROM t WHERE y > 0 GROUP BY k, {ws}",
        ["key", "s2", "n"],
    ),
}


def two_phase_run(sql: str, stream: str, table: pa.Table, rng: np.random.Generator, *,
                  parts: int, finals: int) -> pa.Table:
    """Run ``stream`` of ``sql`` in two phases over ``table``.

    The rows go to ``parts`` partial databases at random, in random order; the
    partial rows are hashed on the GROUP BY keys and the window start into
    ``finals`` final databases.
    """
    with laminardb.open() as db:
        db.execute(sql)
        rows = {r["role"]: r for r in db.two_phase(stream).to_pylist()}
        keys = [r["name"] for r in db.two_phase(stream).to_pylist() if r["role"] == "key"]
    partial_rows = []
    which = rng.integers(0, parts, size=table.num_rows)
    for part in range(parts):
        mine = table.filter(pa.array(which == part))
        mine = mine.take(pa.array(rng.permutation(mine.num_rows), type=pa.int64()))
        batches = mine.to_batches(max_chunksize=int(rng.integers(1, 400)))
        res = run_engine(rows["partial"]["value"], batches,
                         source=rows["partial_source"]["name"], stream=rows["partial"]["name"])
        assert res.late_rows == 0
        partial_rows.append(res.table)
    partial = pa.concat_tables(partial_rows)
    hashed = [hash(tuple(v)) % finals
              for v in zip(*(partial.column(c).to_pylist() for c in [*keys, "__ws"]))]
    out = []
    for f in range(finals):
        mine = partial.filter(pa.array([h == f for h in hashed], type=pa.bool_()))
        res = run_engine(rows["final"]["value"], mine.to_batches(max_chunksize=97),
                         source=rows["final_source"]["name"], stream=rows["final"]["name"])
        out.append(res.table)
    return pa.concat_tables(out)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_phase_equals_duckdb(case: str, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(500, 3000)),
                        size_ms=int(rng.choice([7, 100, 1000])))
    size = data.size_ms
    stream_sql, oracle, cols = CASES[case]
    fmt = {"size": size, "size3": 3 * size, "ws": _tumble_start(size)}
    sql = _source(data.delay_ms) + stream_sql.format(**fmt)
    got = two_phase_run(sql, "w", data.table, rng, parts=int(rng.integers(1, 5)),
                        finals=int(rng.integers(1, 4)))
    assert got.schema.names == cols
    _, want = duck(oracle.format(**fmt), t=data.table)
    assert_same_rows(rows_of(got, cols), want, cols, seed=seed)
    # The same as one engine over the input in order (types included).
    one = run_engine(sql, data.table.to_batches(max_chunksize=500), stream="w")
    assert one.late_rows == 0
    assert got.schema == one.table.schema
    assert_same_rows(rows_of(got, cols), rows_of(one.table, cols), cols, seed=seed)


def test_two_phase_rows_of_w1(db: laminardb.Connection) -> None:
    from laminardb.bench import W1_SQL

    db.execute(W1_SQL)
    rows = [(r["role"], r["name"]) for r in db.two_phase("w1").to_pylist()]
    assert rows == [("partial", "w1"), ("partial_source", "trades"), ("final", "w1"),
                    ("final_source", "__partial"), ("key", "__k0"), ("window", "__ws")]
    table = db.two_phase("w1")
    assert table.column("value").to_pylist()[-1] == "1000"
    partial = table.column("value")[0].as_py()
    assert "WATERMARK" not in partial  # windows close on the final watermark only
    final = table.column("value")[2].as_py()
    with laminardb.open() as fdb:
        fdb.execute(final)
        assert fdb.schema("w1").names == db.schema("w1").names
        assert fdb.schema("w1").types == db.schema("w1").types


@pytest.mark.parametrize(("stream", "reason"), [
    ("SELECT k, COUNT(DISTINCT x) AS n FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
     "count(DISTINCT ...) does not decompose"),
    ("SELECT k, FIRST_VALUE(x) AS f FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
     "first_value() does not decompose"),
    ("SELECT k, median(x) AS m FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
     "median() does not decompose"),
    ("SELECT k, approx_count_distinct(x) AS d FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
     "approx_count_distinct() does not decompose"),
    ("SELECT k, COUNT(*) AS n FROM t GROUP BY k, session(ts, INTERVAL '1' SECOND)",
     "session windows do not decompose"),
    ("SELECT k, COUNT(*) AS n FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND) EMIT CHANGES",
     "EMIT CHANGES does not decompose"),
    ("SELECT k, x FROM t WHERE x > 0", "no GROUP BY window"),
])
def test_two_phase_refused(db: laminardb.Connection, stream: str, reason: str) -> None:
    db.execute(_source(0) + f"CREATE STREAM w AS {stream};")
    with pytest.raises(laminardb.SQLError) as info:
        db.two_phase("w")
    assert info.value.code == "LDB-1005"
    assert reason in str(info.value)
    assert info.value.object == "w"


def test_two_phase_refuses_aggregating_upstream_and_unknown(db: laminardb.Connection) -> None:
    db.execute(_source(0) + "CREATE STREAM a AS SELECT k, COUNT(*) AS n, window_end AS t2 "
               "FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND);"
               "CREATE STREAM b AS SELECT k, SUM(n) AS n FROM a "
               "GROUP BY k, tumble(t2, INTERVAL '10' SECOND);")
    with pytest.raises(laminardb.SQLError) as info:
        db.two_phase("b")
    assert info.value.code == "LDB-1005"
    assert "upstream stream aggregates" in str(info.value)
    with pytest.raises(laminardb.SQLError) as info:
        db.two_phase("nope")
    assert info.value.code == "LDB-1002"
