"""One engine per Spark partition: the batch tasks and the frames that feed them.

The input frame (the source's columns, hash-partitioned by the key and sorted
by event time, or the two-phase plan's partial/shuffle/final stages), the body
of a task (:func:`_batch_task`: push every Arrow batch, drain the results,
close every window at the end), and the same stage run in Spark's JVM
(``engine="jvm"``, :func:`_jvm_stage`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import laminardb
from laminardb.connection import _option_text
from laminardb.errors import error_for
from laminardb.spark.compat import (
    _CONFIG_VALUE,
    _JVM_STAGE,
    _arrow_schema,
    _is_connect,
    _jvm_class,
    _map_in_arrow,
    _spark_schema,
    jvm_engine_available,
)
from laminardb.spark.planning import Input, Plan, TwoPhase

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame


#: The watermark that closes every window (INT64_MAX).
FINAL_WATERMARK = 2**63 - 1


#: Rows per Arrow batch the JVM engine pushes into each task's engine.
_JVM_BATCH_ROWS = 65536


_ENGINES = ("auto", "python", "jvm")


#: ``SparkFrames.stage`` modes: a stage without the final watermark (a stream
#: without windows), a streaming micro-batch's partial and final stages.
_JVM_OPEN, _JVM_PARTIAL, _JVM_FINAL = 0, 1, 2


def _partitions(df: DataFrame, partitions: int | None) -> int:
    """The number of engines: ``partitions`` or ``spark.sql.shuffle.partitions``."""
    if partitions is None:
        partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    return partitions


def _source_columns(df: DataFrame, p: Plan | Input) -> DataFrame:
    """``df`` reduced to the source's columns, named and (integers) cast as it declares."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    have = _arrow_schema(df.schema)
    by_lower = {name.lower(): name for name in have.names}
    cols = []
    for field in p.input_schema:
        name = by_lower[field.name.lower()]
        col = F.col(name)
        if pa.types.is_integer(field.type) and have.field(name).type != field.type:
            col = col.cast(from_arrow_type(field.type))
        cols.append(col.alias(field.name))
    return df.select(*cols)


def _two_phase_frame(df: DataFrame, split: TwoPhase, partitions: int | None,
                     out_type: Any) -> DataFrame:  # noqa: ANN401 -- a Spark StructType
    """The batch two-phase plan: partial per input partition, shuffle, final.

    Each input partition runs the partial stage as Spark hands it over (no
    shuffle, no sort: its source has no watermark, every window stays open
    until the partition ends, so memory is one partial row per (window,
    group) the partition holds); only the partial rows are shuffled, hashed on
    the keys and window start, and each final partition combines them.
    """
    from pyspark.sql import functions as F
    partial = _map_in_arrow(
        _source_columns(df, split.partial),
        functools.partial(_batch_task, split.partial, final=True),
        _spark_schema(split.partial.output_schema))
    shuffled = partial.repartition(_partitions(df, partitions), *[F.col(k) for k in split.keys])
    return _map_in_arrow(shuffled, functools.partial(_batch_task, split.final, final=True),
                         out_type)


def _input_frame(df: DataFrame, p: Plan, partitions: int | None) -> tuple[DataFrame, int]:
    """Select, cast, partition (and, in batch, sort) ``df`` for the tasks.

    Args:
        df: The user's DataFrame.
        p: The plan.
        partitions: Number of partitions (None: ``spark.sql.shuffle.partitions``).

    Returns:
        The DataFrame ``mapInArrow`` runs over, and its number of engines
        (0: as many as ``df`` has partitions, for ``any``).
    """
    from pyspark.sql import functions as F

    out = _source_columns(df, p)
    partitions = _partitions(df, partitions)
    if p.partitioning == "key":
        out = out.repartition(partitions, *[F.col(k) for k in p.keys])
    elif p.partitioning == "single":
        out = out.repartition(partitions := 1)
    else:
        partitions = 0
    if p.event_time is not None and p.partitioning != "any" and not df.isStreaming:
        # Streaming DataFrames cannot be sorted: their tasks sort each
        # micro-batch themselves (_stream_task).
        out = out.sortWithinPartitions(p.event_time)
    return out, partitions


#: Columns of a union's combined frame: the input a row belongs to, its
#: partition keys and its event time (the source's own columns are prefixed
#: ``__i<n>_`` per input).
_INPUT, _KEY, _TIME = "__input", "__k", "__ts"


def _input_column(i: int, name: str) -> str:
    """The combined frame's name of input ``i``'s column ``name``."""
    return f"__i{i}_{name}"


