"""The streaming runtime from Python (issue 5): cloned sources pushed from 4
threads with the GIL released, KeyboardInterrupt during a blocking read,
callback and asyncio subscriptions, back-pressure policies and their
counters, slow-subscriber drop, wait strategies, push_batch, has_capacity.

Rows are (p, seq): producer p pushes seq 0, 1, 2, ...; readers check each
producer's rows arrive in order (gap-free unless a policy drops).
"""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from collections import defaultdict

import pyarrow as pa
import pytest

import laminardb

SQL = "CREATE SOURCE t (p BIGINT NOT NULL, seq BIGINT NOT NULL){with_};" \
      "CREATE STREAM s AS SELECT p, seq FROM t"


def make_db(with_: str = "", **options: object) -> laminardb.Connection:
    """An in-memory database with source t and stream s = SELECT p, seq FROM t."""
    db = laminardb.open(**options)
    db.execute(SQL.format(with_=f" WITH ({with_})" if with_ else ""))
    return db


def batch(p: int, first: int, n: int) -> pa.RecordBatch:
    """Rows (p, first), (p, first + 1), ... (p, first + n - 1)."""
    return pa.record_batch(
        {"p": pa.array([p] * n, pa.int64()), "seq": pa.array(range(first, first + n), pa.int64())}
    )


def metric(db: laminardb.Connection, kind: str, name: str, what: str) -> int:
    """One counter of ``db.metrics()``."""
    rows = [
        r for r in db.metrics().to_pylist()
        if r["kind"] == kind and r["name"] == name and r["metric"] == what
    ]
    assert len(rows) == 1, (kind, name, what)
    return int(rows[0]["value"])


class Checker:
    """Per-producer order of the rows a reader got."""

    def __init__(self, *, gaps_ok: bool = False) -> None:
        self.next: dict[int, int] = defaultdict(int)
        self.rows = 0
        self.gaps_ok = gaps_ok

    def add(self, b: pa.RecordBatch) -> None:
        for p, seq in zip(b.column("p").to_pylist(), b.column("seq").to_pylist()):
            if self.gaps_ok:
                assert seq >= self.next[p], (p, seq, self.next[p])
            else:
                assert seq == self.next[p], (p, seq, self.next[p])
            self.next[p] = seq + 1
            self.rows += 1


def drain_now(sub: laminardb.Subscription, checker: Checker) -> None:
    """Read what is queued now."""
    while (b := sub.poll(0)) is not None:
        checker.add(b)


# -- sources: clone, 4 threads, the GIL --------------------------------------------------


def test_four_threads_on_clones_with_three_subscribers() -> None:
    """4 producer threads on cloned handles x 3 subscribers, runtime started:
    every subscriber gets every row once, in order per producer."""
    per, rows_per_batch = 20_000, 100
    with make_db(buffer_size=256) as db:
        subs = [db.subscribe("s") for _ in range(3)]
        src = db.source("t")
        src.push(batch(0, 0, rows_per_batch))  # single-producer phase
        handles = [src, *(src.clone() for _ in range(3))]
        assert metric(db, "source", "t", "producers") == 4
        db.start()
        errors: list[BaseException] = []

        def produce(handle: laminardb.Source, p: int) -> None:
            try:
                first = rows_per_batch if p == 0 else 0
                for s in range(first, per, rows_per_batch):
                    handle.push(batch(p, s, rows_per_batch))
            except BaseException as exc:  # noqa: BLE001 -- reported below
                errors.append(exc)

        threads = [threading.Thread(target=produce, args=(h, p)) for p, h in enumerate(handles)]
        for t in threads:
            t.start()
        checkers = [Checker() for _ in subs]
        deadline = time.monotonic() + 60
        while any(c.rows < 4 * per for c in checkers) and time.monotonic() < deadline:
            for sub, c in zip(subs, checkers):
                if (b := sub.poll(0.01)) is not None:
                    c.add(b)
        for t in threads:
            t.join()
        assert not errors
        for c in checkers:
            assert c.rows == 4 * per
            assert dict(c.next) == {p: per for p in range(4)}
        for h in handles[1:]:
            h.close()
        assert metric(db, "source", "t", "producers") == 1
        assert metric(db, "reactor", "0", "messages") == 4 * per // rows_per_batch
        assert metric(db, "reactor", "0", "running_ns") > 0
        assert 0 <= metric(db, "reactor", "0", "busy_pct") <= 100


