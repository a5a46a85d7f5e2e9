"""The Kafka sink against a real broker (docs/KAFKA.md).

The broker is Apache Kafka in KRaft mode, single node on 127.0.0.1, run by
``tests/kafka/broker.sh``: scripts/test.sh starts it and sets
``LAMINAR_KAFKA_BOOTSTRAP``; without that variable this module starts one of its
own for its run. Skipped only when the library was built without librdkafka
(then the connector's refusal, LDB-1005, is what is tested).

Output topics are read with a ``read_committed`` consumer (confluent-kafka),
which sees only what committed transactions wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import laminardb

if TYPE_CHECKING:
    from confluent_kafka import Consumer

ROOT = Path(__file__).resolve().parents[2]
BROKER = ROOT / "tests" / "kafka" / "broker.sh"
SETTINGS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
DDL = """
  CREATE SOURCE t (id BIGINT NOT NULL, k VARCHAR, v DOUBLE);
  CREATE STREAM s AS SELECT id, k, v FROM t;
"""


def _built_with_kafka(tmp: Path) -> bool:
    """False (LDB-1005 checked) for a library built without librdkafka."""
    with laminardb.open(tmp / "probe", **SETTINGS) as db:
        db.execute(DDL)
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(
                "CREATE SINK x FROM s WITH (connector = 'kafka', "
                "'bootstrap.servers' = '127.0.0.1:1', topic = 'x', timeout = '1 second')"
            )
    if e.value.code == "LDB-1005":
        assert "built without Kafka" in str(e.value)
        return False
    assert e.value.code == "LDB-5005", str(e.value)
    return True


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not _built_with_kafka(tmp_path_factory.mktemp("probe")):
        pytest.skip("laminardb was built without Kafka (librdkafka absent): LDB-1005 checked")
    given = os.environ.get("LAMINAR_KAFKA_BOOTSTRAP")
    if given:
        yield given
        return
    home = tmp_path_factory.mktemp("kafka-home")
    env = dict(os.environ, LAMINAR_KAFKA_HOME=str(home / "broker"))
    out = subprocess.run(
        ["bash", str(BROKER), "start"], env=env, capture_output=True, text=True, check=True
    )
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("bootstrap.servers=")
    try:
        yield line.split("=", 1)[1]
    finally:
        subprocess.run(["bash", str(BROKER), "stop"], env=env, check=False)


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"t-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=30)
    return name


def committed_reader(bootstrap: str, topic: str, **extra: object) -> Consumer:
    """A consumer of `topic` from its start, of a group of its own, that sees
    only what committed transactions wrote."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **extra,
        }
    )
    c.subscribe([topic])
    return c


def read_committed(
    bootstrap: str, topic: str, *, at_least: int, quiet: float = 2.0
) -> list[tuple[bytes | None, bytes]]:
    """Every message of `topic` a read_committed consumer sees: waits for
    `at_least`, then until nothing new came for `quiet` seconds."""
    c = committed_reader(bootstrap, topic)
    got: list[tuple[bytes | None, bytes]] = []
    deadline = time.monotonic() + 60
    last = time.monotonic()
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append((m.key(), m.value()))
                last = time.monotonic()
            elif len(got) >= at_least and time.monotonic() - last > quiet:
                break
    finally:
        c.close()
    return got


def sink_sql(bootstrap: str, topic: str, extra: str = "") -> str:
    return (
        f"CREATE SINK out FROM s WITH (connector = 'kafka', "
        f"'bootstrap.servers' = '{bootstrap}', topic = '{topic}'{extra})"
    )


def rows(n: int, start: int = 0) -> list[dict[str, object]]:
    return [{"id": i, "k": f"k{i % 3}", "v": i / 4} for i in range(start, start + n)]


def test_sink_json_keyed_published_at_checkpoints(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(DDL)
        db.execute(sink_sql(bootstrap, topic, ", key = 'k', format = 'json'"))
        db.insert("t", rows(5))
        db.run_until_idle()
        db.checkpoint()
        db.insert("t", rows(4, 5))
        db.run_until_idle()
        db.checkpoint()
    got = read_committed(bootstrap, topic, at_least=9)
    values = sorted((json.loads(v) for _, v in got), key=lambda r: r["id"])
    assert values == rows(9)
    for key, value in got:
        assert key is not None
        assert json.loads(key) == {"k": json.loads(value)["k"]}


def test_sink_csv_and_changelog_weight(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap, 1)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR NOT NULL, ts BIGINT NOT NULL);"
            "CREATE STREAM s AS SELECT k, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) EMIT CHANGES;"
        )
        db.execute(sink_sql(bootstrap, topic, ", format = 'csv', delivery = 'at_least_once'"))
        db.insert("t", [{"k": "a", "ts": 1}])
        db.run_until_idle()
        db.insert("t", [{"k": "a", "ts": 2}])
        db.run_until_idle()
        db.checkpoint()
    got = [v.decode() for _, v in read_committed(bootstrap, topic, at_least=3)]
    # (k, n, _weight): +a/1, then -a/1 +a/2, consolidating to a/2.
    weights: Counter[tuple[str, str]] = Counter()
    for line in got:
        k, n, w = line.split(",")
        weights[(k, n)] += int(w)
    assert {key: w for key, w in weights.items() if w != 0} == {("a", "2"): 1}


CHILD = textwrap.dedent(
    """
    import sys
    import time
    import laminardb

    root, bootstrap, topic = sys.argv[1], sys.argv[2], sys.argv[3]
    settings = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    db = laminardb.open(root, **settings)
    if len(sys.argv) > 4:  # setup, run once before the kills
        db.execute(
            "CREATE SOURCE t (id BIGINT NOT NULL, k VARCHAR, v DOUBLE);"
            "CREATE STREAM s AS SELECT id, k, v FROM t;"
            "CREATE SINK out FROM s WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{topic}', key = 'id')"
        )
        db.close()
        sys.exit(0)
    src = db.source("t")
    for i in range(src.offset - 1, 40):
        src.push([{"id": i * 10 + j, "k": f"k{j}", "v": float(i)} for j in range(10)])
        db.run_until_idle()
        if i % 3 == 2:
            db.checkpoint()
        print(f"pushed {i}", flush=True)  # the parent kills a few batches on
        time.sleep(0.05)
    db.checkpoint()
    db.close()
    print("done")
    """
)