def _union_frame(frames: Sequence[DataFrame], p: Plan, partitions: int | None) -> DataFrame:
    """One DataFrame carrying every input of a union, partitioned and sorted for the tasks.

    Each input's rows keep their source's columns (prefixed per input, the
    others NULL), the input's number, its key columns at shared places
    (``__k<j>``: the i-th key of every input is at the same union column, so
    equal keys hash to one partition) and its event time (``__ts``, for the
    sort within partitions: no row is late inside a partition).
    """
    from pyspark.sql import functions as F

    parts = []
    for i, (frame, inp) in enumerate(zip(frames, p.inputs)):
        base = _source_columns(frame, inp)
        cols = [F.lit(i).alias(_INPUT)]
        cols += [F.col(name).alias(_input_column(i, name)) for name in inp.columns]
        cols += [F.col(k).alias(f"{_KEY}{j}") for j, k in enumerate(inp.keys)]
        if inp.event_time is not None:
            cols.append(F.col(inp.event_time).alias(_TIME))
        parts.append(base.select(*cols))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part, allowMissingColumns=True)
    engines = _partitions(frames[0], partitions)
    if p.partitioning == "key":
        out = out.repartition(engines, *[F.col(f"{_KEY}{j}") for j in range(len(p.keys))])
    elif p.partitioning == "single":
        out = out.repartition(1)
    if p.partitioning != "any" and all(inp.event_time is not None for inp in p.inputs):
        out = out.sortWithinPartitions(_TIME)
    return out


