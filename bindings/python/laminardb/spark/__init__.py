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

The package by concern: :mod:`~laminardb.spark.compat` (Spark lines, schemas,
the JVM engine's jars), :mod:`~laminardb.spark.planning` (the driver's
:func:`plan`), :mod:`~laminardb.spark.partition` (one engine per partition:
input frames and batch tasks, Python or JVM), :mod:`~laminardb.spark.state`
(streaming: state carried across micro-batches), :mod:`~laminardb.spark.expr`
(:func:`with_expr`); :func:`run` here puts them together.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import laminardb  # noqa: F401 -- laminardb.spark.laminardb, as before the split
from laminardb.errors import error_for
from laminardb.spark.compat import (
    _UNSUPPORTED,
    TESTED_SPARK,
    UntestedSparkWarning,
    _map_in_arrow,
    _spark_schema,
    configure,
    jars,
    jvm_engine_available,
    spark_line,
)
from laminardb.spark.expr import with_expr
from laminardb.spark.java_functions import JavaFunction
from laminardb.spark.partition import (
    _JVM_FINAL,
    _JVM_OPEN,
    _JVM_PARTIAL,
    FINAL_WATERMARK,
    _batch_task,
    _input_frame,
    _jvm_stage,
    _jvm_uncarried,
    _partitions,
    _source_columns,
    _two_phase_frame,
    _union_frame,
    _union_task,
    _use_jvm,
)
from laminardb.spark.planning import Input, Plan, TwoPhase, plan
from laminardb.spark.state import (
    _check_state_location,
    _stored_query,
    _stream_location,
    _stream_task,
    _two_phase_stream_frame,
)

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame

__all__ = ["FINAL_WATERMARK", "TESTED_SPARK", "Input", "JavaFunction", "Plan", "TwoPhase",
           "UntestedSparkWarning",
           "configure", "jars", "jvm_engine_available", "plan", "run", "spark_line",
           "with_expr"]


def _run_union(frames: Mapping[str, DataFrame], p: Plan, *, partitions: int | None,
               engine: str) -> DataFrame:
    """A stream over several sources (UNION ALL, ASOF JOIN), one DataFrame each (:func:`run`)."""
    if engine == "jvm":
        raise error_for(_UNSUPPORTED, "LDB-1005: engine='jvm' runs one input DataFrame; a "
                        "stream over UNION ALL or an ASOF JOIN runs with engine='python'")
    if engine != "python":
        _use_jvm(next(iter(frames.values())), engine)  # an unknown name: its LDB-6002
    by_lower = {str(name).lower(): frame for name, frame in frames.items()}
    ordered = [by_lower[inp.source.lower()] for inp in p.inputs]
    if any(frame.isStreaming for frame in ordered):
        raise error_for(_UNSUPPORTED, "LDB-1005: a stream over UNION ALL or an ASOF JOIN "
                        "runs on batch DataFrames (over streaming ones it is not supported "
                        "yet)")
    frame = _union_frame(ordered, p, partitions)
    return _map_in_arrow(frame, functools.partial(_union_task, p),
                         _spark_schema(p.output_schema))


def _java_engine(engine: str, *, has_python: bool) -> str:
    """The engine of a run with Java functions: the JVM's (``"auto"`` picks it)."""
    if has_python:
        raise error_for(_UNSUPPORTED, "LDB-1005: a run takes Python functions (functions=..., "
                        "Python engine) or Java functions (java_functions=..., JVM engine), "
                        "not both")
    if engine == "python":
        raise error_for(_UNSUPPORTED, "LDB-1005: engine='python' runs no Java functions "
                        "(java_functions=...): use engine='jvm' (or 'auto', which does)")
    return "jvm" if engine == "auto" else engine