def test_gil_is_released_while_a_push_blocks() -> None:
    """A push blocked in C (full queue, block back-pressure) lets other Python
    threads run; reading the subscription unblocks it."""
    with make_db("buffer_size = 2", buffer_size=2) as db:
        sub = db.subscribe("s")  # never read until later: the pipeline stalls
        src = db.source("t")
        db.start()
        pushed = []

        def produce() -> None:
            for s in range(20):
                src.push(batch(0, s, 1))
                pushed.append(s)

        t = threading.Thread(target=produce)
        t.start()
        # The producer fills both queues and blocks inside the C push. This
        # thread keeps running Python meanwhile: the GIL is not held.
        spins = 0
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            spins += 1
        assert len(pushed) < 20
        assert spins > 10_000
        checker = Checker()
        while checker.rows < 20:
            b = sub.poll(5)
            assert b is not None
            checker.add(b)
        t.join(10)
        assert not t.is_alive()
        assert pushed == list(range(20))


def test_keyboard_interrupt_during_blocking_recv() -> None:
    """Ctrl-C while blocked in recv() raises KeyboardInterrupt promptly."""
    with make_db() as db:
        sub = db.subscribe("s")
        db.start()
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            sub.recv()
        assert time.monotonic() - started < 2.0
        timer.join()
        # The subscription still works afterwards.
        db.source("t").push(batch(0, 0, 3))
        assert sub.recv().num_rows == 3


def test_has_capacity_and_free_slots() -> None:
    with make_db("buffer_size = 4") as db:
        src = db.source("t")
        assert src.has_capacity()
        assert src.has_capacity(4)
        assert not src.has_capacity(5)
        for s in range(3):
            src.push(batch(0, s, 1))
        assert src.has_capacity(1)
        assert not src.has_capacity(2)
        assert src.free_slots == 1
        with pytest.raises(ValueError, match="n must be"):
            src.has_capacity(-1)
        db.run_until_idle()
        assert src.has_capacity(4)


def test_push_batch_all_or_nothing() -> None:
    with make_db() as db:
        sub = db.subscribe("s")
        src = db.source("t")
        table = pa.Table.from_batches([batch(0, i * 10, 10) for i in range(5)])
        src.push_batch(table)
        assert metric(db, "source", "t", "pushed_batches") == 5
        bad = [batch(0, 50, 2), pa.record_batch({"p": [1], "seq": ["x"]})]
        with pytest.raises(TypeError, match="batch 1 has schema"):
            src.push_batch(bad)
        wrong = [batch(0, 50, 2), batch(0, 52, 2)]
        wrong = [pa.record_batch({"p": b.column("p"), "other": b.column("seq")}) for b in wrong]
        with pytest.raises(laminardb.IngestError) as info:
            src.push_batch(wrong)
        assert info.value.code == "LDB-3003"
        assert metric(db, "source", "t", "pushed_batches") == 5  # nothing of it
        src.push_batch([])
        db.run_until_idle()
        checker = Checker()
        drain_now(sub, checker)
        assert checker.rows == 50


