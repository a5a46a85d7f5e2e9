"""Memory has a bound (issue 20 item 8): queues bounded in bytes
(``max_queue_bytes``) for sources and subscriptions, keyed state bounded by
``max_state_bytes`` (LDB-3008), and a refused batch leaves the state as it was."""

from __future__ import annotations

from collections.abc import Iterable

import duckdb
import pyarrow as pa
import pytest

import laminardb


def _metric(db: laminardb.Connection, kind: str, name: str, metric: str) -> int:
    for row in db.metrics().to_pylist():
        if (row["kind"], row["name"], row["metric"]) == (kind, name, metric):
            return int(row["value"])
    raise AssertionError(f"no metric {kind}/{name}/{metric}")


def _batch(first: int, n: int) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "k": pa.array([f"key{first + i}" for i in range(n)]),
            "v": pa.array(range(first, first + n), type=pa.int64()),
        }
    )


def _push_until_refused(
    db: laminardb.Connection, src: laminardb.Source, batches: Iterable[pa.RecordBatch]
) -> tuple[list[pa.RecordBatch], pa.RecordBatch, laminardb.LaminarError]:
    """Push and run each batch until one fails: the batches accepted before
    it, that batch and its error."""
    accepted: list[pa.RecordBatch] = []
    for batch in batches:
        src.push(batch)
        try:
            db.run_until_idle()
        except laminardb.LaminarError as e:
            return accepted, batch, e
        accepted.append(batch)
    raise AssertionError("no batch was refused")


@pytest.mark.parametrize("slow", ["block", "drop"])
def test_never_read_subscriber_stays_under_its_bytes(slow: str) -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT); CREATE STREAM s AS SELECT k, v FROM t")
        sub = db.subscribe("s", max_queue_bytes="100 kB", slow_subscriber=slow)
        src = db.source("t")
        for b in range(60):
            src.push(_batch(b * 1000, 1000))
        db.run_until_idle()
        held = _metric(db, "subscription", "s", "queue_bytes")
        depth = _metric(db, "subscription", "s", "queue_depth")
        assert _metric(db, "subscription", "s", "max_queue_bytes") == 102400
        assert 0 < held <= 102400
        assert 1 <= depth < 60
        dropped = _metric(db, "subscription", "s", "dropped_batches")
        left = _metric(db, "source", "t", "queue_depth")
        if slow == "drop":
            assert dropped == 60 - depth
            assert left == 0
        else:
            assert dropped == 0
            assert left == 60 - depth
            rows = 0
            for _ in range(1000):  # read, let the held input through, read again
                batch = sub.poll(0)
                if batch is not None:
                    rows += batch.num_rows
                elif _metric(db, "source", "t", "queue_depth") == 0:
                    break
                else:
                    db.run_until_idle()
            assert rows == 60_000
            assert _metric(db, "subscription", "s", "queue_bytes") == 0
        sub.close()


@pytest.mark.parametrize("policy", ["block", "reject", "drop_oldest"])
def test_source_bytes_bound_per_policy(policy: str) -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT) "
            f"WITH (max_queue_bytes = '64 KiB', backpressure = '{policy}')"
        )
        src = db.source("t")
        errors: list[laminardb.LaminarError] = []
        for b in range(40):
            try:
                src.push(_batch(b * 1000, 1000))
            except laminardb.QueueFull as e:
                errors.append(e)
        refused = len(errors)
        assert all(e.code == "LDB-3006" for e in errors)
        assert all("max_queue_bytes" in str(e) for e in errors)
        queued = _metric(db, "source", "t", "queue_bytes")
        depth = _metric(db, "source", "t", "queue_depth")
        assert 0 < queued <= 65536
        assert 1 <= depth < 40
        if policy == "drop_oldest":
            assert refused == 0
            assert _metric(db, "source", "t", "dropped_batches") == 40 - depth
        else:
            assert refused == 40 - depth
        db.run_until_idle()
        src.push(_batch(0, 20_000))  # larger than the bound: an empty queue takes it
        assert _metric(db, "source", "t", "queue_bytes") > 65536


def test_bad_byte_counts_are_config_errors() -> None:
    with pytest.raises(laminardb.ConfigError) as info:
        laminardb.open(max_queue_bytes="lots")
    assert info.value.code == "LDB-6002"
    with laminardb.open(max_state_bytes="1 GiB") as db:
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute("CREATE SOURCE t (v BIGINT) WITH (max_queue_bytes = '-5')")
        assert info.value.code == "LDB-6002"