def test_sink_exactly_once_across_kill_9(bootstrap: str, tmp_path: Path) -> None:
    """kill -9 at seeded moments (while pushing, checkpointing, publishing or
    recovering), restart, finish: a read_committed consumer sees each of the
    400 rows exactly once."""
    topic = new_topic(bootstrap, 2)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    root = tmp_path / "db"
    seed = int(os.environ.get("LAMINAR_TEST_SEED", "24"))
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    # The pipeline is declared once, unkilled (the test is about a running one).
    subprocess.run([sys.executable, str(script), str(root), bootstrap, topic, "setup"], check=True)
    # Each killed run is let push 1 to 4 batches (of 40) and killed a seeded
    # moment after the last one it reported, so the 8 kills land mid-run
    # whatever the machine's speed.
    kills = 0
    for _ in range(30):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(root), bootstrap, topic], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        if kills < 8:
            for _ in range(int(rng.integers(1, 5))):
                if not proc.stdout.readline():
                    break
            time.sleep(float(rng.uniform(0.0, 0.08)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
                kills += 1
                continue
        stdout, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0
        assert b"done" in stdout
        break
    got = read_committed(bootstrap, topic, at_least=400)
    ids = Counter(json.loads(v)["id"] for _, v in got)
    dup = sum(n - 1 for n in ids.values() if n > 1)
    lost = len(set(range(400)) - set(ids))
    print(f"kafka-sink: kills={kills} dup={dup} lost={lost} seed={seed}")
    assert kills == 8
    assert dup == 0
    assert lost == 0
    assert set(ids) == set(range(400))


def test_sink_bad_config_codes(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap, 1)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(DDL)
        cases: list[tuple[str, str]] = [
            (f"CREATE SINK out FROM s WITH (connector = 'kafka', topic = '{topic}')", "LDB-6002"),
            (sink_sql(bootstrap, topic, ", delivery = 'twice'"), "LDB-6002"),
            (sink_sql(bootstrap, topic, ", colour = 'red'"), "LDB-6001"),
            (sink_sql(bootstrap, topic, ", path = '/tmp/x'"), "LDB-6003"),
            (sink_sql(bootstrap, topic, ", key = 'nope'"), "LDB-1003"),
            (sink_sql(bootstrap, topic, ", 'kafka.no.such.property' = '1'"), "LDB-6002"),
            (sink_sql(bootstrap, "no-such-topic-" + uuid.uuid4().hex[:8]), "LDB-5005"),
        ]
        for sql, code in cases:
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(sql)
            assert e.value.code == code, (sql, str(e.value))
            assert "out" in str(e.value)
        # An unreachable broker: a clear error within the timeout, not a hang.
        t0 = time.monotonic()
        with pytest.raises(laminardb.StorageError) as e:
            db.execute(
                "CREATE SINK out FROM s WITH (connector = 'kafka', "
                "'bootstrap.servers' = '127.0.0.1:1', topic = 'x', timeout = '2 seconds')"
            )
        assert e.value.code == "LDB-5005"
        assert time.monotonic() - t0 < 20
        # Nothing was created by the failures: the name is free.
        db.execute(sink_sql(bootstrap, topic))
    with laminardb.open() as mem:
        mem.execute(DDL)
        with pytest.raises(laminardb.ConfigError) as e:
            mem.execute(sink_sql(bootstrap, topic))
        assert e.value.code == "LDB-6003"


# ---- the source -------------------------------------------------------------------


def produce(bootstrap: str, topic: str, messages: list[tuple[int, bytes]]) -> None:
    """(partition, value) messages, in order, flushed."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition, value in messages:
        p.produce(topic, value=value, partition=partition)
    assert p.flush(30) == 0


def source_sql(bootstrap: str, topic: str, columns: str, extra: str = "") -> str:
    return (
        f"CREATE SOURCE t ({columns}) WITH (connector = 'kafka', "
        f"'bootstrap.servers' = '{bootstrap}', topic = '{topic}'{extra})"
    )


def poll_rows(sub: laminardb.Subscription, *, at_least: int, quiet: float = 1.5) -> list[dict]:
    got: list[dict] = []
    deadline = time.monotonic() + 60
    last = time.monotonic()
    while time.monotonic() < deadline:
        batch = sub.poll(0.1)
        if batch is not None and batch.num_rows:
            got.extend(batch.to_pylist())
            last = time.monotonic()
        elif len(got) >= at_least and time.monotonic() - last > quiet:
            break
    return got


def test_source_json_csv_metadata_and_bad_records(bootstrap: str, tmp_path: Path) -> None:
    """Every good message becomes a row with its partition and offset; a
    record that does not decode is skipped and the pipeline goes on."""
    for fmt in ("json", "csv"):
        topic = new_topic(bootstrap, 2)
        msgs: list[tuple[int, bytes]] = []
        for i in range(60):
            row = {"id": i, "k": f"k,{i % 3}", "v": i / 2}
            value = json.dumps(row) if fmt == "json" else f'{i},"k,{i % 3}",{i / 2}'
            msgs.append((i % 2, value.encode()))
        msgs.insert(10, (0, b'{"id": "not a number"}' if fmt == "json" else b"x,y,z"))
        msgs.insert(20, (1, b"{not json" if fmt == "json" else b"1,2"))
        produce(bootstrap, topic, msgs)
        cols = "id BIGINT NOT NULL, k VARCHAR, v DOUBLE, _partition INT, _offset BIGINT"
        with laminardb.open() as db:
            db.execute(source_sql(bootstrap, topic, cols, f", format = '{fmt}'"))
            db.execute("CREATE STREAM s AS SELECT * FROM t")
            sub = db.subscribe("s")
            db.start()
            got = poll_rows(sub, at_least=60)
            counters = {
                r["metric"]: r["value"]
                for r in db.metrics().to_pylist()
                if r["kind"] == "source" and r["name"] == "t"
            }
        assert counters["kafka_bad_records"] == 2, fmt
        assert counters["kafka_failed"] == 0
        assert sorted(r["id"] for r in got) == list(range(60)), fmt
        for r in got:
            assert r["k"] == f"k,{r['id'] % 3}"
            assert r["v"] == r["id"] / 2
            assert r["_partition"] == r["id"] % 2
        # Offsets are each partition's positions: the bad records took two.
        offsets = sorted((r["_partition"], r["_offset"]) for r in got)
        assert len(set(offsets)) == 60


def test_source_watermark_is_the_least_partition(bootstrap: str, tmp_path: Path) -> None:
    """Partition 0 runs ahead to ts 1000, partition 1 stays at 250: only the
    windows partition 1 has passed close; when it catches up, the rest do."""
    topic = new_topic(bootstrap, 2)
    ahead = [(0, json.dumps({"k": "a", "ts": ts}).encode()) for ts in range(0, 1001, 50)]
    behind = [(1, json.dumps({"k": "b", "ts": ts}).encode()) for ts in range(0, 251, 50)]
    produce(bootstrap, topic, ahead + behind)
    with laminardb.open() as db:
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '0' MILLISECOND",
            )
        )
        db.execute(
            "CREATE STREAM w AS SELECT k, window_end, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
        )
        sub = db.subscribe("w")
        db.start()
        first = poll_rows(sub, at_least=4)
        assert max(r["window_end"] for r in first) == 200  # watermark 250 = min(1000, 250)
        produce(bootstrap, topic, [(1, json.dumps({"k": "b", "ts": 1000}).encode())])
        later = poll_rows(sub, at_least=1)
    assert max(r["window_end"] for r in later) == 1000
    closed = {(r["k"], r["window_end"]) for r in first + later}
    assert ("a", 1000) in closed
    assert ("b", 300) in closed


SOURCE_CHILD = textwrap.dedent(
    """
    import sys
    import time
    import laminardb

    root, bootstrap, topic_in, topic_out = sys.argv[1:5]
    settings = {"checkpoint_interval": "1 hour", "wal_mode": sys.argv[5]}
    db = laminardb.open(root, **settings)
    if sys.argv[6] == "0":  # setup, run once before the kills
        db.execute(
            "CREATE SOURCE t (id BIGINT NOT NULL, v DOUBLE) WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{topic_in}');"
            "CREATE STREAM s AS SELECT id, v FROM t;"
            "CREATE SINK out FROM s WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{topic_out}');"
        )
    db.start()
    for _ in range(int(sys.argv[6])):
        time.sleep(1.0)  # rows read since the last checkpoint are what a kill undoes
        db.checkpoint()
    db.close()
    print("done")
    """
)


@pytest.mark.parametrize("wal_mode", ["sync", "none"])
def test_source_to_sink_exactly_once_across_kill_9(
    bootstrap: str, tmp_path: Path, wal_mode: str
) -> None:
    """topic -> source -> stream -> exactly-once sink -> topic, killed with
    kill -9 at seeded moments and restarted: the output topic (read
    committed) holds every input row exactly once, with the WAL and without
    (then the consumer resumes at the checkpoint's offsets)."""
    topic_in, topic_out = new_topic(bootstrap, 3), new_topic(bootstrap, 2)
    chunk, n = 1000, 5000

    def produce_chunk(k: int) -> None:
        ids = range(k * chunk, (k + 1) * chunk)
        msgs = [(i % 3, json.dumps({"id": i, "v": i * 0.5}).encode()) for i in ids]
        produce(bootstrap, topic_in, msgs)

    script = tmp_path / "child.py"
    script.write_text(SOURCE_CHILD)
    root = tmp_path / "db"
    seed = int(os.environ.get("LAMINAR_TEST_SEED", "7"))
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    kills = 0
    args = [sys.executable, str(script), str(root), bootstrap, topic_in, topic_out, wal_mode]
    # The pipeline is declared once, unkilled, before any input (the test is
    # about a running one; a Kafka source reads as soon as it exists).
    subprocess.run([*args, "0"], stdout=subprocess.PIPE, timeout=120, check=True)
    for k in range(4):
        # New input for every run: each restart resumes where the recovered
        # state ends, and what it read before must not come again.
        produce_chunk(k)
        proc = subprocess.Popen([*args, "100"], stdout=subprocess.PIPE)
        time.sleep(float(rng.uniform(0.8, 3.0)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
    # A last run that has time to read everything.
    produce_chunk(4)
    proc = subprocess.run([*args, "6"], stdout=subprocess.PIPE, timeout=180, check=True)
    assert b"done" in proc.stdout
    got = read_committed(bootstrap, topic_out, at_least=n)
    ids = Counter(json.loads(v)["id"] for _, v in got)
    dup = sum(c - 1 for c in ids.values() if c > 1)
    lost = len(set(range(n)) - set(ids))
    print(f"kafka-source: kills={kills} dup={dup} lost={lost} wal={wal_mode} seed={seed}")
    assert dup == 0
    assert lost == 0


def test_source_bad_config_codes(bootstrap: str) -> None:
    topic = new_topic(bootstrap, 1)
    cols = "id BIGINT, ts BIGINT"
    cases = [
        (f"CREATE SOURCE t ({cols}) WITH (connector = 'kafka', topic = '{topic}')", "LDB-6002"),
        (source_sql(bootstrap, topic, cols, ", startup = 'yesterday'"), "LDB-6002"),
        (source_sql(bootstrap, topic, cols, ", format = 'xml'"), "LDB-6002"),
        (source_sql(bootstrap, topic, cols, ", event_time = 'nope'"), "LDB-1003"),
        (source_sql(bootstrap, topic, cols, ", colour = 'red'"), "LDB-6001"),
        (source_sql(bootstrap, "no-such-" + uuid.uuid4().hex[:8], cols), "LDB-5005"),
        (
            source_sql("127.0.0.1:1", topic, cols, ", timeout = '2 seconds'"),
            "LDB-5005",
        ),
    ]
    with laminardb.open() as db:
        for sql, code in cases:
            t0 = time.monotonic()
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(sql)
            assert e.value.code == code, (sql, str(e.value))
            assert "'t'" in str(e.value)
            assert time.monotonic() - t0 < 20
        # Nothing was left behind by the failures: the name is free.
        db.execute(source_sql(bootstrap, topic, cols, ", startup = 'timestamp:0'"))


# ---- partitions added at run time, a broker restart -------------------------------


def test_source_reads_partitions_added_while_it_runs(bootstrap: str, tmp_path: Path) -> None:
    """A partition added to the topic while the source runs is found by the
    metadata refresh (partition_discovery_interval) and read from its start;
    it holds the watermark back from its first record on, like the others."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = new_topic(bootstrap, 1)
    produce(
        bootstrap,
        topic,
        [(0, json.dumps({"k": "a", "ts": ts}).encode()) for ts in range(0, 501, 50)],
    )
    with laminardb.open() as db:
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "k VARCHAR, ts BIGINT, _partition INT, "
                "WATERMARK FOR ts AS ts - INTERVAL '0' MILLISECOND",
                ", partition_discovery_interval = '300 ms'",
            )
        )
        db.execute("CREATE STREAM raw AS SELECT k, ts, _partition FROM t")
        db.execute(
            "CREATE STREAM w AS SELECT k, window_end, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
        )
        raw, win = db.subscribe("raw"), db.subscribe("w")
        db.start()
        first = poll_rows(raw, at_least=11)
        assert {r["_partition"] for r in first} == {0}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_partitions([NewPartitions(topic, 2)]).values():
            future.result(timeout=30)
        # The new partition reaches ts 1000, then the old one 3000: the
        # source's watermark is the new partition's (1000).
        produce(
            bootstrap,
            topic,
            [(1, json.dumps({"k": "b", "ts": ts}).encode()) for ts in range(600, 1001, 100)],
        )
        later = poll_rows(raw, at_least=5)
        produce(
            bootstrap,
            topic,
            [(0, json.dumps({"k": "a", "ts": ts}).encode()) for ts in (2000, 3000)],
        )
        later += poll_rows(raw, at_least=2)
        closed = poll_rows(win, at_least=1)
    assert sorted((r["_partition"], r["ts"]) for r in later) == sorted(
        [(1, ts) for ts in range(600, 1001, 100)] + [(0, 2000), (0, 3000)]
    )
    ends = {(r["k"], r["window_end"]) for r in closed}
    assert ("b", 1000) in ends
    assert max(e for _, e in ends) == 1000  # a's windows past 1000 wait for b


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A broker of this test's own (it is restarted): bootstrap and the
    environment broker.sh needs to find it."""
    env = dict(os.environ, LAMINAR_KAFKA_HOME=str(tmp_path / "own-broker"))
    out = subprocess.run(
        ["bash", str(BROKER), "start"], env=env, capture_output=True, text=True, check=True
    )
    try:
        yield out.stdout.strip().splitlines()[-1].split("=", 1)[1], env
    finally:
        subprocess.run(["bash", str(BROKER), "stop"], env=env, check=False)


def test_broker_restart_mid_stream(
    bootstrap: str, own_broker: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """topic -> source -> exactly-once sink -> topic; the broker is stopped
    and started again between two chunks of input: the source and the sink
    reconnect by themselves (a checkpoint that fails meanwhile leaves its
    epoch staged for the next), and the output holds every row once."""
    boot, env = own_broker
    topic_in, topic_out = new_topic(boot, 2), new_topic(boot, 1)
    produce(
        boot, topic_in, [(i % 2, json.dumps({"id": i, "v": i / 2}).encode()) for i in range(100)]
    )
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            source_sql(boot, topic_in, "id BIGINT NOT NULL, v DOUBLE", ", timeout = '5 seconds'")
            + ";CREATE STREAM s AS SELECT id, v FROM t;"
            + sink_sql(boot, topic_out, ", timeout = '5 seconds'")
        )
        db.start()
        time.sleep(2.0)
        db.checkpoint()
        assert len(read_committed(boot, topic_out, at_least=100, quiet=0.5)) == 100
        subprocess.run(["bash", str(BROKER), "restart"], env=env, check=True, capture_output=True)
        produce(
            boot,
            topic_in,
            [(i % 2, json.dumps({"id": i, "v": i / 2}).encode()) for i in range(100, 200)],
        )
        failures: list[str] = []
        deadline = time.monotonic() + 90
        got: list[tuple[bytes | None, bytes]] = []
        while len(got) < 200 and time.monotonic() < deadline:
            time.sleep(1.0)
            try:
                db.checkpoint()
            except laminardb.LaminarError as e:  # the sink not reconnected yet
                failures.append(e.code)
                continue
            got = read_committed(boot, topic_out, at_least=0, quiet=0.5)
    ids = Counter(json.loads(v)["id"] for _, v in got)
    print(f"kafka-restart: failed checkpoints={failures}")
    assert set(failures) <= {"LDB-5005"}
    assert sorted(ids) == list(range(200))
    assert max(ids.values()) == 1


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offset of each partition (-1001: none)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return [tp.offset for tp in sorted(tps, key=lambda tp: tp.partition)]
    finally:
        c.close()


def test_group_offsets_committed_after_checkpoints(bootstrap: str, tmp_path: Path) -> None:
    """The consumer group's offsets are written only once a durable
    checkpoint covers what was read: each partition's next offset."""
    topic = new_topic(bootstrap, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, [(i % 2, json.dumps({"id": i}).encode()) for i in range(30)])
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(source_sql(bootstrap, topic, "id BIGINT", f", group_id = '{group}'"))
        db.execute("CREATE STREAM s AS SELECT id FROM t")
        sub = db.subscribe("s")
        db.start()
        assert len(poll_rows(sub, at_least=30, quiet=0.5)) == 30
        assert committed_offsets(bootstrap, group, topic, 2) == [-1001, -1001]
        db.checkpoint()
        deadline = time.monotonic() + 30
        while (got := committed_offsets(bootstrap, group, topic, 2)) != [15, 15]:
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
        produce(bootstrap, topic, [(0, json.dumps({"id": 30 + i}).encode()) for i in range(5)])
        assert len(poll_rows(sub, at_least=5, quiet=0.5)) == 5
        assert committed_offsets(bootstrap, group, topic, 2) == [15, 15]
        db.checkpoint()
        while (got := committed_offsets(bootstrap, group, topic, 2)) != [20, 15]:
            assert time.monotonic() < deadline, got
            time.sleep(0.2)


# ---- upsert-json ------------------------------------------------------------------


def read_to_end(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every committed message of `topic` up to each partition's end, each
    partition's in its order (what a compacting reader replays); a
    tombstone's value is None."""
    from confluent_kafka import KafkaError

    c = committed_reader(bootstrap, topic, **{"enable.partition.eof": True})
    got: list[tuple[bytes | None, bytes | None]] = []
    ends: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            err = m.error()
            if err is None:
                got.append((m.key(), m.value()))
                ends.discard(m.partition())
            elif err.code() == KafkaError._PARTITION_EOF:
                ends.add(m.partition())
                assignment = c.assignment()
                if assignment and ends >= {tp.partition for tp in assignment}:
                    break
    finally:
        c.close()
    return got


def test_upsert_json_sessions_compacted_equal_duckdb(bootstrap: str, tmp_path: Path) -> None:
    """topic -> session windows EMIT CHANGES -> exactly-once upsert-json
    topic, keyed by (k, window_start): a session that grows is its key's new
    value, one merged away or replaced by an earlier start a tombstone. The
    topic compacted (last value per key, tombstones deleting) equals DuckDB's
    sessions over the same records."""
    import duckdb

    seed = int(os.environ.get("LAMINAR_TEST_SEED", str(int(time.time()))))
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    topic_in, topic_out = new_topic(bootstrap, 2), new_topic(bootstrap, 2)
    records: list[dict[str, object]] = []
    halves: list[list[tuple[int, bytes]]] = [[], []]
    for p in range(2):
        base = 0
        for i in range(300):
            if p == 0 and i == 150:
                # Two sessions of key kz in the first epoch, bridged by a row
                # of the second (within the watermark delay): the later one is
                # merged away, a tombstone.
                bridge = [(0, base - 90), (0, base + 60), (1, base - 15)]
                for h, ts in bridge:
                    records.append({"k": "kz", "v": 1, "ts": ts})
                    halves[h].append((0, json.dumps(records[-1]).encode()))
                base += 60
            base += int(rng.integers(0, 60)) if rng.random() > 0.1 else int(rng.integers(150, 300))
            # Disorder within the watermark delay (100): rows can bridge sessions.
            row = {"k": f"k{int(rng.integers(0, 4))}", "v": int(rng.integers(1, 10))}
            row["ts"] = max(0, base - int(rng.integers(0, 80)))
            records.append(row)
            halves[i // 150].append((p, json.dumps(row).encode()))
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            source_sql(
                bootstrap,
                topic_in,
                "k VARCHAR NOT NULL, v BIGINT, ts BIGINT, "
                "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND",
            )
            + ";CREATE STREAM sess AS SELECT k, window_start, window_end, COUNT(*) AS n, "
            "SUM(v) AS s FROM t GROUP BY k, session(ts, INTERVAL '100' MILLISECOND) "
            "EMIT CHANGES;"
            "CREATE MATERIALIZED VIEW seen AS SELECT COUNT(*) AS n FROM t EMIT CHANGES;"
            f"CREATE SINK up FROM sess WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{topic_out}', "
            "format = 'upsert-json', key = 'k, window_start')"
        )
        sub = db.subscribe("sess")
        db.start()
        # Two epochs: a session of the first may be merged away in the second.
        for h, half in enumerate(halves):
            produce(bootstrap, topic_in, half)
            deadline = time.monotonic() + 60
            want_n = len(halves[0]) if h == 0 else len(records)
            while db.query("SELECT n FROM seen").column("n").to_pylist() != [want_n]:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(0.3)  # the last batch's changes through the stream
            db.checkpoint()
        changes = poll_rows(sub, at_least=1, quiet=0.5)
    everything = read_to_end(bootstrap, topic_out)
    compacted: dict[bytes | None, dict] = {}
    for key, value in everything:
        if value is None:
            compacted.pop(key, None)
        else:
            compacted[key] = json.loads(value)
    got = sorted(
        (r["k"], r["window_start"], r["window_end"], r["n"], r["s"]) for r in compacted.values()
    )
    for key, r in compacted.items():
        assert key is not None
        assert json.loads(key) == {"k": r["k"], "window_start": r["window_start"]}
        assert "_weight" not in r
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k VARCHAR, v BIGINT, ts BIGINT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(r["k"], r["v"], r["ts"]) for r in records])
    want = con.execute(
        """
        WITH o AS (SELECT *, CASE WHEN ts - LAG(ts) OVER (PARTITION BY k ORDER BY ts) < 100
                                  THEN 0 ELSE 1 END AS new FROM t),
             g AS (SELECT *, SUM(new) OVER (PARTITION BY k ORDER BY ts
                                            ROWS UNBOUNDED PRECEDING) AS sid FROM o)
        SELECT k, MIN(ts), MAX(ts) + 100, COUNT(*), SUM(v) FROM g GROUP BY k, sid
        """
    ).fetchall()
    tombstones = sum(1 for _, v in everything if v is None)
    retractions = sum(1 for r in changes if r["_weight"] < 0)
    print(
        f"upsert-json: {len(everything)} messages, {tombstones} tombstones, "
        f"{retractions} retractions, {len(changes)} changes, {len(got)} sessions"
    )
    assert got == sorted(tuple(r) for r in want)
    assert len(everything) < len(changes)  # one message per key and epoch
    assert tombstones > 0  # kz's second session, merged away, at least


def test_source_topic_pattern(bootstrap: str, tmp_path: Path) -> None:
    """topic_pattern reads every matching topic (the _topic column names
    each row's), not the others, and a matching topic created while the
    source runs is found by the metadata refresh."""
    from confluent_kafka.admin import AdminClient, NewTopic

    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def make(name: str, partitions: int) -> None:
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(timeout=30)

    make(f"{prefix}-a", 2)
    make(f"{prefix}-b", 1)
    make(f"other-{prefix}-a", 1)  # contains the prefix, but not at the start
    for topic, ids in ((f"{prefix}-a", range(0, 20)), (f"{prefix}-b", range(20, 30))):
        produce(
            bootstrap,
            topic,
            [(i % 2 if topic.endswith("a") else 0, json.dumps({"id": i}).encode()) for i in ids],
        )
    produce(bootstrap, f"other-{prefix}-a", [(0, json.dumps({"id": 99}).encode())])
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            f"CREATE SOURCE t (id BIGINT, _topic VARCHAR, _partition INT) WITH (connector = "
            f"'kafka', 'bootstrap.servers' = '{bootstrap}', topic_pattern = '^{prefix}-', "
            "partition_discovery_interval = '300 ms')"
        )
        db.execute("CREATE STREAM s AS SELECT * FROM t")
        sub = db.subscribe("s")
        db.start()
        first = poll_rows(sub, at_least=30)
        make(f"{prefix}-c", 1)
        produce(
            bootstrap, f"{prefix}-c", [(0, json.dumps({"id": i}).encode()) for i in range(30, 35)]
        )
        later = poll_rows(sub, at_least=5)
        db.checkpoint()
    # Reopened, it resumes every topic's partitions where it was (the offsets
    # log names a pattern's topics): only what came since.
    produce(bootstrap, f"{prefix}-b", [(0, json.dumps({"id": 35}).encode())])
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        sub = db.subscribe("s")
        db.start()
        again = poll_rows(sub, at_least=1)
    assert sorted((r["id"], r["_topic"]) for r in first) == [
        (i, f"{prefix}-a" if i < 20 else f"{prefix}-b") for i in range(30)
    ]
    assert sorted((r["id"], r["_topic"]) for r in later) == [
        (i, f"{prefix}-c") for i in range(30, 35)
    ]
    assert [(r["id"], r["_topic"]) for r in again] == [(35, f"{prefix}-b")]


def test_upsert_json_source_is_a_changelog(bootstrap: str, tmp_path: Path) -> None:
    """format = 'upsert-json' on a source: a key's new value retracts its old
    row and inserts the new one, a tombstone retracts it; an aggregate over
    the source equals the one over the last value per key, also after a
    restart (the keys' rows rebuilt from the topic up to the checkpoint)."""
    seed = int(os.environ.get("LAMINAR_TEST_SEED", str(int(time.time()))))
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    topic = new_topic(bootstrap, 2)
    state: dict[int, dict[str, object]] = {}

    def chunk(n: int) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for _ in range(n):
            key = int(rng.integers(0, 40))
            if key in state and rng.random() < 0.2:
                value = None
                del state[key]
            else:
                state[key] = {
                    "id": key,
                    "name": f"n{int(rng.integers(0, 3))}",
                    "qty": int(rng.integers(1, 100)),
                }
                value = json.dumps(state[key]).encode()
            p.produce(topic, key=json.dumps({"id": key}).encode(), value=value, partition=key % 2)
        assert p.flush(30) == 0

    def want() -> list[tuple[str, int, int]]:
        by: dict[str, list[int]] = {}
        for r in state.values():
            by.setdefault(str(r["name"]), []).append(int(r["qty"]))  # type: ignore[call-overload]
        return sorted((k, sum(v), len(v)) for k, v in by.items())

    def got(db: laminardb.Connection) -> list[tuple[str, int, int]]:
        rows = db.query("SELECT name, q, n FROM tot").to_pylist()
        return sorted((r["name"], r["q"], r["n"]) for r in rows if r["n"])

    def settle(db: laminardb.Connection) -> list[tuple[str, int, int]]:
        deadline = time.monotonic() + 30
        while (g := got(db)) != want() and time.monotonic() < deadline:
            time.sleep(0.2)
        return g

    chunk(300)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "id BIGINT NOT NULL, name VARCHAR, qty BIGINT, _weight BIGINT",
                ", format = 'upsert-json'",
            )
            + ";CREATE MATERIALIZED VIEW tot AS SELECT name, SUM(qty) AS q, COUNT(*) AS n "
            "FROM t GROUP BY name EMIT CHANGES"
        )
        db.start()
        assert settle(db) == want()
        db.checkpoint()
    chunk(300)  # updates and deletes of keys the first run set
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.start()
        assert settle(db) == want()
        bad = [r for r in db.metrics().to_pylist() if r["metric"] == "kafka_bad_records"]
    assert [r["value"] for r in bad] == [0]


def test_upsert_json_bad_value_keeps_the_row(bootstrap: str, tmp_path: Path) -> None:
    """An upsert-json record whose new value does not decode is a bad record
    that changes nothing: its key keeps its row (no retraction goes out)."""
    from confluent_kafka import Producer

    topic = new_topic(bootstrap, 1)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in [
        (1, b'{"id": 1, "name": "a", "qty": 5}'),
        (1, b'{"id": 1, "name": "a", "qty": '),  # cut short: does not decode
        (2, b'{"id": 2, "name": "b", "qty": 7}'),
    ]:
        p.produce(topic, key=json.dumps({"id": key}).encode(), value=value, partition=0)
    assert p.flush(30) == 0
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "id BIGINT NOT NULL, name VARCHAR, qty BIGINT, _weight BIGINT",
                ", format = 'upsert-json'",
            )
            + ";CREATE MATERIALIZED VIEW tot AS SELECT name, SUM(qty) AS q, COUNT(*) AS n "
            "FROM t GROUP BY name EMIT CHANGES"
        )
        db.start()
        deadline = time.monotonic() + 30
        want = [("a", 5, 1), ("b", 7, 1)]
        while time.monotonic() < deadline:
            rows = sorted(
                (r["name"], r["q"], r["n"]) for r in db.query("SELECT * FROM tot").to_pylist()
            )
            if ("b", 7, 1) in rows:
                break
            time.sleep(0.2)
        assert rows == want
        assert source_counters(db, "t")["kafka_bad_records"] == 1