def run(
    df: DataFrame | Mapping[str, DataFrame],
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
            the source's columns, matched by name. For a stream over a
            ``UNION ALL`` of sources: a mapping from each source's name to
            its (batch) DataFrame, run with the Python engine; each input is
            hash-partitioned on its own key columns (the ones it puts at the
            union's ``GROUP BY`` columns), so equal keys of every input meet
            in one engine. The same for an ``ASOF JOIN`` of two sources: each
            side hash-partitioned on its own equality key columns.
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
            (``buffer_size``, ``vars``...). ``functions=[...]``
            (:class:`laminardb.functions.Function`,
            :class:`laminardb.aggregates.Aggregate`,
            :class:`laminardb.table_functions.TableFunction`) ships Python
            functions to the executors (pickled by Spark's cloudpickle) and
            registers them in every task's engine and the driver's planning
            one; such a run uses the Python engine (``engine="auto"``), and
            ``engine="jvm"`` refuses it (LDB-1005). ``java_functions=[...]``
            (:class:`JavaFunction`) names Java classes on the session's class
            path that every task of the JVM engine registers in its engine;
            such a run uses the JVM engine (``engine="auto"`` too; where it
            cannot run, an error rather than the Python engine), and
            ``engine="python"`` refuses it, as does a run that also has
            ``functions`` (LDB-1005).

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
            decompose), and for a union or an ASOF JOIN with ``engine="jvm"``
            or a streaming DataFrame.

    Example:
        See docs/SPARK.md.
    """
    java: tuple[JavaFunction, ...] = tuple(options.pop("java_functions", None) or ())
    specs = [f.spec() for f in java]
    if java:
        engine = _java_engine(engine, has_python=bool(options.get("functions")))
        # The driver plans with stand-ins of the same names and types (never called).
        options["functions"] = [f.stand_in() for f in java]
    if isinstance(df, Mapping):
        p = plan(df, sql, source=source, stream=stream, **options)
        if p.inputs:
            return _run_union(df, p, partitions=partitions, engine=engine)
        df = next(iter(df.values()))
    use_jvm = _use_jvm(df, engine)
    if use_jvm and options.get("functions") and not java:
        # Python functions run in Python workers only: each task's engine
        # registers the (cloudpickled) functions before it opens.
        if engine == "jvm":
            raise error_for(_UNSUPPORTED, "LDB-1005: engine='jvm' runs no Python functions "
                            "(functions=...): use engine='python' (or 'auto', which does)")
        use_jvm = False
    p = plan(df, sql, source=source, stream=stream, **options)
    uncarried = _jvm_uncarried(p) if use_jvm else None
    if uncarried is not None:
        if engine == "jvm":
            raise error_for(_UNSUPPORTED, "LDB-1005: engine='jvm' carries BIGINT, INT, DOUBLE, "
                            "VARCHAR, BOOLEAN and TIMESTAMP columns; column "
                            f"'{uncarried.name}' is {uncarried.type}: use engine='python' "
                            "(or 'auto')", column_name=uncarried.name)
        use_jvm = False  # auto: DATE/SMALLINT/TINYINT/REAL/BLOB/DECIMAL columns: Python
    out_type = _spark_schema(p.output_schema)
    split = p.two_phase if two_phase is not False else None
    if split is not None and df.isStreaming and two_phase is None and state_location is not None:
        stored = _stored_query(Path(os.fspath(state_location)))
        if stored is not None and not stored.get("two_phase", False):
            split = None  # a query started on the whole-stream path stays there
    if use_jvm and df.isStreaming:
        if p.partitioning == "any":
            frame, _ = _input_frame(df, p, partitions)
            return _jvm_stage(frame, p, out_type=out_type, mode=_JVM_OPEN, functions=specs)
        if split is not None:
            location = _stream_location(p, state_location)
            engines = _partitions(df, partitions)
            _check_state_location(Path(location), p, engines, two_phase=True)
            partial = _jvm_stage(_source_columns(df, split.partial), split.partial,
                                 out_type=None, mode=_JVM_PARTIAL, location=location,
                                 event_time=p.event_time, functions=specs)
            shuffled = partial.repartition(engines, *[partial[k] for k in split.keys])
            return _jvm_stage(shuffled, split.final, out_type=out_type, mode=_JVM_FINAL,
                              location=location, delay_ms=p.delay_ms, functions=specs)
        if engine == "jvm":
            raise error_for(_UNSUPPORTED, "LDB-1005: engine='jvm' runs a streaming DataFrame "
                            "in two phases only (an aggregation that decomposes, two_phase "
                            "not False); this one runs with engine='python'")
        use_jvm = False  # auto: the whole-stream path runs in Python
    if use_jvm:
        if split is not None:
            partial = _jvm_stage(_source_columns(df, split.partial), split.partial, out_type=None,
                                 functions=specs)
            shuffled = partial.repartition(_partitions(df, partitions),
                                           *[partial[k] for k in split.keys])
            return _jvm_stage(shuffled, split.final, out_type=out_type, functions=specs)
        frame, _ = _input_frame(df, p, partitions)
        return _jvm_stage(frame, p, out_type=out_type, functions=specs)
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