@pytest.mark.parametrize("where", ["stream", "database"])
def test_endless_keys_meet_max_state_bytes(where: str) -> None:
    options = {"max_state_bytes": "1MB"} if where == "database" else {}
    with_clause = " WITH (max_state_bytes = '1 MB')" if where == "stream" else ""
    with laminardb.open(**options) as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t "
            f"GROUP BY k EMIT CHANGES{with_clause}"
        )
        src = db.source("t")
        batches = (_batch(b * 1000, 1000) for b in range(1000))
        accepted, failed, error = _push_until_refused(db, src, batches)
        assert error.code == "LDB-3008"
        assert isinstance(error, laminardb.IngestError)
        assert "'mv'" in str(error)
        assert "max_state_bytes" in str(error)
        assert "1048576" in str(error)
        assert "in use" in str(error)
        # The view's rows behind the GROUP BY are accounted after it accepted
        # a batch: the last accepted batch's rows (1000, < 100 bytes) may pass.
        assert 0 < _metric(db, "stream", "mv", "accounted_state_bytes") <= (1 << 20) + 100_000

        def expected(batches: list[pa.RecordBatch]) -> list[tuple[str, int, int]]:
            rows_in = pa.Table.from_batches(batches)  # noqa: F841 -- read by duckdb
            return duckdb.sql(
                "SELECT k, COUNT(*)::BIGINT AS n, SUM(v)::BIGINT AS s FROM rows_in "
                "GROUP BY k ORDER BY k"
            ).fetchall()

        def got() -> list[tuple[str, int, int]]:
            rows = db.query("SELECT k, n, s FROM mv").to_pylist()
            return sorted((r["k"], r["n"], r["s"]) for r in rows)

        assert got() == expected(accepted)  # the refused batch left nothing
        src.push(failed)  # a retry is refused alike and changes nothing
        with pytest.raises(laminardb.IngestError):
            db.run_until_idle()
        assert got() == expected(accepted)
        src.push(accepted[0])  # known keys take no new state: accepted
        db.run_until_idle()
        assert got() == expected([*accepted, accepted[0]])


def test_refused_batches_stay_refused_after_reopen(tmp_path: object) -> None:
    """The WAL holds a batch the bound refused: replay refuses it as the live
    run did, and the database opens with the same view."""
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "max_state_bytes": "1MB"}
    db = laminardb.open(tmp_path, **options)
    db.execute(
        "CREATE SOURCE t (k VARCHAR, v BIGINT);"
        "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t "
        "GROUP BY k EMIT CHANGES"
    )
    src = db.source("t")
    codes: list[str] = []
    for b in range(40):
        src.push(_batch(b * 1000, 1000))
        try:
            db.run_until_idle()
        except laminardb.IngestError as e:
            codes.append(e.code)
    assert codes
    assert set(codes) == {"LDB-3008"}
    before = sorted((r["k"], r["n"], r["s"]) for r in db.query("SELECT * FROM mv").to_pylist())
    db.close()
    with laminardb.open(tmp_path, **options) as again:
        after = again.query("SELECT * FROM mv").to_pylist()
        assert sorted((r["k"], r["n"], r["s"]) for r in after) == before


def _session_batch(b: int) -> pa.RecordBatch:
    """Batch b: keys b*500 .. b*500+999 (the first half also in batch b-1, each
    500 ms after its row there: it joins that session), v = b*1000 + i."""
    return pa.record_batch(
        {
            "k": pa.array([f"key{b * 500 + i}" for i in range(1000)]),
            "v": pa.array(range(b * 1000, b * 1000 + 1000), type=pa.int64()),
        }
    )


def test_session_batch_past_max_state_bytes_is_refused_whole() -> None:
    """A session window's batch that would pass max_state_bytes is refused
    and leaves the sessions as they were: retried or not, they close with the
    rows of the accepted batches only (DuckDB sessionizes the same rows)."""
    gap = 600
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT, WATERMARK FOR v AS v - INTERVAL '1' HOUR);"
            "CREATE STREAM ss AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, "
            f"MAX(v) AS hi FROM t GROUP BY k, session(v, INTERVAL '{gap}' MILLISECOND) "
            "EMIT ON WINDOW CLOSE WITH (max_state_bytes = '1 MB')"
        )
        sub = db.subscribe("ss")
        src = db.source("t")
        batches = (_session_batch(b) for b in range(200))
        accepted, failed, error = _push_until_refused(db, src, batches)
        groups = _metric(db, "stream", "ss", "state_groups")
        assert error.code == "LDB-3008"
        assert isinstance(error, laminardb.IngestError)
        assert "'ss'" in str(error)
        assert "not applied" in str(error)
        assert len(accepted) > 1
        src.push(failed)  # a retry is refused alike and changes nothing
        with pytest.raises(laminardb.IngestError):
            db.run_until_idle()
        assert _metric(db, "stream", "ss", "state_groups") == groups
        src.watermark(1 << 62)
        db.run_until_idle()
        out: list[pa.RecordBatch] = []
        while (batch := sub.poll(0)) is not None:
            out.append(batch)
        got = sorted(
            (r["k"], r["n"], r["s"], r["lo"], r["hi"])
            for r in pa.Table.from_batches(out).to_pylist()
        )
        rows_in = pa.Table.from_batches(accepted)  # noqa: F841 -- read by duckdb
        want = duckdb.sql(
            f"""
            WITH o AS (
              SELECT k, v, CASE WHEN v - LAG(v) OVER (PARTITION BY k ORDER BY v) < {gap}
                           THEN 0 ELSE 1 END AS fresh FROM rows_in),
            g AS (
              SELECT k, v, SUM(fresh) OVER (PARTITION BY k ORDER BY v
                                            ROWS UNBOUNDED PRECEDING) AS sid FROM o)
            SELECT k, COUNT(*)::BIGINT, SUM(v)::BIGINT, MIN(v), MAX(v) FROM g
            GROUP BY k, sid ORDER BY ALL
            """
        ).fetchall()
        assert len(want) == groups  # the refused batch left no session
        assert got == want