# ---- raw format, headers, bad records ---------------------------------------------


def produce_full(bootstrap: str, topic: str, messages: list[dict[str, object]]) -> None:
    """Messages given as confluent-kafka produce() arguments, in order, flushed."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for m in messages:
        p.produce(topic, **m)
    assert p.flush(30) == 0


def source_counters(db: laminardb.Connection, name: str) -> dict[str, int]:
    return {
        r["metric"]: r["value"]
        for r in db.metrics().to_pylist()
        if r["kind"] == "source" and r["name"] == name
    }


DEAD_LETTER = (
    "CREATE SOURCE bad (_topic VARCHAR, _partition INT, _offset BIGINT, _key VARCHAR, "
    "payload VARCHAR, reason VARCHAR)"
)


def test_source_raw_payload_and_headers(bootstrap: str) -> None:
    """format 'raw' reads each payload as it is into the one VARCHAR column;
    _headers is a JSON object of the message's headers; a payload that is no
    UTF-8 is a bad record, delivered to the dead-letter source."""
    topic = new_topic(bootstrap, 1)
    payloads = [b"plain text", b'{"not": "parsed"}', "ünïcode ✓".encode(), b""]
    msgs: list[dict[str, object]] = [
        {
            "value": v,
            "key": f"k{i}".encode(),
            "partition": 0,
            "headers": [("trace", f"t-{i}".encode()), ('quote"d', b"a\\b\n"), ("none", None)],
        }
        for i, v in enumerate(payloads)
    ]
    msgs.insert(2, {"value": b"\xff\xfe-bin", "key": b"kb", "partition": 0})
    msgs.append({"value": None, "partition": 0})  # a tombstone: a NULL value
    produce_full(bootstrap, topic, msgs)
    with laminardb.open() as db:
        db.execute(DEAD_LETTER)
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "value VARCHAR, _key VARCHAR, _headers VARCHAR, _offset BIGINT",
                ", format = 'raw', bad_records = 'bad'",
            )
        )
        db.execute("CREATE STREAM s AS SELECT * FROM t; CREATE STREAM dl AS SELECT * FROM bad")
        sub, dl = db.subscribe("s"), db.subscribe("dl")
        db.start()
        got = sorted(poll_rows(sub, at_least=len(payloads) + 1), key=lambda r: r["_offset"])
        dead = poll_rows(dl, at_least=1)
        counters = source_counters(db, "t")
    assert [r["value"] for r in got] == [v.decode() for v in payloads] + [None]
    assert [r["_offset"] for r in got] == [0, 1, 3, 4, 5]
    assert [r["_key"] for r in got] == ["k0", "k1", "k2", "k3", None]
    for i, r in enumerate(got[:-1]):
        assert json.loads(r["_headers"]) == {"trace": f"t-{i}", 'quote"d': "a\\b\n", "none": None}
    assert json.loads(got[-1]["_headers"]) == {}
    assert counters["kafka_bad_records"] == 1
    assert len(dead) == 1
    d = dead[0]
    assert (d["_topic"], d["_partition"], d["_offset"], d["_key"]) == (topic, 0, 2, "kb")
    assert d["payload"] == "\\xff\\xfe-bin"
    assert "UTF-8" in d["reason"]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_bad_records_to_a_dead_letter_source(bootstrap: str, tmp_path: Path, fmt: str) -> None:
    """Each record that does not decode or fit is a row of the dead-letter
    source with its partition, offset, payload and reason; every good record
    is a row of the source; the pipeline goes on. Durable: across a restart
    neither is lost."""
    topic = new_topic(bootstrap, 2)
    msgs: list[tuple[int, bytes]] = []
    for i in range(40):
        value = json.dumps({"id": i, "v": i / 2}) if fmt == "json" else f"{i},{i / 2}"
        msgs.append((i % 2, value.encode()))
    bad = (
        [b'{"id": "text"}', b"{not json", b'{"id": 99999999999999999999}', b'{"id": 1, "v": [1]}']
        if fmt == "json"
        else [b"x,1.0", b"1,2,3", b'"open,1', b"5"]
    )
    for j, b in enumerate(bad):
        msgs.insert(5 + 7 * j, (j % 2, b))
    produce(bootstrap, topic, msgs)
    # Where each bad record landed: its partition's position among that
    # partition's messages.
    where = {}
    seen = [0, 0]
    for part, value in msgs:
        if value in bad:
            where[(part, seen[part])] = value
        seen[part] += 1
    sql = source_sql(
        bootstrap,
        topic,
        "id BIGINT NOT NULL, v DOUBLE",
        f", format = '{fmt}', bad_records = 'bad'",
    )
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            "CREATE SOURCE bad (_partition INT, _offset BIGINT, payload VARCHAR, reason VARCHAR)"
        )
        db.execute(sql)
        db.execute("CREATE STREAM s AS SELECT * FROM t; CREATE STREAM dl AS SELECT * FROM bad")
        sub, dl = db.subscribe("s"), db.subscribe("dl")
        db.start()
        got = poll_rows(sub, at_least=40)
        dead = poll_rows(dl, at_least=len(bad))
        counters = source_counters(db, "t")
        db.checkpoint()
    assert sorted(r["id"] for r in got) == list(range(40))
    assert counters["kafka_bad_records"] == len(bad)
    assert counters["kafka_failed"] == 0
    assert {(d["_partition"], d["_offset"]): d["payload"].encode() for d in dead} == where
    assert all(d["reason"] for d in dead)
    # After a restart, nothing is read again and new bad records still go.
    produce(bootstrap, topic, [(0, bad[0]), (1, msgs[0][1])])
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        sub, dl = db.subscribe("s"), db.subscribe("dl")
        db.start()
        again = poll_rows(sub, at_least=1)
        dead_again = poll_rows(dl, at_least=1)
    assert [r["id"] for r in again] == [0]
    assert [d["payload"].encode() for d in dead_again] == [bad[0]]


def test_bad_records_fail_stops_the_consumer(bootstrap: str) -> None:
    """bad_records = 'fail': the first bad record stops the consumer
    (kafka_failed = 1, the reason names its partition and offset); nothing
    after it reaches the source."""
    topic = new_topic(bootstrap, 1)
    first = [(0, json.dumps({"id": i}).encode()) for i in range(5)]
    produce(bootstrap, topic, first)
    with laminardb.open() as db:
        db.execute(source_sql(bootstrap, topic, "id BIGINT", ", bad_records = 'fail'"))
        db.execute("CREATE STREAM s AS SELECT * FROM t")
        sub = db.subscribe("s")
        db.start()
        got = poll_rows(sub, at_least=5)
        produce(bootstrap, topic, [(0, b"{broken"), (0, b'{"id": 100}')])
        time.sleep(2.0)
        later = poll_rows(sub, at_least=0, quiet=1.0)
        counters = source_counters(db, "t")
    assert sorted(r["id"] for r in got) == list(range(5))
    assert later == []
    assert counters["kafka_bad_records"] == 1
    assert counters["kafka_failed"] == 1


def test_raw_headers_bad_records_refusals(bootstrap: str) -> None:
    """Each bad declaration has its code and names the source."""
    topic = new_topic(bootstrap, 1)
    cases = [
        ("id BIGINT", ", bad_records = 'nosuch'", "LDB-1002"),
        ("id BIGINT", ", bad_records = 't'", "LDB-1002"),  # not declared before
        ("id BIGINT", ", bad_records = 'wrong'", "LDB-6002"),
        ("id BIGINT", ", bad_records = 'strict'", "LDB-6002"),
        ("id BIGINT", ", bad_records = ''", "LDB-6002"),
        ("a VARCHAR, b VARCHAR", ", format = 'raw'", "LDB-6002"),
        ("a BIGINT, _key VARCHAR", ", format = 'raw'", "LDB-6002"),
        ("a VARCHAR, _headers BIGINT", "", "LDB-6002"),
    ]
    with laminardb.open() as db:
        db.execute("CREATE SOURCE wrong (_partition VARCHAR)")
        db.execute("CREATE SOURCE strict (payload VARCHAR NOT NULL)")
        for cols, extra, code in cases:
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(source_sql(bootstrap, topic, cols, extra))
            assert e.value.code == code, (cols, extra, str(e.value))
            assert "'t'" in str(e.value)
        # A dead-letter source goes after its Kafka source, not before.
        db.execute("CREATE SOURCE dead (payload VARCHAR, reason VARCHAR)")
        db.execute(source_sql(bootstrap, topic, "id BIGINT", ", bad_records = 'dead'"))
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute("DROP SOURCE dead")
        assert e.value.code == "LDB-1007", str(e.value)
        assert "'t'" in str(e.value)
        db.execute("DROP SOURCE t")
        db.execute("DROP SOURCE dead")


def test_sink_raw_writes_one_column_as_it_is(bootstrap: str, tmp_path: Path) -> None:
    """format = 'raw': each message's value is the one column besides the key,
    as it is (a string's bytes, a number's text), the key its key column's."""
    texts, nums = new_topic(bootstrap), new_topic(bootstrap)
    lines = ['{"as": "is"}', "plain, with a comma", "ünï ✓", ""]
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(
            "CREATE SOURCE t (id BIGINT, k VARCHAR, line VARCHAR);"
            "CREATE STREAM s AS SELECT k, line FROM t;"
            "CREATE STREAM n AS SELECT id * 10 AS id10 FROM t;"
        )
        db.execute(sink_sql(bootstrap, texts, ", format = 'raw', key = 'k'"))
        db.execute(
            f"CREATE SINK out_n FROM n WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{nums}', format = 'raw')"
        )
        db.insert(
            "t",
            {"id": list(range(4)), "k": [f"k{i}" for i in range(4)], "line": lines},
        )
        db.run_until_idle()
        db.checkpoint()
    got = read_committed(bootstrap, texts, at_least=4)
    assert sorted(got) == sorted((f"k{i}".encode(), v.encode()) for i, v in enumerate(lines))
    got_n = read_committed(bootstrap, nums, at_least=4)
    assert sorted(v for _, v in got_n) == [b"0", b"10", b"20", b"30"]
    assert all(k is None for k, _ in got_n)


