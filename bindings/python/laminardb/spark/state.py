"""Streaming: each partition's engine state carried from micro-batch to micro-batch.

A task restores the state the previous batch id left under ``state_location``
(a durable engine checkpoint per (partition, batch id)), pushes its
micro-batch and publishes the new state atomically, so a retried task or a
restarted query gives the same output once (docs/SPARK.md, "Streaming").
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from laminardb.errors import error_for
from laminardb.spark.compat import (
    _CONFIG_CONFLICT,
    _CONFIG_VALUE,
    _SCHEMA_INVALID,
    _map_in_arrow,
    _spark_schema,
)
from laminardb.spark.partition import (
    _batch_task,
    _drain,
    _event_ms,
    _open_task_db,
    _source_columns,
    _spark_out_schema,
)
from laminardb.spark.planning import Plan, TwoPhase

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame


#: Spark's local property holding the micro-batch id of a streaming query.
_BATCH_ID_PROPERTY = "streaming.sql.batchId"


#: Durable settings of a task's engine in streaming mode: checkpoints are taken
#: explicitly at the end of each micro-batch, never by the timer.
_STATE_SETTINGS = {"checkpoint_interval": "1000 min", "checkpoint_keep": 1}


_STATE_DIR = re.compile(r"^b(\d+)$")


def _stream_location(p: Plan, state_location: str | os.PathLike[str] | None) -> str:
    """The state location of a streaming windowed query, checked.

    Raises:
        ConfigError: LDB-6002 without a state location.
        SchemaError: LDB-2003 when the source declares no WATERMARK.
    """
    if state_location is None:
        raise error_for(
            _CONFIG_VALUE,
            "LDB-6002: a streaming DataFrame needs state_location= (a directory beside "
            "the query's checkpoint location) to carry each partition's windows",
        )
    if p.event_time is None:
        raise error_for(
            _SCHEMA_INVALID,
            f"LDB-2003: source '{p.source}' declares no WATERMARK: stream '{p.stream}' "
            "would never close a window across micro-batches",
            object=p.source,
        )
    return os.fspath(state_location)


def _stored_query(location: Path) -> dict[str, Any] | None:
    """What ``location/query.json`` records (None when there is none)."""
    path = location / "query.json"
    if not path.exists():
        return None
    stored: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return stored


def _check_state_location(location: Path, p: Plan, partitions: int, *,
                          two_phase: bool = False) -> None:
    """Record what the states under ``location`` belong to; refuse another query.

    State is kept per partition id, so a restart must hash the rows into the
    same number of partitions and run the same SQL.

    Raises:
        ConfigError: LDB-6003 when ``location`` holds the state of a query
            with other SQL or another number of partitions.
    """
    location.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"sql": p.sql, "stream": p.stream, "partitions": partitions}
    if two_phase:  # a different state layout: the two paths do not share one
        meta["two_phase"] = True
    path = location / "query.json"
    stored = _stored_query(location)
    if stored is not None:
        if stored != meta:
            what = ("partitions" if stored.get("two_phase") == meta.get("two_phase")
                    else "aggregation (two_phase)") if stored.get("sql") == p.sql else "SQL"
            raise error_for(
                _CONFIG_CONFLICT,
                f"LDB-6003: state_location '{location}' holds the state of a query with "
                f"other {what} ({stored.get('partitions')} partitions): keep the SQL and "
                "partitions of a streaming query, or use a new location",
            )
        return
    tmp = location / ".query.json.tmp"
    tmp.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(tmp, path)


def _latest_state(part_dir: Path, before: int) -> Path | None:
    """The newest state directory ``b<id>`` of a partition with ``id < before``."""
    best: tuple[int, Path] | None = None
    if part_dir.is_dir():
        for entry in part_dir.iterdir():
            match = _STATE_DIR.match(entry.name)
            if match is not None:
                batch_id = int(match.group(1))
                if batch_id < before and (best is None or batch_id > best[0]):
                    best = (batch_id, entry)
    return None if best is None else best[1]


def _global_max_ts(location: Path, before: int) -> int | None:
    """The largest event time every partition had seen before micro-batch ``before``.

    Each partition records its own in its state's ``meta.json``; their
    maximum, less the watermark delay, is the watermark a single engine
    reading all partitions would have had -- Spark's own watermark is global
    the same way (and lags a micro-batch the same way).
    """
    best: int | None = None
    for part_dir in location.glob("p*"):
        state = _latest_state(part_dir, before)
        if state is None:
            continue
        meta = json.loads((state / "meta.json").read_text(encoding="utf-8"))
        if meta["max_ts"] is not None and (best is None or meta["max_ts"] > best):
            best = int(meta["max_ts"])
    return best


def _stream_task(p: Plan, location: str,
                 batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The body of one streaming task: restore, push the micro-batch, save.

    The state of (partition, batch id) is the engine's checkpoint after the
    micro-batch plus its largest event time; the task of batch ``n`` starts
    from the newest state below ``n``, so a retried or re-run batch starts
    from the same state and gives the same rows.

    Args:
        p: The plan.
        location: The state location.
        batches: The partition's rows of this micro-batch.

    Yields:
        Result record batches (windows the watermark closed).
    """
    from pyspark import TaskContext

    ctx = TaskContext.get()
    assert ctx is not None
    batch_id = int(ctx.getLocalProperty(_BATCH_ID_PROPERTY) or 0)
    root = Path(location)
    part_dir = root / f"p{ctx.partitionId():05d}"
    prev = _latest_state(part_dir, batch_id)
    floor = _global_max_ts(root, batch_id)
    out_schema = _spark_out_schema(p)
    # Sort the micro-batch by event time (then the key) so every attempt
    # pushes the same rows in the same order, whatever order the shuffle gave.
    received = list(batches)
    table = pa.Table.from_batches(received) if received else p.input_schema.empty_table()
    if table.num_rows:
        order = [(p.event_time, "ascending")] + [(k, "ascending") for k in p.keys]
        table = table.take(pc.sort_indices(table, sort_keys=order))
    max_ts = None if prev is None else json.loads(
        (prev / "meta.json").read_text(encoding="utf-8"))["max_ts"]
    if table.num_rows:
        batch_max = pc.max(_event_ms(p, table)).as_py()
        max_ts = batch_max if max_ts is None else max(max_ts, batch_max)
    yield from _run_with_state(
        p, prev, part_dir, batch_id, table.to_batches(), before=None,
        after=None if floor is None else floor - p.delay_ms, max_ts=max_ts,
        out_schema=out_schema)


