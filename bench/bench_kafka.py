"""bench_kafka.py -- the Kafka pipeline most Python users write, beside our source.

The same topic of W1 trades (JSON, 4 partitions; bench/bench_kafka.c's data) read
two ways, each into a LaminarDB source on an in-memory database with
``laminardb.open()`` and ``start()``:

* python: a ``confluent_kafka.Consumer`` assigned the 4 partitions from their
  start, ``consume(num_messages=4096)`` in a loop, ``json.loads`` of each value
  and ``Connection.insert`` of each batch's rows (a list of dicts), timed until
  every row was inserted;
* source: ``CREATE SOURCE ... WITH (connector = 'kafka')`` (the core's consumer),
  timed from the CREATE until its ``pushed_rows`` metric reaches N.

    python bench/bench_kafka.py BOOTSTRAP -n 1e6 --reps 3 [--topic T] [--bare-rate R]

``--topic`` reads an existing topic of N trades (``bench_kafka``'s ``json topic``
line names it); without it the trades are written to a fresh topic first (not
timed). ``--bare-rate`` takes bench_kafka's bare librdkafka rate of the same run
(M rows/s) and adds each figure's ratio to it. Prints medians and
``RESULT kafka_python|kafka_py_source X M rows/s [ratio R]`` lines for
bench/run.sh. Needs ``confluent-kafka`` (bench/requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid

import laminardb

NPART = 4
SCHEMA = "symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT, WATERMARK FOR ts AS ts"
MASK = (1 << 64) - 1


def mix(z: int) -> int:
    """splitmix64's finalizer (the trades of shared/bench/limit_vwap.c)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def write_topic(bootstrap: str, topic: str, n: int) -> None:
    """N trades as JSON objects, trade i to partition i % 4 of a new topic."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, NPART, 1)]).values():
        f.result(30)
    p = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "queue.buffering.max.messages": 1000000}
    )
    for i in range(n):
        z = mix(((i + 1) * 0x9E3779B97F4A7C15) & MASK)
        value = (
            f'{{"symbol":"S{z % 100:03d}","price":{100.0 + ((z >> 24) % 100000) / 1000.0:.3f},'
            f'"volume":{1 + (z >> 8) % 1000},"ts":{1700000000000 + i}}}'
        )
        while True:
            try:
                p.produce(topic, value.encode(), partition=i % NPART)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    if p.flush(120) != 0:
        raise SystemExit("bench_kafka.py: could not write the topic")


def python_client(bootstrap: str, topic: str, n: int, batch: int) -> float:
    """Seconds for the confluent-kafka loop + insert to bring in N rows."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    with laminardb.open() as db:
        db.execute(f"CREATE SOURCE trades ({SCHEMA})")
        db.start()
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-py-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
            }
        )
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(NPART)])
        got = 0
        while got < n:
            rows = [json.loads(m.value()) for m in c.consume(batch, 0.1) if m.error() is None]
            if rows:
                db.insert("trades", rows)
                got += len(rows)
        took = time.perf_counter() - t0
        c.close()
    return took


def pushed_rows(db: laminardb.Connection) -> int:
    """The source's pushed_rows metric."""
    for r in db.metrics().to_pylist():
        if r["kind"] == "source" and r["name"] == "trades" and r["metric"] == "pushed_rows":
            return int(r["value"])
    return 0


def our_source(bootstrap: str, topic: str, n: int) -> float:
    """Seconds for the core's Kafka source to push N rows."""
    with laminardb.open() as db:
        db.start()
        t0 = time.perf_counter()
        db.execute(
            f"CREATE SOURCE trades ({SCHEMA}) WITH (connector = 'kafka', "
            f"'bootstrap.servers' = '{bootstrap}', topic = '{topic}', "
            "partition_discovery_interval = 'none')"
        )
        while pushed_rows(db) < n:
            time.sleep(0.005)
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bootstrap", nargs="?", default=os.environ.get("LAMINAR_KAFKA_BOOTSTRAP"))
    ap.add_argument("-n", type=float, default=1e6)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--topic")
    ap.add_argument("--bare-rate", type=float, help="bench_kafka's bare rate, M rows/s")
    args = ap.parse_args(argv)
    if not args.bootstrap:
        ap.error("no broker: BOOTSTRAP or LAMINAR_KAFKA_BOOTSTRAP")
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        print("bench_kafka.py: no confluent-kafka (pip install -r bench/requirements.txt)")
        return 1
    n = int(args.n)
    topic = args.topic
    if topic is None:
        topic = f"bench-py-w1-{uuid.uuid4().hex[:12]}"
        t0 = time.perf_counter()
        write_topic(args.bootstrap, topic, n)
        print(f"kafka-py: {n} W1 trades (JSON) into {topic} in {time.perf_counter() - t0:.1f} s")
    py, ours = [], []
    for r in range(args.reps):
        py.append(python_client(args.bootstrap, topic, n, args.batch))
        ours.append(our_source(args.bootstrap, topic, n))
        print(f"kafka-py: rep {r}: python client {py[-1]:.3f} s, source {ours[-1]:.3f} s")
        sys.stdout.flush()
    rate_py, rate_ours = n / statistics.median(py) / 1e6, n / statistics.median(ours) / 1e6
    print(f"kafka-py: confluent-kafka + json.loads + insert {rate_py:.3f} M rows/s")
    print(f"kafka-py: our Kafka source (consume+decode+push) {rate_ours:.3f} M rows/s")
    print(f"kafka-py: python client / our source: {rate_py / rate_ours:.2f}")
    for tag, rate in (("kafka_python", rate_py), ("kafka_py_source", rate_ours)):
        ratio = f" ratio {rate / args.bare_rate:.2f}" if args.bare_rate else ""
        print(f"RESULT {tag} {rate:.3f} M rows/s{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