def test_sink_raw_refusals(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(DDL)  # s: id, k, v
        for extra in (", format = 'raw'", ", format = 'raw', key = 'k'"):
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(sink_sql(bootstrap, topic, extra))
            assert e.value.code == "LDB-6002", str(e.value)
            assert "'out'" in str(e.value)
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(f"CREATE SINK f FROM s INTO FILE (path = '{tmp_path}/f', format = 'raw')")
        assert e.value.code == "LDB-6002", str(e.value)
        assert "'raw'" in str(e.value)


# ---- avro -------------------------------------------------------------------------


def _zigzag(n: int) -> bytes:
    """An Avro long: zigzag, then a base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _avro_string(s: str) -> bytes:
    b = s.encode()
    return _zigzag(len(b)) + b


def test_avro_round_trip_through_sink_and_source(bootstrap: str, tmp_path: Path) -> None:
    """format = 'avro': rows written by an Avro sink (schema from the
    stream's columns) come back field by field through an Avro source, NULLs
    included; Avro records that do not decode go to the dead-letter source."""
    import struct

    topic = new_topic(bootstrap, 2)
    n = 50
    data = {
        "id": list(range(n)),
        "k": [None if i % 7 == 3 else f"k{i % 5}-ü" for i in range(n)],
        "v": [None if i % 11 == 4 else i * 1.25 for i in range(n)],
        "ok": [i % 2 == 0 for i in range(n)],
        "n32": [i - 25 for i in range(n)],
    }
    cols = "id BIGINT NOT NULL, k VARCHAR, v DOUBLE, ok BOOLEAN, n32 INT"
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(f"CREATE SOURCE t ({cols}); CREATE STREAM s AS SELECT * FROM t;")
        db.execute(sink_sql(bootstrap, topic, ", format = 'avro', key = 'id'"))
        db.insert("t", data)
        db.run_until_idle()
        db.checkpoint()
    # Not Avro of the schema: a truncated record, bytes after a whole one.
    # (Each field of a schema made from columns is the union ["null", T].)
    whole = b"\x02" + _zigzag(7) + b"\x00" + b"\x00" + b"\x02\x01" + b"\x02" + _zigzag(3)
    produce(bootstrap, topic, [(0, whole[:3]), (1, whole + b"\x00\x00")])
    with laminardb.open() as db:
        db.execute(DEAD_LETTER)
        db.execute(
            source_sql(
                bootstrap,
                topic,
                cols + ", _offset BIGINT",
                ", format = 'avro', bad_records = 'bad'",
            ).replace("CREATE SOURCE t", "CREATE SOURCE back")
        )
        db.execute("CREATE STREAM r AS SELECT * FROM back; CREATE STREAM dl AS SELECT * FROM bad")
        sub, dl = db.subscribe("r"), db.subscribe("dl")
        db.start()
        got = poll_rows(sub, at_least=n)
        dead = poll_rows(dl, at_least=2)
    by_id = {r["id"]: r for r in got}
    assert sorted(by_id) == list(range(n)), len(got)
    for i in range(n):
        r = by_id[i]
        assert (r["k"], r["v"], r["ok"], r["n32"]) == (
            data["k"][i],
            data["v"][i],
            data["ok"][i],
            data["n32"][i],
        ), r
    assert sorted(d["reason"] for d in dead) == [
        "bytes after the Avro record",
        "not an Avro record of the schema",
    ]
    # The writer's schema given: its fields in another order, one unknown.
    topic2 = new_topic(bootstrap, 1)
    schema = json.dumps(
        {
            "type": "record",
            "name": "w",
            "fields": [
                {"name": "extra", "type": "string"},
                {"name": "v", "type": "double"},
                {"name": "id", "type": "long"},
            ],
        }
    )
    recs = [_avro_string(f"x{i}") + struct.pack("<d", i / 4) + _zigzag(-i) for i in range(5)]
    produce(bootstrap, topic2, [(0, r) for r in recs])
    with laminardb.open() as db:
        db.execute(
            source_sql(
                bootstrap,
                topic2,
                "id BIGINT, v DOUBLE, k VARCHAR",
                f", format = 'avro', 'avro.schema' = '{schema}'",
            )
        )
        db.execute("CREATE STREAM s AS SELECT * FROM t")
        sub = db.subscribe("s")
        db.start()
        got = poll_rows(sub, at_least=5)
    assert sorted((r["id"], r["v"], r["k"]) for r in got) == sorted(
        (-i, i / 4, None) for i in range(5)
    )


def test_avro_refusals(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap, 1)
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        for cols, extra in [
            ("id BIGINT", ", format = 'avro', 'avro.schema' = '{\"type\": \"nope\"}'"),
            ("id BIGINT", ", format = 'avro', 'avro.schema' = '\"long\"'"),
            ("d DECIMAL(10, 2)", ", format = 'avro'"),
        ]:
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(source_sql(bootstrap, topic, cols, extra))
            assert e.value.code == "LDB-6002", str(e.value)
            assert "'t'" in str(e.value)
        db.execute("CREATE SOURCE x (d DECIMAL(10, 2)); CREATE STREAM s AS SELECT * FROM x")
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(sink_sql(bootstrap, topic, ", format = 'avro'"))
        assert e.value.code == "LDB-6002", str(e.value)


def test_avro_confluent_wire_prefix(bootstrap: str) -> None:
    """'avro.confluent_wire' = 'true': each record follows Confluent's five
    bytes (a zero magic byte, a big-endian schema id); a message without them
    is a bad record."""
    import struct

    topic = new_topic(bootstrap, 1)
    # id BIGINT, k VARCHAR: each field ["null", T] (a schema made from columns).
    recs = [b"\x02" + _zigzag(i) + b"\x02" + _avro_string(f"k{i}") for i in range(4)]
    msgs = [(0, b"\x00" + struct.pack(">I", 42) + r) for r in recs]
    msgs.insert(2, (0, recs[0]))  # no prefix
    produce(bootstrap, topic, msgs)
    with laminardb.open() as db:
        db.execute(DEAD_LETTER)
        db.execute(
            source_sql(
                bootstrap,
                topic,
                "id BIGINT, k VARCHAR",
                ", format = 'avro', 'avro.confluent_wire' = 'true', bad_records = 'bad'",
            )
        )
        db.execute("CREATE STREAM s AS SELECT * FROM t; CREATE STREAM dl AS SELECT * FROM bad")
        sub, dl = db.subscribe("s"), db.subscribe("dl")
        db.start()
        got = poll_rows(sub, at_least=4)
        dead = poll_rows(dl, at_least=1)
    assert sorted((r["id"], r["k"]) for r in got) == [(i, f"k{i}") for i in range(4)]
    assert [(d["_offset"], d["reason"].startswith("no Confluent wire prefix")) for d in dead] == [
        (2, True)
    ]


def test_avro_date_smallint_timestamp_round_trip(bootstrap: str, tmp_path: Path) -> None:
    """DATE (int, logicalType date), SMALLINT/TINYINT (int) and TIMESTAMP
    (long, timestamp-micros) columns through an Avro sink and back."""
    import datetime

    import pyarrow as pa

    topic = new_topic(bootstrap, 1)
    dates = [datetime.date(2024, 2, 3), None, datetime.date(1969, 12, 31)]
    smalls = [7, -300, None]
    tinys = [1, None, -128]
    stamps = [datetime.datetime(2024, 2, 3, 4, 5, 6, 500000), None, datetime.datetime(1970, 1, 1)]
    cols = "d DATE, s SMALLINT, b TINYINT, ts TIMESTAMP"
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(f"CREATE SOURCE t ({cols}); CREATE STREAM s AS SELECT * FROM t;")
        db.execute(sink_sql(bootstrap, topic, ", format = 'avro'"))
        db.insert(
            "t",
            pa.table(
                {
                    "d": pa.array(dates, pa.date32()),
                    "s": pa.array(smalls, pa.int16()),
                    "b": pa.array(tinys, pa.int8()),
                    "ts": pa.array(stamps, pa.timestamp("us")),
                }
            ),
        )
        db.run_until_idle()
        db.checkpoint()
    with laminardb.open() as db:
        db.execute(source_sql(bootstrap, topic, cols, ", format = 'avro'"))
        db.execute("CREATE STREAM s AS SELECT * FROM t")
        sub = db.subscribe("s")
        db.start()
        got = poll_rows(sub, at_least=3)
        counters = source_counters(db, "t")
    assert counters["kafka_bad_records"] == 0
    assert sorted(((r["d"], r["s"], r["b"], r["ts"]) for r in got), key=str) == sorted(
        zip(dates, smalls, tinys, stamps, strict=True), key=str
    )
