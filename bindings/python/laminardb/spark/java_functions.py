"""Java functions for the JVM engine (``laminardb.spark.run(..., java_functions=[...])``).

A :class:`JavaFunction` names a class on the Spark session's class path that
implements ``org.laminardb.VectorFunction``, ``org.laminardb.RowFunction`` or
``org.laminardb.AggregateFunction`` (docs/JAVA.md), with its SQL name and types.
Every task of the JVM engine makes a new instance and registers it in its
engine before the engine opens (``org.laminardb.FunctionSpec``). The driver
plans the SQL with a stand-in of the same name and types that is never called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pyarrow as pa

from laminardb.aggregates import Aggregate
from laminardb.functions import Function, arrow_format


def _java_only(*args: object) -> pa.Array:
    """A stand-in's body: Java functions run in Spark's JVM only."""
    raise RuntimeError("a Java function runs in the JVM engine only")


class _JavaOnlyAggregate:
    """A stand-in aggregate for planning (never called)."""

    def init(self) -> None:
        _java_only()

    def update(self, state: object, *args: object) -> None:
        _java_only()

    def merge(self, a: object, b: object) -> None:
        _java_only()

    def finalize(self, state: object) -> None:
        _java_only()


@dataclasses.dataclass(frozen=True)
class JavaFunction:
    r"""A Java function (or aggregate) that each JVM-engine task registers.

    Attributes:
        name: The SQL name.
        class_name: The implementing class (public, with a public no-argument
            constructor), on the session's class path (``spark.jars``, or
            ``ADD JAR`` on a running session).
        params: The parameter types, SQL names as docs/JAVA.md lists them
            (``"DOUBLE"``, ``"DECIMAL(12,2)"``).
        returns: The return type.
        aggregate: True for an ``org.laminardb.AggregateFunction``; False for
            a ``VectorFunction`` or ``RowFunction``.
        deterministic: ``FunctionOptions.deterministic`` (scalar functions).
        called_on_null: ``FunctionOptions.calledOnNull``.

    Example:
        >>> from laminardb.spark import JavaFunction
        >>> f = JavaFunction("usd", "com.example.Usd", ["DOUBLE"], "DOUBLE")
        >>> f.spec().split("\n")
        ['usd', 'com.example.Usd', 'scalar', '-', 'DOUBLE', 'DOUBLE']
    """

    name: str
    class_name: str
    params: Sequence[str]
    returns: str
    aggregate: bool = False
    deterministic: bool = False
    called_on_null: bool = False

    def __post_init__(self) -> None:
        """Check the types as the engine will (TypeError for an unknown one)."""
        for spec in (*self.params, self.returns):
            arrow_format(spec)
        if not self.params:
            raise TypeError(f"Java function '{self.name}': declare at least one parameter")

    def spec(self) -> str:
        """The text ``org.laminardb.FunctionSpec.parse`` reads (one field a line)."""
        flags = ("d" if self.deterministic else "") + ("n" if self.called_on_null else "")
        return "\n".join([self.name, self.class_name,
                          "aggregate" if self.aggregate else "scalar", flags or "-",
                          self.returns, *self.params])

    def stand_in(self) -> Function | Aggregate:
        """A Python function of the same name and types for the driver's planning."""
        if self.aggregate:
            return Aggregate(self.name, _JavaOnlyAggregate, list(self.params), self.returns)
        return Function(self.name, _java_only, list(self.params), self.returns)
