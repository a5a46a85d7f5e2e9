"""Lookup joins replayed after a crash join the table as the live run did.

A child process writes a table (upserts and deletes) and pushes stream rows
that a lookup join reads, interleaved, running the engine after each write
(so each stream row sees the table as of the writes before it), with a sync
WAL, a file sink on the join, and a checkpoint in the middle that publishes
the first part; then it is killed (SIGKILL) after the rest is acknowledged.
The restart replays the WAL after the checkpoint and publishes the rest: every
stream row must be published once, joined with the table as it was when the
row was first processed (a model of the table replayed in push order) -- not
with the table as recovery left it.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _oracle_util import announce_seed, examples, seed_strategy_bounds
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import laminardb

DDL = """
CREATE TABLE rates (k VARCHAR, rate BIGINT, PRIMARY KEY (k));
CREATE SOURCE orders (id BIGINT, k VARCHAR);
CREATE STREAM j AS SELECT o.id, o.k, r.rate FROM orders o LEFT JOIN rates r ON o.k = r.k;
"""

CHILD = """
import json, os, signal, sys
import laminardb
root, sink, steps, ckpt = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
db = laminardb.open(root, checkpoint_interval="1 hour", wal_mode="sync", cores=int(sys.argv[5]))
db.execute(sys.argv[6])
db.execute(f"CREATE SINK out FROM j INTO FILE (path = '{sink}', format = 'jsonl')")
for i, (kind, rows) in enumerate(steps):
    if kind == "upsert":
        db.upsert("rates", rows)
    elif kind == "delete":
        db.delete("rates", rows)
    else:
        db.insert("orders", rows)
    db.run_until_idle()
    if i == ckpt:
        db.checkpoint()
os.kill(os.getpid(), signal.SIGKILL)
"""


def make_steps(rng: random.Random, n: int) -> list[tuple[str, list[dict]]]:
    """Upserts, deletes and order batches over a few keys, interleaved."""
    keys = [f"k{i}" for i in range(rng.choice([1, 3, 6]))]
    steps: list[tuple[str, list[dict]]] = []
    next_id = 0
    for _ in range(n):
        x = rng.random()
        if x < 0.35:
            ks = rng.sample(keys, rng.randrange(1, len(keys) + 1))
            steps.append(("upsert", [{"k": k, "rate": rng.randrange(1, 1000)} for k in ks]))
        elif x < 0.45:
            steps.append(("delete", [{"k": rng.choice(keys)}]))
        else:
            rows = []
            for _ in range(rng.randrange(1, 6)):
                rows.append({"id": next_id, "k": rng.choice([*keys, None])})
                next_id += 1
            steps.append(("orders", rows))
    return steps


def model(steps: list[tuple[str, list[dict]]]) -> list[tuple]:
    """Each order joined with the table as the writes before it left it."""
    table: dict[str, int] = {}
    out = []
    for kind, rows in steps:
        for r in rows:
            if kind == "upsert":
                table[r["k"]] = r["rate"]
            elif kind == "delete":
                table.pop(r["k"], None)
            else:
                out.append((r["id"], r["k"], table.get(r["k"]) if r["k"] is not None else None))
    return out


def published(sink: Path) -> list[tuple]:
    """Every row the sink published, from its part files."""
    out = []
    for part in sorted(sink.glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            r = json.loads(line)
            out.append((r["id"], r["k"], r["rate"]))
    return out


@settings(max_examples=examples(12), deadline=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(*seed_strategy_bounds()), cores=st.sampled_from([1, 2]))
def test_lookup_join_replay_matches_live(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cores: int
) -> None:
    """Killed after the sink published its first part: the replay publishes the
    rest joined as the live run joined it."""
    announce_seed(seed)
    rng = random.Random(seed)
    steps = make_steps(rng, rng.randrange(10, 60))
    ckpt = rng.randrange(0, len(steps) // 2)
    base = tmp_path_factory.mktemp("lookup")
    root, sink = base / "data", base / "out"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(root),
            str(sink),
            json.dumps(steps),
            str(ckpt),
            str(cores),
            DDL,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    first = published(sink)
    with laminardb.open(root, checkpoint_interval="1 hour", wal_mode="sync", cores=cores) as db:
        db.run_until_idle()
        db.checkpoint()
    got = published(sink)
    assert got[: len(first)] == first  # what was published stays
    want = model(steps)
    assert sorted(got, key=repr) == sorted(want, key=repr), f"seed {seed}"