# -- back-pressure ----------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["drop_oldest", "reject", "block"])
def test_policies_inline(policy: str) -> None:
    """buffer_size 4, 10 pushes without a runtime: drop_oldest keeps the newest
    4 and counts 6 dropped; reject raises QueueFull 6 times and counts them;
    block refuses (nothing can drain) without counting."""
    with make_db(f"buffer_size = 4, backpressure = '{policy}'") as db:
        sub = db.subscribe("s")
        src = db.source("t")
        codes = []
        for s in range(10):
            try:
                src.push(batch(0, s, 1))
            except laminardb.QueueFull as exc:
                codes.append(exc.code)
        assert set(codes) <= {"LDB-3006"}
        refused = len(codes)
        dropped = metric(db, "source", "t", "dropped_batches")
        rejected = metric(db, "source", "t", "rejected_batches")
        db.run_until_idle()
        checker = Checker(gaps_ok=True)
        drain_now(sub, checker)
        assert checker.rows == 4
        if policy == "drop_oldest":
            assert (refused, dropped, rejected, checker.next[0]) == (0, 6, 0, 10)
        else:
            assert (refused, dropped, checker.next[0]) == (6, 0, 4)
            assert rejected == (6 if policy == "reject" else 0)


def test_drop_oldest_threaded_accounts_for_every_row() -> None:
    """4 cloned producers, drop_oldest, runtime started: every pushed row is
    delivered or counted dropped; per-producer order holds."""
    with make_db("buffer_size = 8, backpressure = 'drop_oldest'") as db:
        sub = db.subscribe("s")
        src = db.source("t")
        handles = [src, *(src.clone() for _ in range(3))]
        db.start()
        threads = [
            threading.Thread(
                target=lambda h=h, p=p: [h.push(batch(p, s, 5)) for s in range(0, 5000, 5)]
            )
            for p, h in enumerate(handles)
        ]
        checker = Checker(gaps_ok=True)
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            if (b := sub.poll(0.01)) is not None:
                checker.add(b)
        db.stop()
        drain_now(sub, checker)
        dropped = metric(db, "source", "t", "dropped_rows")
        assert metric(db, "source", "t", "pushed_rows") == 20_000
        assert checker.rows + dropped == 20_000


def test_slow_subscriber_drop_does_not_hold_the_pipeline() -> None:
    with make_db() as db:
        fast = db.subscribe("s")
        slow = db.subscribe("s", buffer_size=2, slow_subscriber="drop")
        src = db.source("t")
        for s in range(30):
            src.push(batch(0, s, 1))
        db.run_until_idle()
        checker = Checker()
        drain_now(fast, checker)
        assert checker.rows == 30
        rows = [r for r in db.metrics().to_pylist() if r["kind"] == "subscription"]
        dropped = sorted(r["value"] for r in rows if r["metric"] == "dropped_batches")
        assert dropped == [0, 28]
        assert slow.to_arrow_table().column("seq").to_pylist() == [0, 1]


def test_option_errors() -> None:
    with laminardb.open() as db:
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute("CREATE SOURCE a (x BIGINT) WITH (backpressure = 'sometimes')")
        assert info.value.code == "LDB-6002"
        assert (info.value.line, info.value.column) == (1, 49)
        db.execute("CREATE SOURCE a (x BIGINT); CREATE STREAM b AS SELECT x FROM a")
        with pytest.raises(laminardb.ConfigError) as info:
            db.subscribe("b", slow_subscriber="never")
        assert info.value.code == "LDB-6002"
        with pytest.raises(laminardb.ConfigError):
            db.subscribe("b", wait_strategy="spin_yield(-3)")
        with pytest.raises(laminardb.ConfigError):
            db.subscribe("b", buffer_size=3)
    with pytest.raises(laminardb.ConfigError) as info:
        laminardb.open(wait_strategy="doze")
    assert info.value.code == "LDB-6002"
    with pytest.raises(laminardb.ConfigError):
        laminardb.open(backpressure="drop_newest")


