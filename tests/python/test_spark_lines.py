"""laminardb.spark across Spark lines: the running PySpark is a line the suite is
run on (scripts/test.sh runs it on the newest PySpark 4.x and on 3.5, each in its
own venv), another line is allowed with a warning; the JVM engine's jar taken is
the one compiled for the running line, its Arrow Java the running Spark's; on a
local master the Python workers run the driver's interpreter without
``PYSPARK_PYTHON``.

Marked ``spark``; the session test runs in the suite's session (conftest).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark import W1_DUCK, rows_of, spark_frame, trades

import laminardb.spark as lspark
from laminardb.bench import W1_SQL

pytestmark = pytest.mark.spark


def test_running_pyspark_is_a_tested_line() -> None:
    pyspark = pytest.importorskip("pyspark")
    with warnings.catch_warnings():
        warnings.simplefilter("error", lspark.UntestedSparkWarning)
        line = lspark.spark_line()
    assert line == tuple(int(x) for x in pyspark.__version__.split(".")[:2])
    assert line in lspark.TESTED_SPARK


def test_untested_line_is_allowed_with_a_warning() -> None:
    with pytest.warns(lspark.UntestedSparkWarning, match=r"PySpark 4\.97\.1 .*tested: 3\.5"):
        assert lspark.spark_line("4.97.1") == (4, 97)
    with warnings.catch_warnings():  # once per version
        warnings.simplefilter("error", lspark.UntestedSparkWarning)
        assert lspark.spark_line("4.97.1") == (4, 97)
    with pytest.raises(lspark.laminardb.ConfigError, match="LDB-6002"):
        lspark.spark_line("four")


def test_jar_is_the_running_lines() -> None:
    """The jar folder taken is the running line's, and its arrow-c-data is of the
    Arrow Java version the running Spark ships (the C Data Interface classes must
    match the vectors Spark writes)."""
    pyspark = pytest.importorskip("pyspark")
    found = lspark.jars()
    if not found:
        pytest.skip("the package holds no JVM engine (test_spark_jvm.py says whether it must)")
    folder = {p.parent for p in found}
    assert len(folder) == 1
    major = int(pyspark.__version__.split(".")[0])
    assert folder.pop().name == {3: "spark-3.5_2.12", 4: "spark-4_2.13"}[major]
    names = sorted(p.name for p in found)
    assert names[-1] == "laminardb-spark.jar"
    spark_jars = Path(os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "jars")
    vector = next(spark_jars.glob("arrow-vector-*.jar"))
    arrow = re.match(r"arrow-vector-(.+)\.jar$", vector.name)
    assert arrow is not None
    assert names[0] == f"arrow-c-data-{arrow.group(1)}.jar"


def test_local_workers_run_the_drivers_python(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PYSPARK_PYTHON, PySpark would start the workers with ``python3`` from
    the PATH (here: an interpreter that does not exist); on a local master the
    adapter's tasks run the driver's interpreter instead, and the session's own
    setting is left as it was."""
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = str(tmp_path / "no-such-python3")
    try:
        table = trades(rng, 3_000)
        out = lspark.run(spark_frame(spark, table, tmp_path / "in"), W1_SQL, engine="python")
        columns, want = duck(W1_DUCK, t=table)
        assert_same_rows(rows_of(out), want, columns)
        assert sc.pythonExec == str(tmp_path / "no-such-python3")
        # A user's PYSPARK_PYTHON stands: the adapter does not replace it.
        monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
        kept = lspark.run(spark_frame(spark, table, tmp_path / "in2"), W1_SQL, engine="python")
        with pytest.raises(Exception, match="no-such-python3"):
            kept.collect()
    finally:
        sc.pythonExec = before


#: A plain script: a session started without the jars, then configure() on it.
RUNNING_SESSION = """
import sys
from pyspark.sql import SparkSession
import laminardb.spark as lspark
from laminardb.bench import W1_SQL

spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
assert not lspark.jvm_engine_available(spark)
assert lspark.configure(spark) is spark
assert lspark.jvm_engine_available(spark)
df = spark.createDataFrame([("A", 1.0, 1, 100), ("A", 3.0, 3, 300), ("B", 2.0, 2, 1500)],
                           "symbol string, price double, volume long, ts long")
rows = sorted(tuple(r) for r in lspark.run(df, W1_SQL, engine="jvm").collect())
print("rows", rows)
assert rows == [(0, "A", 2.5, 2, 3.0, 1.0), (1000, "B", 2.0, 1, 2.0, 2.0)], rows
spark.stop()
"""


def test_configure_a_running_session(tmp_path: Path) -> None:
    """configure() on a session already running adds the jars (ADD JAR): the JVM
    engine then runs in it. In a process of its own: the suite's session has
    the jars from its start."""
    pytest.importorskip("pyspark")
    if not lspark.jars():
        pytest.skip("the package holds no JVM engine (test_spark_jvm.py says whether it must)")
    script = tmp_path / "running_session.py"
    script.write_text(RUNNING_SESSION, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "rows [(0, 'A', 2.5" in done.stdout
