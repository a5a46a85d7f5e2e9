"""What ``laminardb.spark`` needs to know about the Spark it runs on.

The Spark lines the tests run (:data:`TESTED_SPARK`, :func:`spark_line`), the
mapping between Spark ``StructType`` and Arrow schemas, Spark Connect and the
Python workers' interpreter (:func:`_map_in_arrow`), and the JVM engine's jars
for the running PySpark (:func:`jars`, :func:`configure`). Also the LDB codes
the adapter raises.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laminardb.errors import error_for

if TYPE_CHECKING:  # pragma: no cover -- typing only
    from pyspark.sql import DataFrame


#: The Spark lines (major, minor) the test command runs the adapter's suite on
#: (scripts/test.sh: the newest PySpark 4.x and 3.5). PySpark of another line
#: (``laminardb[spark]`` takes ``pyspark>=3.5``) runs with an
#: :class:`UntestedSparkWarning`.
TESTED_SPARK: tuple[tuple[int, int], ...] = ((3, 5), (4, 3))


#: The JVM engine's jars shipped in the wheel: ``laminardb/jars`` (setup.py), next
#: to the package's own modules, one level above this one.
_JARS = Path(__file__).resolve().parents[1] / "jars"

#: The JVM engine's jars in ``laminardb/jars``, one folder per Spark line:
#: (the Spark major version, its minor or None for any, the Scala binary
#: version of the line's Spark build) -> the folder. Each is compiled against
#: that line's artifacts on Maven Central (bindings/java/spark/CMakeLists.txt).
_JVM_LINES: dict[tuple[int, int | None, str], str] = {
    (3, 5, "2.12"): "spark-3.5_2.12",
    (4, None, "2.13"): "spark-4_2.13",
}


_SCHEMA_MISMATCH = 3003


_COLUMN_TYPE = 3004


_UNKNOWN_OBJECT = 1002


_UNSUPPORTED = 1005


_CONFIG_VALUE = 6002


_CONFIG_CONFLICT = 6003


_SCHEMA_INVALID = 2003


#: The JVM engine's entry points (bindings/java/spark, in laminardb/jars).
_JVM_STAGE = "org.laminardb.SparkFrames"


#: The session extension planning the JVM engine's streaming stages.
_JVM_EXTENSIONS = "org.laminardb.LaminarExtensions"


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
    root = _JARS
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
                         _JARS.glob("*/laminardb-spark.jar"))
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