def _run_with_state(engine: Plan, prev: Path | None, part_dir: Path, batch_id: int,
                    batches: list[pa.RecordBatch], *, before: int | None, after: int | None,
                    max_ts: int | None, out_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """One stateful micro-batch of one partition's engine.

    Restores state ``prev`` (None: a fresh engine), advances the watermark to
    ``before``, pushes ``batches``, advances to ``after`` (None: no advance),
    yields every result batch, then checkpoints and publishes the state with
    ``max_ts`` as ``part_dir/b<batch_id>``.
    """
    work = Path(tempfile.mkdtemp(prefix="laminardb-spark-"))
    try:
        data = work / "db"
        if prev is not None:
            shutil.copytree(prev / "db", data)
        with _open_task_db(engine, os.fspath(data), _STATE_SETTINGS) as db:
            sub = db.subscribe(engine.stream)
            src = db.source(engine.source)
            if before is not None:
                src.watermark(before)
            for batch in batches:
                src.push(batch)
                yield from _drain(db, sub, out_schema)
            if after is not None:
                src.watermark(after)
            yield from _drain(db, sub, out_schema)
            db.checkpoint()
        (work / "meta.json").write_text(json.dumps({"max_ts": max_ts}), encoding="utf-8")
        _publish_state(part_dir, batch_id, work, data)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _publish_state(part_dir: Path, batch_id: int, work: Path, data: Path) -> None:
    """Store a task's state as ``part_dir/b<batch_id>`` atomically; prune old ones.

    A state already there (an earlier attempt of the same batch wrote it) is
    kept: attempts of one batch id produce the same state. States older than
    the one before this batch are removed -- a re-run of this batch id needs
    that one, nothing earlier.
    """
    part_dir.mkdir(parents=True, exist_ok=True)
    final = part_dir / f"b{batch_id}"
    if not final.exists():
        staging = Path(tempfile.mkdtemp(prefix=f".b{batch_id}-", dir=part_dir))
        shutil.copytree(data, staging / "db")
        shutil.copy2(work / "meta.json", staging / "meta.json")
        try:
            os.rename(staging, final)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another attempt won the race
    keep = _latest_state(part_dir, batch_id)
    for entry in part_dir.iterdir():
        match = _STATE_DIR.match(entry.name)
        if match is not None and int(match.group(1)) < batch_id and entry != keep:
            shutil.rmtree(entry, ignore_errors=True)


def _two_phase_stream_frame(df: DataFrame, p: Plan, split: TwoPhase, location: str,
                            partitions: int,
                            out_type: Any) -> DataFrame:  # noqa: ANN401 -- a StructType
    """Build the streaming two-phase plan.

    Per micro-batch: the partial stage per input partition (stateless: every
    window of the micro-batch's rows closes at its end), a shuffle of the
    partial rows, the final stage per partition with its windows carried
    across micro-batches as in :func:`_stream_task`.
    """
    from pyspark.sql import functions as F
    partial = _map_in_arrow(
        _source_columns(df, split.partial),
        functools.partial(_stream_partial_task, p, split, location),
        _spark_schema(split.partial.output_schema))
    shuffled = partial.repartition(partitions, *[F.col(k) for k in split.keys])
    return _map_in_arrow(shuffled, functools.partial(_stream_final_task, p, split, location),
                         out_type)


def _batch_id() -> tuple[int, int]:
    """(micro-batch id, partition id) of the running task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    assert ctx is not None
    return int(ctx.getLocalProperty(_BATCH_ID_PROPERTY) or 0), ctx.partitionId()


def _stream_partial_task(p: Plan, split: TwoPhase, location: str,
                         batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The partial stage of one input partition of a micro-batch.

    Yields the partial rows of every window the partition's rows touch, then
    records the partition's largest event time under
    ``location/maxts/b<batch id>/`` for the final stage (which Spark starts
    only once every partial task has finished).
    """
    batch_id, part = _batch_id()
    seen: list[int] = []

    def counted(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                top = pc.max(_event_ms(p, batch)).as_py()
                if top is not None:
                    seen.append(int(top))
            yield batch

    yield from _batch_task(split.partial, counted(batches), final=True)
    if seen:
        folder = Path(location) / "maxts" / f"b{batch_id}"
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".m{part:05d}-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(max(seen)))
        os.replace(tmp, folder / f"m{part:05d}.json")


def _batch_max_ts(location: Path, batch_id: int) -> int | None:
    """The largest event time of micro-batch ``batch_id`` over all its rows."""
    best: int | None = None
    for path in (location / "maxts" / f"b{batch_id}").glob("m*.json"):
        value = int(json.loads(path.read_text(encoding="utf-8")))
        best = value if best is None else max(best, value)
    return best


def _stream_final_task(p: Plan, split: TwoPhase, location: str,
                       batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The final stage of one partition of a micro-batch.

    Restores the partition's state of the batch before (its open windows and
    the largest event time of every earlier micro-batch), pushes the partial
    rows (sorted, so every attempt pushes the same rows in the same order)
    and advances the watermark to the largest event time of all rows through
    this micro-batch, less the delay: a window closes in the micro-batch whose
    rows pass it, and a partial row for a window an earlier micro-batch
    closed is late (dropped, counted in the final stream's late rows).
    """
    batch_id, part = _batch_id()
    root = Path(location)
    part_dir = root / f"p{part:05d}"
    prev = _latest_state(part_dir, batch_id)
    before = None if prev is None else json.loads(
        (prev / "meta.json").read_text(encoding="utf-8"))["max_ts"]
    now = _batch_max_ts(root, batch_id)
    through = before if now is None else now if before is None else max(before, now)
    out_schema = _spark_out_schema(p)
    received = list(batches)
    table = pa.Table.from_batches(received) if received else None
    if table is not None and table.num_rows:
        table = table.take(pc.sort_indices(
            table, sort_keys=[(c, "ascending") for c in table.column_names]))
    yield from _run_with_state(
        split.final, prev, part_dir, batch_id, [] if table is None else table.to_batches(),
        before=None if before is None else before - p.delay_ms,
        after=None if through is None else through - p.delay_ms, max_ts=through,
        out_schema=out_schema)
    for old in (root / "maxts").glob("b*"):
        match = _STATE_DIR.match(old.name)
        if match is not None and int(match.group(1)) < batch_id:
            shutil.rmtree(old, ignore_errors=True)
