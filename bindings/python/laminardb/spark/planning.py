"""The driver's plan of a ``laminardb.spark`` run: :func:`plan`, :class:`Plan`.

The SQL is run in an in-memory database on the driver (bad SQL fails here,
before any task), the DataFrame is checked against its source, and the core
reports how the input may be split and whether the aggregation runs in two
phases (:class:`TwoPhase`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import laminardb
from laminardb.errors import error_for
from laminardb.spark.compat import (
    _COLUMN_TYPE,
    _CONFIG_VALUE,
    _SCHEMA_MISMATCH,
    _UNKNOWN_OBJECT,
    _UNSUPPORTED,
    _arrow_schema,
    _arrow_type_fits,
    spark_line,
)

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Input:
    """One input of a stream over a ``UNION ALL`` of sources (:attr:`Plan.inputs`).

    Attributes:
        source: The source this input's DataFrame feeds.
        columns: The source's column names, in its order.
        event_time: The source's watermark column, or None.
        delay_ms: Its watermark delay in milliseconds (0 without one).
        keys: Its columns to hash on (``"key"`` only), the i-th at the same
            union column for every input.
        input_schema: The Arrow schema the tasks push (the source's columns).
    """

    source: str
    columns: tuple[str, ...]
    event_time: str | None
    delay_ms: int
    keys: tuple[str, ...]
    input_schema: pa.Schema


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
        inputs: A stream over a ``UNION ALL`` of sources: each input (the
            first is also ``source``, ``columns``... above); empty otherwise.
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
    inputs: tuple[Input, ...] = ()


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


def _streams(db: laminardb.Connection) -> list[str]:
    """Names of the plain streams (not views) the SQL declared."""
    table = db.query("SHOW STREAMS")
    return [str(name) for name in table.column(0).to_pylist()]


def _groups(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The partitioning rows of each input: a group starts at each ``source`` row."""
    groups: list[list[dict[str, Any]]] = []
    for r in rows:
        if r["role"] == "source":
            groups.append([])
        if r["role"] != "partitioning":
            groups[-1].append(r)
    return groups


def _frames(df: DataFrame | Mapping[str, DataFrame], stream: str,
            roots: list[str]) -> list[DataFrame]:
    """The DataFrame of each root source: ``df``, or ``df[name]`` per input."""
    if not isinstance(df, Mapping):
        if len(roots) > 1:
            raise error_for(
                _CONFIG_VALUE,
                f"LDB-6002: stream '{stream}' reads {len(roots)} sources "
                f"({', '.join(roots)}) through UNION ALL or an ASOF JOIN: pass one "
                f"DataFrame per source, "
                f"e.g. run({{{', '.join(repr(r) + ': df_' + r for r in roots)}}}, ...)",
                object=stream,
            )
        return [df]
    by_lower = {str(name).lower(): frame for name, frame in df.items()}
    wanted = {r.lower() for r in roots}
    for name in df:
        if str(name).lower() not in wanted:
            raise error_for(
                _UNKNOWN_OBJECT,
                f"LDB-1002: stream '{stream}' reads {', '.join(roots)}, not '{name}'",
                object=str(name),
            )
    missing = [r for r in roots if r.lower() not in by_lower]
    if missing:
        raise error_for(
            _CONFIG_VALUE,
            f"LDB-6002: no DataFrame for source '{missing[0]}' of stream '{stream}' "
            f"(pass one per source: {', '.join(roots)})",
            object=missing[0],
        )
    return [by_lower[r.lower()] for r in roots]


def _check_frame(df: DataFrame, root: str, source_schema: pa.Schema,
                 event: dict[str, Any] | None) -> list[pa.Field]:
    """The source's fields, after checking ``df`` has each with a fitting type."""
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
    return fields


def plan(df: DataFrame | Mapping[str, DataFrame], sql: str, *, source: str | None = None,
         stream: str | None = None,
         **options: Any) -> Plan:  # noqa: ANN401 -- laminardb.open's option values
    """Check ``df`` against ``sql`` on the driver and work out how to run it.

    Args:
        df: The input DataFrame; for a stream over a ``UNION ALL`` of
            sources, a mapping from each source's name to its DataFrame.
        sql: ``CREATE SOURCE`` / ``CREATE STREAM`` statements.
        source: The source ``df`` feeds (default: the stream's root source).
        stream: The stream to return (default: the only stream declared).
        **options: ``laminardb.open`` options for each task's engine.

    Returns:
        The :class:`Plan`.

    Raises:
        SQLError: The SQL does not run (its LDB-1xxx code, line and column);
            LDB-1002 for an unknown ``source``/``stream``, or a ``source`` (or
            a key of ``df``) the stream does not read; LDB-1005 for a
            materialized view, for SQL declaring several streams without
            ``stream=``, or a union with a stream among its inputs.
        ConfigError: LDB-6002 for one DataFrame given to a stream over a
            union, or a union's source without a DataFrame.
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
        groups = _groups(rows)
        roots = [str(g[0]["name"]) for g in groups]
        root = roots[0]
        if source is not None and source.lower() not in (r.lower() for r in roots):
            raise error_for(
                _UNKNOWN_OBJECT,
                f"LDB-1002: stream '{stream}' reads source '{root}', not '{source}'",
                object=source,
            )
        kind = next(r["name"] for r in rows if r["role"] == "partitioning")
        schemas = [db.schema(r) for r in roots]
        output_schema = db.schema(stream)
        split = _two_phase(db, stream, options) if len(roots) == 1 else None

    inputs = []
    for frame, group, name, source_schema in zip(_frames(df, stream, roots), groups, roots,
                                                 schemas):
        event = next((r for r in group if r["role"] == "event_time"), None)
        fields = _check_frame(frame, name, source_schema, event)
        inputs.append(Input(
            source=name,
            columns=tuple(f.name for f in fields),
            event_time=None if event is None else str(event["name"]),
            delay_ms=0 if event is None else int(event["value"]),
            keys=tuple(str(r["name"]) for r in group if r["role"] == "key"),
            input_schema=pa.schema(fields),
        ))
    first = inputs[0]
    return Plan(
        sql=sql,
        source=first.source,
        stream=stream,
        columns=first.columns,
        event_time=first.event_time,
        delay_ms=first.delay_ms,
        partitioning=str(kind),
        keys=first.keys,
        input_schema=first.input_schema,
        output_schema=output_schema,
        options=tuple(sorted(options.items())),
        two_phase=split,
        inputs=tuple(inputs) if len(inputs) > 1 else (),
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
