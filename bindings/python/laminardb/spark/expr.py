"""``with_expr``: a LaminarDB SQL expression evaluated over a DataFrame's Arrow batches."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import laminardb
from laminardb.errors import error_for
from laminardb.spark.compat import _arrow_schema, _map_in_arrow, _spark_schema
from laminardb.spark.partition import _batch_task
from laminardb.spark.planning import plan

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame


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
    if pa.types.is_date32(arrow_type):
        return "DATE"
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