@pytest.mark.parametrize("strategy", ["spin", "spin_yield(10)", "park"])
def test_wait_strategies_deliver(strategy: str) -> None:
    with make_db(f"wait_strategy = '{strategy}', buffer_size = 4") as db:
        sub = db.subscribe("s", wait_strategy=strategy)
        src = db.source("t")
        db.start()
        checker = Checker()

        def read() -> None:
            while checker.rows < 500:
                checker.add(sub.recv())

        t = threading.Thread(target=read)
        t.start()
        for s in range(0, 500, 5):
            src.push(batch(0, s, 5))
        t.join(30)
        assert checker.rows == 500


# -- callback and asyncio subscriptions ------------------------------------------------------


def test_callback_subscription() -> None:
    with make_db() as db:
        got: list[pa.RecordBatch] = []
        sub = db.subscribe("s", callback=got.append)
        src = db.source("t")
        db.start()
        for s in range(0, 100, 10):
            src.push(batch(0, s, 10))
        deadline = time.monotonic() + 10
        while sum(b.num_rows for b in got) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        sub.close()  # ends the callback thread
        sub.join(5)
        checker = Checker()
        for b in got:
            checker.add(b)
        assert checker.rows == 100


def test_callback_error_ends_it_and_join_reraises() -> None:
    with make_db() as db:

        def boom(b: pa.RecordBatch) -> None:
            raise ValueError(f"bad batch of {b.num_rows}")

        sub = db.subscribe("s", callback=boom)
        db.source("t").push(batch(0, 0, 2))
        db.run_until_idle()
        with pytest.raises(ValueError, match="bad batch of 2"):
            sub.join(10)
        assert isinstance(sub.callback_error, ValueError)
        sub.close()


def test_callback_thread_ends_when_the_stream_is_dropped() -> None:
    with make_db() as db:
        got: list[pa.RecordBatch] = []
        sub = db.subscribe("s", callback=got.append)
        db.execute("DROP STREAM s")
        sub.join(10)
        assert sub.callback_error is None
        assert got == []


def test_asyncio_iteration() -> None:
    with make_db() as db:
        sub = db.subscribe("s")
        src = db.source("t")
        db.start()

        async def main() -> Checker:
            checker = Checker()
            ticks = 0

            async def ticker() -> None:  # the loop stays free while we wait
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.001)

            tick_task = asyncio.create_task(ticker())
            loop = asyncio.get_running_loop()
            loop.call_later(0.05, lambda: [src.push(batch(0, s, 10)) for s in range(0, 200, 10)])
            async for b in sub:
                checker.add(b)
                if checker.rows == 200:
                    break
            tick_task.cancel()
            assert ticks > 5
            return checker

        assert asyncio.run(main()).rows == 200


def test_asyncio_cancel_loses_nothing() -> None:
    """A task cancelled while waiting does not lose the batch its wait slice
    takes: the next __anext__ gets it."""
    with make_db() as db:
        sub = db.subscribe("s")
        src = db.source("t")
        db.start()

        async def main() -> list[int]:
            waiter = asyncio.create_task(sub.__anext__())
            await asyncio.sleep(0.02)
            waiter.cancel()
            src.push(batch(0, 0, 1))  # lands in the slice still in flight
            with pytest.raises(asyncio.CancelledError):
                await waiter
            b = await asyncio.wait_for(sub.__anext__(), 5)
            return b.column("seq").to_pylist()

        assert asyncio.run(main()) == [0]


def test_asyncio_iteration_ends_with_the_stream() -> None:
    with make_db() as db:
        sub = db.subscribe("s")
        db.source("t").push(batch(0, 0, 3))
        db.run_until_idle()
        db.execute("DROP STREAM s")

        async def main() -> int:
            return sum([b.num_rows async for b in sub])

        assert asyncio.run(main()) == 3