def _rows_out(sub: laminardb.Subscription) -> list[dict[str, object]]:
    """Every row the subscription holds now."""
    rows: list[dict[str, object]] = []
    while (batch := sub.poll(0)) is not None:
        rows.extend(batch.to_pylist())
    return rows


def _grouped(keys: range, first: int) -> pa.RecordBatch:
    """One row (k = key<j>, v = first + j) per key j."""
    return pa.record_batch(
        {
            "k": pa.array([f"key{j}" for j in keys]),
            "v": pa.array([first + j for j in keys], type=pa.int64()),
        }
    )


def _run_chain(
    sql: str, batches: list[pa.RecordBatch], functions: dict[str, object] | None = None
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The uninterrupted answer: the view's rows and the rows emitted."""
    with laminardb.open() as db:
        for name, fn in (functions or {}).items():
            db.create_function(name, fn, [pa.int64()], pa.int64())  # type: ignore[arg-type]
        db.execute(sql)
        sub = db.subscribe("mv")
        src = db.source("t")
        for b in batches:
            src.push(b)
            db.run_until_idle()
        return db.query("SELECT * FROM mv ORDER BY k").to_pylist(), _rows_out(sub)


def test_batch_failing_behind_a_group_by_leaves_the_chain_as_before() -> None:
    """Issue 20: a batch that fails downstream of a GROUP BY's state -- here a
    function in HAVING raising -- leaves the GROUP BY, the view behind it and
    the subscriber as before it; pushed again it gives the uninterrupted
    answer."""
    failing = {"on": False}

    def gate(n: pa.Array) -> pa.Array:
        if failing["on"]:
            raise RuntimeError("gate closed")
        return n

    sql = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT);"
        "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk "
        "FROM t GROUP BY k HAVING gate(COUNT(*)) > 0 EMIT CHANGES"
    )
    a, b = _grouped(range(0, 3000), 0), _grouped(range(1500, 6500), 10)
    with laminardb.open() as db:
        db.create_function("gate", gate, [pa.int64()], pa.int64())
        db.execute(sql)
        sub = db.subscribe("mv")
        src = db.source("t")
        src.push(a)
        db.run_until_idle()
        emitted = _rows_out(sub)
        view = db.query("SELECT * FROM mv ORDER BY k").to_pylist()
        groups = _metric(db, "stream", "mv", "state_groups")
        failing["on"] = True
        src.push(b)
        with pytest.raises(laminardb.LaminarError) as e:
            db.run_until_idle()
        assert e.value.code == "LDB-3010"
        assert "'mv'" in str(e.value)
        assert db.query("SELECT * FROM mv ORDER BY k").to_pylist() == view
        assert _rows_out(sub) == []
        assert _metric(db, "stream", "mv", "state_groups") == groups
        failing["on"] = False
        src.push(b)  # the retry
        db.run_until_idle()
        emitted += _rows_out(sub)
        got = db.query("SELECT * FROM mv ORDER BY k").to_pylist()
    want, want_emitted = _run_chain(sql, [a, b], {"gate": lambda n: n})
    assert got == want
    assert emitted == want_emitted


def test_view_reading_a_group_by_past_its_bound_leaves_both_as_before() -> None:
    """Issue 20: a view reading a GROUP BY stream refuses the batch that
    passes its max_state_bytes; the stream it reads is as before the batch
    too (not only the view), so batches after it give the uninterrupted
    answer over the accepted ones."""
    sql = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT);"
        "CREATE STREAM g AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k "
        "EMIT CHANGES;"
        "CREATE MATERIALIZED VIEW mv AS SELECT k, n, s FROM g WITH (max_state_bytes = 200000)"
    )
    with laminardb.open() as db:
        db.execute(sql)
        src = db.source("t")
        batches = [_grouped(range(b * 500, b * 500 + 500), b) for b in range(1000)]
        accepted, refused, e = _push_until_refused(db, src, batches)
        groups = 500 * len(accepted)
        assert e.code == "LDB-3008"
        assert "'mv'" in str(e)
        assert _metric(db, "stream", "g", "state_groups") == groups
        src.push(refused)  # refused again, still changing nothing
        with pytest.raises(laminardb.LaminarError):
            db.run_until_idle()
        assert _metric(db, "stream", "g", "state_groups") == groups
        known = _grouped(range(0, 500), 7)  # known keys: the view replaces rows
        src.push(known)
        db.run_until_idle()
        got = db.query("SELECT * FROM mv ORDER BY k").to_pylist()
    want, _ = _run_chain(sql.replace(" WITH (max_state_bytes = 200000)", ""), [*accepted, known])
    assert got == want