def _union_task(p: Plan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The body of one task of a union: each batch's rows to their own sources.

    Every Arrow batch of the combined frame is split by ``__input`` and each
    input's rows (its columns, as its source declares them) are pushed into
    its source; at the end of the partition the final watermark of every
    source closes every window.
    """
    import pyarrow.compute as pc

    out_schema = _spark_out_schema(p)
    with _open_task_db(p) as db:
        sub = db.subscribe(p.stream)
        sources = [db.source(inp.source) for inp in p.inputs]
        for batch in batches:
            tag = batch.column(_INPUT)
            for i, (inp, src) in enumerate(zip(p.inputs, sources)):
                rows = batch.filter(pc.equal(tag, i))
                if rows.num_rows == 0:
                    continue
                arrays = []
                for field in inp.input_schema:
                    col = rows.column(_input_column(i, field.name))
                    arrays.append(col if col.type == field.type else col.cast(field.type))
                src.push(pa.RecordBatch.from_arrays(arrays, schema=inp.input_schema))
            yield from _drain(db, sub, out_schema)
        for src in sources:
            src.watermark(FINAL_WATERMARK)
        yield from _drain(db, sub, out_schema)


def _jvm_uncarried(p: Plan) -> pa.Field | None:
    """The first column of the plan the JVM stage has no column copier for.

    Its column copiers know BIGINT, INT, DOUBLE, VARCHAR, BOOLEAN and
    TIMESTAMP; a DATE, SMALLINT, TINYINT, REAL, BLOB, TIME or DECIMAL column
    (Arrow date32, int16, int8, float32, binary, time64, decimal128) runs in the
    Python engine.
    """
    for f in (*p.input_schema, *p.output_schema):
        if (pa.types.is_date32(f.type) or pa.types.is_int16(f.type)
                or pa.types.is_float32(f.type) or pa.types.is_binary(f.type)
                or pa.types.is_large_binary(f.type) or pa.types.is_time(f.type)
                or pa.types.is_int8(f.type) or pa.types.is_decimal(f.type)):
            return f
    return None


def _use_jvm(df: DataFrame, engine: str) -> bool:
    """Resolve ``engine`` for ``df`` (see :func:`run`)."""
    if engine not in _ENGINES:
        raise error_for(_CONFIG_VALUE, f"LDB-6002: engine={engine!r}: use one of "
                        f"{', '.join(map(repr, _ENGINES))}")
    if engine == "python":
        return False
    if _is_connect(df):
        if engine == "jvm":
            raise error_for(_CONFIG_VALUE, "LDB-6002: engine='jvm' needs the Spark session's "
                            "JVM, which a Spark Connect client does not reach; "
                            "engine='python' (or 'auto') runs through Spark Connect")
        return False
    available = jvm_engine_available(df.sparkSession)
    if engine == "jvm" and not available:
        raise error_for(_CONFIG_VALUE, "LDB-6002: engine='jvm': the Spark session cannot load "
                        f"{_JVM_STAGE}; start it with laminardb.spark.configure(builder) "
                        "(spark.jars = laminardb.spark.jars()), see docs/SPARK.md")
    return available


def _jvm_options(p: Plan) -> tuple[list[str], list[str]]:
    """``p``'s engine options as the texts ``laminar_config_set`` takes (as ``open``)."""
    settings: dict[str, Any] = {}
    given = dict(p.options)
    given.pop("functions", None)  # Java functions' planning stand-ins: not options
    settings.update(given.pop("config", None) or {})
    variables = given.pop("vars", None) or {}
    settings.update(given)
    settings.update({f"var.{name}": value for name, value in variables.items()})
    keys = list(settings)
    values = [_option_text(key, settings[key]).decode("utf-8") for key in keys]
    return keys, values


def _jvm_stage(frame: DataFrame, p: Plan, *, out_type: Any,  # noqa: ANN401 -- a StructType
               mode: int | None = None, location: str | None = None,
               event_time: str | None = None, delay_ms: int = 0,
               functions: Sequence[str] = ()) -> DataFrame:
    """Run ``p`` over each partition of ``frame`` (the source's columns) in Spark's JVM.

    Args:
        frame: The input, its columns the source's, in order.
        p: The plan (or stage of one).
        out_type: The output StructType (None: mapped from ``p.output_schema``).
        mode: None: a batch DataFrame's stage, on its RDD (``SparkFrames.run``,
            every partition ends with the final watermark). Else a node of
            the logical plan (``SparkFrames.stage``, batch or streaming):
            ``_JVM_OPEN`` (no final watermark), ``_JVM_PARTIAL`` or
            ``_JVM_FINAL`` (a streaming micro-batch's two stages).
        location: The state location (streaming stages).
        event_time: The event-time column (``_JVM_PARTIAL``).
        delay_ms: The source's watermark delay (``_JVM_FINAL``).
        functions: The Java functions each task registers
            (:meth:`~laminardb.spark.JavaFunction.spec` texts).

    Returns:
        The DataFrame ``org.laminardb.SparkFrames`` returns.
    """
    from pyspark.sql import DataFrame as SparkFrame
    spark = frame.sparkSession
    if out_type is None:
        out_type = _spark_schema(p.output_schema)
    gateway: Any = spark.sparkContext._gateway  # noqa: SLF001 -- PySpark's documented gateway
    keys, values = _jvm_options(p)
    jkeys = gateway.new_array(gateway.jvm.java.lang.String, len(keys))
    jvalues = gateway.new_array(gateway.jvm.java.lang.String, len(values))
    for i, (key, value) in enumerate(zip(keys, values)):
        jkeys[i], jvalues[i] = key, value
    jfunctions = gateway.new_array(gateway.jvm.java.lang.String, len(functions))
    for i, spec in enumerate(functions):
        jfunctions[i] = spec
    jframe = frame._jdf  # noqa: SLF001 -- the py4j handle of the DataFrame
    if mode is None:
        close_windows = True  # a batch partition ends with the final watermark
        jdf = _jvm_class(spark).run(jframe, p.sql, p.source, p.stream, jkeys, jvalues,
                                    out_type.json(), close_windows, _JVM_BATCH_ROWS,
                                    jfunctions)
    else:
        jdf = _jvm_class(spark).stage(jframe, p.sql, p.source, p.stream, jkeys, jvalues,
                                      out_type.json(), mode, location, delay_ms, event_time,
                                      _JVM_BATCH_ROWS, jfunctions)
    return SparkFrame(jdf, spark)


def _drain(db: laminardb.Connection, sub: laminardb.Subscription,
           out_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Run the graph until idle, yielding each result batch (as Spark expects it).

    ``run_until_idle`` stops early when the subscriber queue is full, so it is
    run again after each drain until no batch comes.
    """
    while True:
        db.run_until_idle()
        got = False
        while (batch := sub.poll(timeout=0)) is not None:
            got = True
            if batch.num_rows:
                yield _conform(batch, out_schema)
        if not got:
            return


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Cast a result batch to the Arrow schema Spark derives from the StructType.

    Columnar (pyarrow compute); a no-op for the types that already match.
    """
    if batch.schema.equals(schema):
        return batch
    return pa.RecordBatch.from_arrays(
        [batch.column(i).cast(schema.field(i).type) for i in range(batch.num_columns)],
        schema=schema,
    )


def _spark_out_schema(p: Plan) -> pa.Schema:
    """The Arrow schema Spark expects back (from the StructType of the output)."""
    return _arrow_schema(_spark_schema(p.output_schema))


def _open_task_db(p: Plan, path: str | None = None,
                  settings: Mapping[str, Any] | None = None) -> laminardb.Connection:
    """Open a task's engine and declare the plan's SQL in it."""
    options = dict(p.options)
    options.update(settings or {})
    db = laminardb.open(path, **options)
    db.execute(p.sql)
    return db


def _batch_task(p: Plan, batches: Iterator[pa.RecordBatch], *,
                final: bool) -> Iterator[pa.RecordBatch]:
    """The body of one task: push every batch, then (batch mode) close every window.

    Args:
        p: The plan.
        batches: The partition's Arrow record batches, from Spark.
        final: Push the final watermark at the end of the partition.

    Yields:
        Result record batches.
    """
    out_schema = _spark_out_schema(p)
    with _open_task_db(p) as db:
        sub = db.subscribe(p.stream)
        src = db.source(p.source)
        for batch in batches:
            if batch.num_rows:
                src.push(batch)  # Arrow C Data Interface: moved into the core
                yield from _drain(db, sub, out_schema)
        if final:
            src.watermark(FINAL_WATERMARK)
        yield from _drain(db, sub, out_schema)


def _event_ms(p: Plan, table: pa.Table) -> pa.Array:
    """The event-time column of ``table`` as int64 epoch milliseconds."""
    assert p.event_time is not None
    col = table.column(p.event_time)
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.timestamp("ms", col.type.tz)).cast(pa.int64())
    return col
