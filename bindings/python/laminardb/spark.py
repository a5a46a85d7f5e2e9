"""``laminardb.spark``: run LaminarDB's streaming SQL inside PySpark tasks.

:func:`run` takes a Spark DataFrame (batch or streaming) and the SQL that
declares a source and a stream over it, and returns a DataFrame of the
stream's rows. On the driver it opens an in-memory database, runs the SQL
(bad SQL fails here, before any task), checks the DataFrame against the
source, asks the core how the input may be split
(:meth:`laminardb.Connection.partitioning`) and what the stream's rows look
like (:meth:`laminardb.Connection.schema`, mapped to a Spark ``StructType``).
When the stream's aggregation decomposes (``Connection.two_phase``: COUNT,
SUM, AVG, MIN, MAX over tumbling or hopping windows), it runs in two phases as
Spark's own ``groupBy().agg()`` does: a partial engine per input partition as
it is (no shuffle, no sort), a shuffle of the partial rows only, a final
engine per partition. Otherwise (or with ``two_phase=False``) it
hash-partitions the DataFrame by the key, sorts each partition by
event time and runs one embedded engine per task through ``mapInArrow``: each
Arrow record batch Spark hands the task is pushed into the core through the
Arrow C Data Interface (no row conversion, no pandas), the inline driver
(``run_until_idle``) runs the graph, and result batches go back to Spark as
they are produced. A batch task ends with the final watermark, closing every
window.

A streaming DataFrame gets the same treatment per micro-batch (in two phases:
the partial stage per micro-batch, the final stage's state carried), with each
partition's engine state (its open windows and watermark) carried from one
micro-batch to the next as a durable engine checkpoint stored under
``state_location``, one per (partition, batch id): a retried task or a
restarted query reads the state the previous batch id left and gives the
same output again (docs/SPARK.md, "Streaming").

With ``engine="jvm"`` (the default when the session was started with
:func:`configure`), the tasks' engines run inside Spark's JVM instead
(bindings/java/spark: Spark's own Arrow writer and the JNI library, no Python
worker); on a streaming DataFrame each stage is a node of the query's logical
plan (``org.laminardb.LaminarStageNode``), planned again for every
micro-batch, with the same state layout as the Python tasks'.

:func:`with_expr` evaluates a LaminarDB SQL expression over a DataFrame's
Arrow batches the same way (a vectorized column, no pandas).

Spark is an optional dependency: ``pip install laminardb[spark]``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

import laminardb
from laminardb.connection import _option_text
from laminardb.errors import error_for

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame

__all__ = ["TESTED_SPARK", "Plan", "TwoPhase", "UntestedSparkWarning", "configure", "jars",
           "jvm_engine_available", "plan", "run", "spark_line", "with_expr"]

#: The Spark lines (major, minor) the test command runs the adapter's suite on
#: (scripts/test.sh: the newest PySpark 4.x and 3.5). PySpark of another line
#: (``laminardb[spark]`` takes ``pyspark>=3.5``) runs with an
#: :class:`UntestedSparkWarning`.
TESTED_SPARK: tuple[tuple[int, int], ...] = ((3, 5), (4, 3))
#: The JVM engine's jars in ``laminardb/jars``, one folder per Spark line:
#: (the Spark major version, its minor or None for any, the Scala binary
#: version of the line's Spark build) -> the folder. Each is compiled against
#: that line's artifacts on Maven Central (bindings/java/spark/CMakeLists.txt).
_JVM_LINES: dict[tuple[int, int | None, str], str] = {
    (3, 5, "2.12"): "spark-3.5_2.12",
    (4, None, "2.13"): "spark-4_2.13",
}

#: The watermark that closes every window (INT64_MAX).
FINAL_WATERMARK = 2**63 - 1

_SCHEMA_MISMATCH = 3003
_COLUMN_TYPE = 3004
_UNKNOWN_OBJECT = 1002
_UNSUPPORTED = 1005
_CONFIG_VALUE = 6002
_CONFIG_CONFLICT = 6003
_SCHEMA_INVALID = 2003

#: Spark's local property holding the micro-batch id of a streaming query.
_BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: Durable settings of a task's engine in streaming mode: checkpoints are taken
#: explicitly at the end of each micro-batch, never by the timer.
_STATE_SETTINGS = {"checkpoint_interval": "1000 min", "checkpoint_keep": 1}
_STATE_DIR = re.compile(r"^b(\d+)$")
#: The JVM engine's entry points (bindings/java/spark, in laminardb/jars).
_JVM_STAGE = "org.laminardb.SparkFrames"
#: The session extension planning the JVM engine's streaming stages.
_JVM_EXTENSIONS = "org.laminardb.LaminarExtensions"
#: Rows per Arrow batch the JVM engine pushes into each task's engine.
_JVM_BATCH_ROWS = 65536
_ENGINES = ("auto", "python", "jvm")
#: ``SparkFrames.stage`` modes: a stage without the final watermark (a stream
#: without windows), a streaming micro-batch's partial and final stages.
_JVM_OPEN, _JVM_PARTIAL, _JVM_FINAL = 0, 1, 2


@dataclass(frozen=True)
class Plan:
    """What the driver worked out for one :func:`run` call.

    Attributes:
        sql: The SQL text (sources and streams).
        source: The source the DataFrame feeds.
        stream: The stream whose rows come out.
        columns: The source's column names, in its order.
        event_time: The source's watermark column, or None.
        delay_ms: Its watermark delay in milliseconds (0 without one).
        partitioning: ``"key"``, ``"single"`` or ``"any"`` (the core's word).
        keys: The source columns to hash on (``"key"`` only).
        input_schema: The Arrow schema the tasks push (the source's columns).
        output_schema: The Arrow schema of the stream's rows.
        options: ``laminardb.open`` options of each task's engine.
        two_phase: The partial and final stages of the stream's aggregation
            (``laminar_stream_two_phase``), or None when it does not
            decompose (then the stream runs whole per key partition).
    """

    sql: str
    source: str
    stream: str
    columns: tuple[str, ...]
    event_time: str | None
    delay_ms: int
    partitioning: str
    keys: tuple[str, ...]
    input_schema: pa.Schema
    output_schema: pa.Schema
    options: tuple[tuple[str, Any], ...]
    two_phase: TwoPhase | None = None


@dataclass(frozen=True)
class TwoPhase:
    """A stream's aggregation split in two (``Connection.two_phase``).

    Attributes:
        partial: The plan of the partial stage: per input partition, every
            window held open until the partition ends, one row per (window,
            group) of partial aggregates.
        final: The plan of the final stage, over the partial rows hashed on
            ``keys``: the stream's rows.
        keys: The partial columns to hash on (the GROUP BY keys and the
            window start ``__ws``).
    """

    partial: Plan
    final: Plan
    keys: tuple[str, ...]


class UntestedSparkWarning(UserWarning):
    """PySpark of a Spark line the test command does not run (see :data:`TESTED_SPARK`)."""


@functools.cache
def _line_of(version: str) -> tuple[int, int]:
    """(major, minor) of a Spark version text; warns once for an untested line."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        raise error_for(_CONFIG_VALUE, f"LDB-6002: cannot read the Spark version {version!r}")
    line = (int(match.group(1)), int(match.group(2)))
    if line not in TESTED_SPARK:
        tested = ", ".join(f"{a}.{b}" for a, b in TESTED_SPARK)
        warnings.warn(f"laminardb.spark: PySpark {version} is of a Spark line its tests do "
                      f"not run (tested: {tested}); it is used as it is",
                      UntestedSparkWarning, stacklevel=3)
    return line


def spark_line(version: str | None = None) -> tuple[int, int]:
    """The Spark line (major, minor) of ``version`` (default: ``pyspark.__version__``).

    A line outside :data:`TESTED_SPARK` is allowed: the first call for it
    warns (:class:`UntestedSparkWarning`).

    Args:
        version: A Spark version such as ``"4.3.0"``.

    Returns:
        ``(major, minor)``, e.g. ``(4, 3)``.

    Raises:
        ConfigError: LDB-6002 when the text is not a version.
    """
    if version is None:
        import pyspark

        version = pyspark.__version__
    return _line_of(version)


# ---------------------------------------------------------------------------
# Driver side
# ---------------------------------------------------------------------------


def _streams(db: laminardb.Connection) -> list[str]:
    """Names of the plain streams (not views) the SQL declared."""
    table = db.query("SHOW STREAMS")
    return [str(name) for name in table.column(0).to_pylist()]


def _arrow_schema(struct: Any) -> pa.Schema:  # noqa: ANN401 -- a Spark StructType
    """The Arrow schema of a Spark ``StructType`` as Spark's Arrow path writes it.

    A TIMESTAMP column is ``timestamp[us, UTC]`` (Spark's Arrow batches carry
    UTC instants): PySpark 3.5's ``to_arrow_schema`` gives that by itself,
    PySpark 4 asks for the time zone.
    """
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(struct, timezone="UTC")
    return to_arrow_schema(struct)


def _spark_schema(schema: pa.Schema) -> Any:  # noqa: ANN401 -- a Spark StructType
    """The Spark ``StructType`` of an Arrow schema of the core's.

    A timestamp without a zone (the core's TIMESTAMP) is Spark's TIMESTAMP,
    as on PySpark 3.5, not PySpark 4's default TIMESTAMP_NTZ.
    """
    import inspect

    from pyspark.sql.pandas.types import from_arrow_schema

    if "prefer_timestamp_ntz" in inspect.signature(from_arrow_schema).parameters:
        return from_arrow_schema(schema, prefer_timestamp_ntz=False)
    return from_arrow_schema(schema)


def _arrow_type_fits(spark_type: pa.DataType, source_type: pa.DataType) -> bool:
    """Tell whether a DataFrame column of ``spark_type`` can be pushed as ``source_type``.

    Args:
        spark_type: The Arrow type Spark sends for the DataFrame column.
        source_type: The source column's Arrow type (as ``laminar_schema``
            reports it).

    Returns:
        True when the core accepts it as it is (any string kind for VARCHAR,
        any timestamp unit for TIMESTAMP) or after an integer widening the
        adapter does in Spark.
    """
    if pa.types.is_string(source_type) or pa.types.is_large_string(source_type):
        return pa.types.is_string(spark_type) or pa.types.is_large_string(spark_type)
    if pa.types.is_timestamp(source_type):
        return pa.types.is_timestamp(spark_type)
    if pa.types.is_integer(source_type) and pa.types.is_integer(spark_type):
        return spark_type.bit_width <= source_type.bit_width
    return spark_type == source_type


def plan(df: DataFrame, sql: str, *, source: str | None = None, stream: str | None = None,
         **options: Any) -> Plan:  # noqa: ANN401 -- laminardb.open's option values
    """Check ``df`` against ``sql`` on the driver and work out how to run it.

    Args:
        df: The input DataFrame.
        sql: ``CREATE SOURCE`` / ``CREATE STREAM`` statements.
        source: The source ``df`` feeds (default: the stream's root source).
        stream: The stream to return (default: the only stream declared).
        **options: ``laminardb.open`` options for each task's engine.

    Returns:
        The :class:`Plan`.

    Raises:
        SQLError: The SQL does not run (its LDB-1xxx code, line and column);
            LDB-1002 for an unknown ``source``/``stream``, or a ``source`` the
            stream does not read; LDB-1005 for a materialized view or for SQL
            declaring several streams without ``stream=``.
        IngestError: LDB-3003 when ``df`` lacks a column of the source (the
            event-time column included); LDB-3004 when a column's type does
            not fit.
    """
    spark_line()
    with laminardb.open(**options) as db:
        db.execute(sql)
        names = _streams(db)
        if stream is None:
            if len(names) != 1:
                raise error_for(
                    _UNSUPPORTED,
                    f"LDB-1005: the SQL declares {len(names)} streams ({', '.join(names)}): "
                    "name the one to return with stream=",
                )
            stream = names[0]
        elif stream.lower() not in (n.lower() for n in names):
            code = _UNKNOWN_OBJECT if _db_has_no(db, stream) else _UNSUPPORTED
            raise error_for(
                code,
                f"LDB-{code}: '{stream}' is not a stream the SQL declares "
                f"(streams: {', '.join(names)})",
                object=stream,
            )
        rows = db.partitioning(stream).to_pylist()
        root = next(r["name"] for r in rows if r["role"] == "source")
        if source is not None and source.lower() != root.lower():
            raise error_for(
                _UNKNOWN_OBJECT,
                f"LDB-1002: stream '{stream}' reads source '{root}', not '{source}'",
                object=source,
            )
        event = next((r for r in rows if r["role"] == "event_time"), None)
        kind = next(r["name"] for r in rows if r["role"] == "partitioning")
        keys = tuple(r["name"] for r in rows if r["role"] == "key")
        source_schema = db.schema(root)
        output_schema = db.schema(stream)
        split = _two_phase(db, stream, options)

    df_schema = _arrow_schema(df.schema)
    by_lower = {name.lower(): name for name in df_schema.names}
    fields = []
    for field in source_schema:
        found = by_lower.get(field.name.lower())
        if found is None:
            what = (
                f"the event-time column of source '{root}'"
                if event is not None and field.name == event["name"]
                else f"a column of source '{root}'"
            )
            raise error_for(
                _SCHEMA_MISMATCH,
                f"LDB-3003: the DataFrame has no column '{field.name}', {what} "
                f"(DataFrame columns: {', '.join(df_schema.names)})",
                object=root,
                column_name=field.name,
            )
        have = df_schema.field(found).type
        if not _arrow_type_fits(have, field.type):
            raise error_for(
                _COLUMN_TYPE,
                f"LDB-3004: DataFrame column '{found}' is {have}, source '{root}' "
                f"declares {field.type}",
                object=root,
                column_name=field.name,
            )
        fields.append(pa.field(field.name, field.type, nullable=field.nullable))
    return Plan(
        sql=sql,
        source=root,
        stream=stream,
        columns=tuple(f.name for f in fields),
        event_time=None if event is None else str(event["name"]),
        delay_ms=0 if event is None else int(event["value"]),
        partitioning=str(kind),
        keys=keys,
        input_schema=pa.schema(fields),
        output_schema=output_schema,
        options=tuple(sorted(options.items())),
        two_phase=split,
    )


def _two_phase(db: laminardb.Connection, stream: str,
               options: Mapping[str, Any]) -> TwoPhase | None:
    """The two stages of ``stream``'s aggregation, or None if it does not decompose."""
    try:
        rows = db.two_phase(stream).to_pylist()
    except laminardb.SQLError as e:
        if e.number == _UNSUPPORTED:
            return None
        raise
    role = {r["role"]: r for r in rows if r["role"] not in ("key", "window")}
    keys = tuple(r["name"] for r in rows if r["role"] in ("key", "window"))

    def stage(which: str) -> Plan:
        sql, name = str(role[which]["value"]), str(role[which]["name"])
        source = str(role[f"{which}_source"]["name"])
        with laminardb.open(**options) as scratch:
            scratch.execute(sql)
            source_schema, output_schema = scratch.schema(source), scratch.schema(name)
        return Plan(sql=sql, source=source, stream=name,
                    columns=tuple(source_schema.names), event_time=None, delay_ms=0,
                    partitioning="key", keys=keys, input_schema=source_schema,
                    output_schema=output_schema, options=tuple(sorted(options.items())))

    return TwoPhase(partial=stage("partial"), final=stage("final"), keys=keys)


def _db_has_no(db: laminardb.Connection, name: str) -> bool:
    """Tell whether ``db`` has no object ``name`` at all (for the error code)."""
    try:
        db.schema(name)
    except laminardb.SQLError:
        return True
    return False


def _map_in_arrow(frame: DataFrame, task: Any,  # noqa: ANN401 -- a mapInArrow function
                  schema: Any) -> DataFrame:  # noqa: ANN401 -- a Spark StructType
    """``frame.mapInArrow(task, schema)``, its Python workers running a laminardb interpreter.

    PySpark starts its workers with ``PYSPARK_PYTHON``, else ``python3`` from
    the PATH, which need not be the driver's interpreter (a venv not
    activated, a script run by its full path): then the workers cannot import
    laminardb. On a local master (the workers run on this machine) with
    neither ``PYSPARK_PYTHON`` nor ``spark.sql.execution.pyspark.python`` set,
    this function's workers run the driver's own interpreter
    (``sys.executable``). Elsewhere the user's setting stands (docs/SPARK.md,
    "Packaging").
    """
    spark = frame.sparkSession
    if _is_connect(frame):  # the workers are the Connect server's business
        return frame.mapInArrow(task, schema)
    sc = spark.sparkContext
    chosen = os.environ.get("PYSPARK_PYTHON") or spark.conf.get(
        "spark.sql.execution.pyspark.python", None)
    if chosen or not str(sc.master).startswith("local") or not sys.executable:
        return frame.mapInArrow(task, schema)
    # The function's worker command is read from the context while the UDF is
    # made (inside mapInArrow): set it for this call only.
    before = sc.pythonExec
    sc.pythonExec = sys.executable
    try:
        return frame.mapInArrow(task, schema)
    finally:
        sc.pythonExec = before


def _is_connect(df: DataFrame) -> bool:
    """Tell whether ``df`` is a Spark Connect DataFrame (no JVM of its own here)."""
    return type(df).__module__.startswith("pyspark.sql.connect")


def _partitions(df: DataFrame, partitions: int | None) -> int:
    """The number of engines: ``partitions`` or ``spark.sql.shuffle.partitions``."""
    if partitions is None:
        partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    return partitions


def _source_columns(df: DataFrame, p: Plan) -> DataFrame:
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


def run(
    df: DataFrame,
    sql: str,
    *,
    source: str | None = None,
    stream: str | None = None,
    partitions: int | None = None,
    state_location: str | os.PathLike[str] | None = None,
    two_phase: bool | None = None,
    engine: str = "auto",
    **options: Any,  # noqa: ANN401 -- laminardb.open's option values
) -> DataFrame:
    """Run a LaminarDB stream over a Spark DataFrame; return its rows as a DataFrame.

    Args:
        df: The input rows: a batch or a streaming DataFrame with (at least)
            the source's columns, matched by name.
        sql: ``CREATE SOURCE`` and ``CREATE STREAM`` statements, as for
            :meth:`laminardb.Connection.execute`.
        source: The source ``df`` feeds (default: the stream's root source).
        stream: The stream to return (default: the only one declared).
        partitions: Engines (Spark partitions) to run the stream in (default
            ``spark.sql.shuffle.partitions``); 1 when the stream's windows
            have no plain-column key. Keep it fixed for a streaming query.
        state_location: Streaming only (required there): a directory every
            executor can reach, where each partition's engine state is kept
            per micro-batch; put it beside the query's checkpoint location
            and keep it with it.
        two_phase: When the stream's aggregation decomposes (COUNT, SUM,
            AVG, MIN, MAX over tumbling or hopping windows), aggregate each
            input partition (each micro-batch's, in streaming) first and
            shuffle only the partial rows. None (the default): do so, except
            for a streaming ``state_location`` that already holds the state
            of the whole-stream path (made with ``two_phase=False`` or by a
            version before two phases), which that query keeps. True: do so
            (LDB-6003 for such a location). False: run the stream whole in
            each key partition (shuffle and sort of every input row).
        engine: Where the tasks run their engines.
            ``"jvm"``: inside Spark's JVM (laminardb-spark.jar, see
            :func:`configure`): the rows go into the core through Spark's own
            Arrow writer (or, from a columnar scan, column by column) and the
            JNI library, never through a Python worker; a streaming DataFrame
            runs so in two phases (nodes of its logical plan) or, without
            windows, in one stage.
            ``"python"``: in Spark's Python workers through ``mapInArrow``.
            ``"auto"`` (the default): ``"jvm"`` when the session has the jar
            (:func:`jvm_engine_available`), except for the streaming
            whole-stream path, else ``"python"``.
        **options: ``laminardb.open`` options of each task's engine
            (``buffer_size``, ``vars``...).

    Returns:
        A DataFrame (streaming when ``df`` is) with the stream's columns, its
        ``StructType`` mapped from the core's schema.

    Raises:
        SQLError, IngestError: As :func:`plan`, on the driver.
        ConfigError: LDB-6002 for a streaming ``df`` without ``state_location``,
            for an unknown ``engine``, or for ``engine="jvm"`` in a session
            without the jar or through Spark Connect;
            LDB-6003 when it holds another query's state (other SQL,
            number of partitions or ``two_phase``).
        SchemaError: LDB-2003 for a streaming windowed stream whose source
            declares no WATERMARK (nothing would ever close its windows).
        SQLError: LDB-1005 for ``engine="jvm"`` on the streaming
            whole-stream path (``two_phase=False`` or a stream that does not
            decompose).

    Example:
        See docs/SPARK.md.
    """
    use_jvm = _use_jvm(df, engine)
    p = plan(df, sql, source=source, stream=stream, **options)
    out_type = _spark_schema(p.output_schema)
    split = p.two_phase if two_phase is not False else None
    if split is not None and df.isStreaming and two_phase is None and state_location is not None:
        stored = _stored_query(Path(os.fspath(state_location)))
        if stored is not None and not stored.get("two_phase", False):
            split = None  # a query started on the whole-stream path stays there
    if use_jvm and df.isStreaming:
        if p.partitioning == "any":
            frame, _ = _input_frame(df, p, partitions)
            return _jvm_stage(frame, p, out_type=out_type, mode=_JVM_OPEN)
        if split is not None:
            location = _stream_location(p, state_location)
            engines = _partitions(df, partitions)
            _check_state_location(Path(location), p, engines, two_phase=True)
            partial = _jvm_stage(_source_columns(df, split.partial), split.partial,
                                 out_type=None, mode=_JVM_PARTIAL, location=location,
                                 event_time=p.event_time)
            shuffled = partial.repartition(engines, *[partial[k] for k in split.keys])
            return _jvm_stage(shuffled, split.final, out_type=out_type, mode=_JVM_FINAL,
                              location=location, delay_ms=p.delay_ms)
        if engine == "jvm":
            raise error_for(_UNSUPPORTED, "LDB-1005: engine='jvm' runs a streaming DataFrame "
                            "in two phases only (an aggregation that decomposes, two_phase "
                            "not False); this one runs with engine='python'")
        use_jvm = False  # auto: the whole-stream path runs in Python
    if use_jvm:
        if split is not None:
            partial = _jvm_stage(_source_columns(df, split.partial), split.partial, out_type=None)
            shuffled = partial.repartition(_partitions(df, partitions),
                                           *[partial[k] for k in split.keys])
            return _jvm_stage(shuffled, split.final, out_type=out_type)
        frame, _ = _input_frame(df, p, partitions)
        return _jvm_stage(frame, p, out_type=out_type)
    if split is not None and not df.isStreaming:
        return _two_phase_frame(df, split, partitions, out_type)
    if not df.isStreaming or p.partitioning == "any":
        # Without windows there is no state to carry: a streaming query's
        # micro-batches run exactly as batch partitions (no final watermark,
        # which only closes windows).
        frame, _ = _input_frame(df, p, partitions)
        task = functools.partial(_batch_task, p, final=not df.isStreaming)
        return _map_in_arrow(frame, task, out_type)
    location = _stream_location(p, state_location)
    if split is not None:
        engines = _partitions(df, partitions)
        _check_state_location(Path(location), p, engines, two_phase=True)
        return _two_phase_stream_frame(df, p, split, location, engines, out_type)
    frame, engines = _input_frame(df, p, partitions)
    _check_state_location(Path(location), p, engines)
    task = functools.partial(_stream_task, p, location)
    return _map_in_arrow(frame, task, out_type)


def _spark_scala(line: tuple[int, int]) -> str:
    """The Scala binary version of the Spark the driver's JVM starts from.

    Read from the ``scala-library`` jar of ``$SPARK_HOME/jars`` (as PySpark
    starts that distribution when it is set) or of the pyspark package's own
    jars; the line's default Scala when neither says.
    """
    import pyspark

    homes = [os.environ.get("SPARK_HOME"), os.path.dirname(pyspark.__file__)]
    for home in homes:
        if home:
            for found in sorted(Path(home, "jars").glob("scala-library-*.jar")):
                match = re.match(r"scala-library-(\d+\.\d+)\.", found.name)
                if match is not None:
                    return match.group(1)
    return "2.12" if line[0] == 3 else "2.13"


def _jar_folder() -> tuple[Path, str]:
    """The folder of the JVM engine for the running pyspark's line and Scala, and its name.

    The folder may be absent (a package built without that line's jar).
    """
    line = spark_line()
    scala = _spark_scala(line)
    root = Path(__file__).resolve().parent / "jars"
    for (major, minor, line_scala), name in _JVM_LINES.items():
        if major == line[0] and minor in (None, line[1]) and line_scala == scala:
            return root / name, name
    return root / f"spark-{line[0]}.{line[1]}_{scala}", f"spark-{line[0]}.{line[1]}_{scala}"


def jars() -> list[Path]:
    """The jars of the JVM engine for the installed PySpark (empty when the package has none).

    The package holds one folder per Spark line (``laminardb/jars/spark-3.5_2.12``,
    ``laminardb/jars/spark-4_2.13``), each compiled against that line's
    artifacts; the one of ``pyspark.__version__``'s line and the Scala of the
    Spark it starts is taken: ``laminardb-spark.jar`` (the JVM engine, the JNI
    library and the core inside) and the ``arrow-c-data`` jar of that line's
    Arrow Java.
    """
    folder, _ = _jar_folder()
    return sorted(folder.glob("*.jar")) if (folder / "laminardb-spark.jar").exists() else []


def configure(builder: Any) -> Any:  # noqa: ANN401 -- SparkSession.Builder or a session
    """Put the JVM engine's jars on a session's class path.

    Given ``SparkSession.builder`` (before the session starts, the way to
    prefer): sets ``spark.jars`` to :func:`jars` (any ``spark.jars`` set
    before on ``builder`` is replaced: add yours to the list) and adds the
    planner extension of the JVM engine's streaming stages
    (``org.laminardb.LaminarExtensions``) to ``spark.sql.extensions``; Spark
    loads them into the driver and the executors when the session's JVM
    starts.

    Given a running ``SparkSession`` (``spark.sql.extensions`` can no longer
    change): adds the jars with ``ADD JAR`` (Spark ships them to the
    executors and loads them into the session's class loader, for the
    calling thread; :func:`run` adds the planner strategy to the session
    itself), so ``engine="jvm"`` works in it too.

    Args:
        builder: ``SparkSession.builder`` (with its other settings), or a
            running ``SparkSession``.

    Returns:
        ``builder`` (the session), for chaining.

    Raises:
        ConfigError: LDB-6002 when the package holds no JVM engine for the
            installed PySpark's line (it was built without a JDK and Maven, or
            the line is not one it builds; see docs/SPARK.md).

    Example:
        See docs/SPARK.md ("The JVM engine").
    """
    found = jars()
    if not found:
        import pyspark

        _, name = _jar_folder()
        shipped = sorted(p.parent.name for p in
                         (Path(__file__).resolve().parent / "jars").glob("*/laminardb-spark.jar"))
        raise error_for(_CONFIG_VALUE, f"LDB-6002: this laminardb package holds no JVM engine "
                        f"for PySpark {pyspark.__version__} ({name}; it holds: "
                        f"{', '.join(shipped) or 'none'}): it is built when a JDK and Maven are "
                        "there at install time (docs/SPARK.md)")
    if hasattr(builder, "sparkContext"):  # a running session
        if not jvm_engine_available(builder):
            for jar in found:
                builder.sql("ADD JAR '" + str(jar).replace("'", "\\'") + "'")
        return builder
    options = getattr(builder, "_options", {})  # PySpark's builder keeps its settings there
    extensions = [e for e in str(options.get("spark.sql.extensions", "")).split(",") if e]
    if _JVM_EXTENSIONS not in extensions:
        extensions.append(_JVM_EXTENSIONS)
    return (builder.config("spark.jars", ",".join(str(j) for j in found))
            .config("spark.sql.extensions", ",".join(extensions)))


def jvm_engine_available(spark: Any) -> bool:  # noqa: ANN401 -- a SparkSession
    """Tell whether ``spark``'s JVM can load the JVM engine (``engine="jvm"``)."""
    from py4j.java_gateway import JavaClass

    return isinstance(_jvm_class(spark), JavaClass)


def _jvm_class(spark: Any) -> Any:  # noqa: ANN401 -- a py4j JavaClass or JavaPackage
    """``org.laminardb.SparkFrames`` through ``spark``'s py4j gateway."""
    node = spark.sparkContext._jvm  # noqa: SLF001 -- PySpark's documented gateway
    for part in _JVM_STAGE.split("."):
        node = getattr(node, part)
    return node


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
    settings.update(given.pop("config", None) or {})
    variables = given.pop("vars", None) or {}
    settings.update(given)
    settings.update({f"var.{name}": value for name, value in variables.items()})
    keys = list(settings)
    values = [_option_text(key, settings[key]).decode("utf-8") for key in keys]
    return keys, values


def _jvm_stage(frame: DataFrame, p: Plan, *, out_type: Any,  # noqa: ANN401 -- a StructType
               mode: int | None = None, location: str | None = None,
               event_time: str | None = None, delay_ms: int = 0) -> DataFrame:
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

    Returns:
        The DataFrame ``org.laminardb.SparkFrames`` returns.
    """
    from pyspark.sql import DataFrame as SparkFrame
    spark = frame.sparkSession
    if out_type is None:
        out_type = _spark_schema(p.output_schema)
    gateway = spark.sparkContext._gateway  # noqa: SLF001 -- PySpark's documented gateway
    keys, values = _jvm_options(p)
    jkeys = gateway.new_array(gateway.jvm.java.lang.String, len(keys))
    jvalues = gateway.new_array(gateway.jvm.java.lang.String, len(values))
    for i, (key, value) in enumerate(zip(keys, values)):
        jkeys[i], jvalues[i] = key, value
    jframe = frame._jdf  # noqa: SLF001 -- the py4j handle of the DataFrame
    if mode is None:
        close_windows = True  # a batch partition ends with the final watermark
        jdf = _jvm_class(spark).run(jframe, p.sql, p.source, p.stream, jkeys, jvalues,
                                    out_type.json(), close_windows, _JVM_BATCH_ROWS)
    else:
        jdf = _jvm_class(spark).stage(jframe, p.sql, p.source, p.stream, jkeys, jvalues,
                                      out_type.json(), mode, location, delay_ms, event_time,
                                      _JVM_BATCH_ROWS)
    return SparkFrame(jdf, spark)


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


# ---------------------------------------------------------------------------
# Task side
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------


def _sql_type(arrow_type: pa.DataType) -> str:
    """The SQL type of a source column for a DataFrame column's Arrow type.

    Raises:
        SchemaError: LDB-2002 for a type LaminarDB has no SQL type for.
    """
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "VARCHAR"
    if pa.types.is_boolean(arrow_type):
        return "BOOLEAN"
    if pa.types.is_integer(arrow_type):
        return "INT" if arrow_type.bit_width <= 32 else "BIGINT"
    if pa.types.is_floating(arrow_type):
        return "DOUBLE"
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMP"
    raise error_for(2002, f"LDB-2002: no LaminarDB SQL type for Arrow type {arrow_type}")


def _quote(name: str) -> str:
    """Quote an identifier for LaminarDB SQL."""
    return '"' + name.replace('"', '""') + '"'


def with_expr(df: DataFrame, name: str, expr: str, **options: Any) -> DataFrame:  # noqa: ANN401
    """Add column ``name`` = the LaminarDB SQL expression ``expr`` over ``df``'s columns.

    Vectorized over Spark's Arrow batches through the C Data Interface, like
    :func:`run` (``mapInArrow``; no pandas, no rows). The expression is checked
    and typed on the driver: a bad expression fails there with its LDB code
    and the position in ``expr``.

    Args:
        df: A batch or streaming DataFrame.
        name: The new column (replaces a column of that name).
        expr: A scalar SQL expression, e.g. ``"price * volume"``.
        **options: ``laminardb.open`` options of each task's engine.

    Returns:
        ``df`` with the column added (last) or replaced (in place).

    Raises:
        SQLError, SchemaError: The expression does not bind (LDB-1xxx/2xxx).
    """
    have = _arrow_schema(df.schema)
    columns = ", ".join(f"{_quote(f.name)} {_sql_type(f.type)}" for f in have)
    select = [_quote(f.name) for f in have if f.name.lower() != name.lower()]
    at = next((i for i, f in enumerate(have) if f.name.lower() == name.lower()), len(select))
    # The expression gets a line of its own, so an error's column is its own.
    select.insert(at, f"\n{expr}\n AS {_quote(name)}")
    head = f"CREATE SOURCE spark_input ({columns});\nCREATE STREAM spark_expr AS SELECT "
    sql = f"{head}{', '.join(select)}\nFROM spark_input"
    expr_line = sql[: sql.index(f"\n{expr}\n")].count("\n") + 2
    try:
        p = plan(df, sql, source="spark_input", stream="spark_expr", **options)
    except laminardb.LaminarError as e:
        if e.line is None or not expr_line <= e.line < expr_line + expr.count("\n") + 1:
            raise
        line = e.line - expr_line + 1
        raise error_for(
            e.number,
            f"{e.code}: in expression {expr!r} at line {line}, column {e.column}: {e}",
            line=line,
            column=e.column,
            column_name=e.column_name,
        ) from e
    task = functools.partial(_batch_task, p, final=False)
    return _map_in_arrow(df.select(*p.columns), task, _spark_schema(p.output_schema))