def test_recv_and_recv_timeout() -> None:
    with make_db() as db:
        sub = db.subscribe("s")
        assert sub.recv_timeout(0) is None
        assert sub.recv_timeout(0.05) is None
        with pytest.raises(ValueError, match="recv_timeout needs"):
            sub.recv_timeout(None)  # type: ignore[arg-type]
        db.source("t").push(batch(0, 0, 2))
        db.run_until_idle()
        assert sub.recv().num_rows == 2
        db.execute("DROP STREAM s")
        with pytest.raises(laminardb.SubscriptionError):
            sub.recv()


def test_closing_the_connection_from_under_a_callback_that_uses_it() -> None:
    """A callback calling into the connection while the connection closes does
    not deadlock: it gets LDB-9002 and its thread ends."""
    db = make_db()
    entered = threading.Event()

    def cb(b: pa.RecordBatch) -> None:
        entered.set()
        time.sleep(0.2)  # the connection closes meanwhile
        db.metrics()

    sub = db.subscribe("s", callback=cb)
    db.source("t").push(batch(0, 0, 1))
    db.run_until_idle()
    assert entered.wait(10)
    db.close()
    with pytest.raises(laminardb.LaminarError) as info:
        sub.join(10)
    assert info.value.code == "LDB-9002"
    assert sub.callback_error is info.value


def test_close_while_a_push_is_blocked_does_not_hang() -> None:
    """A producer blocked on a stalled pipeline (nobody reads) gets QueueFull
    when the connection closes; the close returns."""
    db = make_db("buffer_size = 2", buffer_size=2)
    sub = db.subscribe("s")  # never read (kept alive: collected, it would unsubscribe)
    src = db.source("t")
    db.start()
    outcome: list[object] = []

    def produce() -> None:
        try:
            for s in range(20):
                src.push(batch(0, s, 1))
        except laminardb.LaminarError as exc:
            outcome.append(exc.code)

    t = threading.Thread(target=produce)
    t.start()
    # The queue fills, then the push blocks (holding the Source's lock: watch
    # the metrics, not the handle).
    deadline = time.monotonic() + 10
    while metric(db, "source", "t", "queue_depth") < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert t.is_alive()
    db.close()
    t.join(10)
    assert not t.is_alive()
    assert outcome == ["LDB-3006"]
    assert sub.closed


def test_push_batch_longer_than_the_queue_says_what_went_in() -> None:
    """A push_batch of more batches than the queue holds, stopped midway.

    The runtime is stopped while the call waits for room behind a subscriber
    nobody reads: the error says exactly which batches went in (the first
    ``ingested_batches``, ``ingested_rows`` rows), and those are the rows the
    stream delivers; pushing the rest completes the input once.
    """
    db = laminardb.open(buffer_size=2)
    db.execute("CREATE SOURCE t (v BIGINT); CREATE STREAM s AS SELECT v FROM t")
    sub = db.subscribe("s")
    db.start()
    src = db.source("t")
    batches = [pa.record_batch({"v": [3 * i, 3 * i + 1, 3 * i + 2]}) for i in range(20)]
    stopper = threading.Timer(0.5, db.stop)
    stopper.start()
    with pytest.raises(laminardb.LaminarError) as info:
        src.push_batch(batches)
    stopper.join()
    e = info.value
    assert e.ingested_batches is not None, e
    assert 0 < e.ingested_batches < len(batches), e
    assert e.ingested_rows == 3 * e.ingested_batches
    assert f"{e.ingested_batches} of the 20 batch(es) ({e.ingested_rows} rows)" in str(e)

    def drain() -> list[int]:
        got: list[int] = []
        while True:
            batch = sub.poll(timeout=0)
            if batch is None:
                db.run_until_idle()
                batch = sub.poll(timeout=0)
                if batch is None:
                    return got
            got.extend(batch.column("v").to_pylist())

    assert sorted(drain()) == list(range(e.ingested_rows))
    rest: list[int] = []
    for batch in batches[e.ingested_batches :]:  # the rest, once
        src.push(batch)
        rest.extend(drain())
    assert sorted(rest) == list(range(e.ingested_rows, 60))
    db.close()
