"""laminardb.spark through Spark Connect (PySpark 4: ``SparkSession.builder.remote``):
the Python engine runs (``mapInArrow`` is a Connect operation), batch and
Structured Streaming, and gives DuckDB's answer; the JVM engine, which needs the
session's JVM through py4j, is refused with LDB-6002 (``auto`` takes Python).

The Connect server is a local one the client starts (``remote("local[2]")``,
with the server jar PySpark ships), in a process of its own: the suite's session
is a classic one. Its Python workers are the server's: ``PYSPARK_PYTHON`` in its
environment names this interpreter. Marked ``spark``; skipped without PySpark's
``connect`` extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark import W1_DUCK, trades

pytestmark = pytest.mark.spark

SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
import laminardb, laminardb.spark as lspark
from laminardb.bench import W1_SQL

work = sys.argv[1]
spark = (SparkSession.builder.remote("local[2]").config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
df = spark.read.parquet(work + "/in")
out = {}
for engine in ("python", "auto"):
    out[engine] = [list(r) for r in lspark.run(df, W1_SQL, engine=engine).collect()]
try:
    lspark.run(df, W1_SQL, engine="jvm")
except laminardb.ConfigError as e:
    out["jvm"] = e.code
events = spark.readStream.schema(df.schema).parquet(work + "/in")
query = (lspark.run(events, W1_SQL, state_location=work + "/state").writeStream
         .format("memory").queryName("w1").start())
query.processAllAvailable()
query.stop()
out["stream"] = [list(r) for r in spark.sql("SELECT * FROM w1").collect()]
print("RESULT " + json.dumps(out))
spark.stop()
"""


def test_python_engine_through_spark_connect(rng: np.random.Generator, tmp_path: Path) -> None:
    pyspark = pytest.importorskip("pyspark")
    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip("Spark Connect with a local server: PySpark 4")
    pytest.importorskip("grpc")  # pyspark[connect]
    table = trades(rng, 5_000)
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "t.parquet")
    script = tmp_path / "connect.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line[len("RESULT "):])
    columns, want = duck(W1_DUCK, t=table)
    for engine in ("python", "auto"):
        assert_same_rows([tuple(r) for r in out[engine]], want, columns)
    assert out["jvm"] == "LDB-6002"
    # One micro-batch: the windows its largest event time closed (W1's source
    # declares WATERMARK FOR ts AS ts: no delay).
    watermark = max(table.column("ts").to_pylist())
    assert_same_rows([tuple(r) for r in out["stream"]],
                     [r for r in want if r[0] + 1000 <= watermark], columns)
