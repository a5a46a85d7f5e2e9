"""The one option table (issue 26, item 6) through the Python package.

Every scope -- ``open`` options (config), ``CREATE SOURCE / STREAM / SINK ...
WITH`` and subscriptions -- refuses an unknown key with LDB-6001 and an
ill-typed value with LDB-6002 (``ConfigError``), naming the key and the scope
and, for SQL, the object and the value's position; the defaults the table
documents are the ones the engine uses; docs/SQL.md and docs/C-API.md carry
the table as the engine reports it (scripts/options_doc.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import laminardb
from laminardb._laminar_cffi import ffi, lib

ROOT = Path(__file__).resolve().parents[2]

SCOPE = {"config": 1, "source": 2, "stream": 4, "subscription": 8, "sink": 16}


def _options_doc() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "options_doc", ROOT / "scripts" / "options_doc.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["options_doc"] = module  # NamedTuple needs its module registered
    spec.loader.exec_module(module)
    return module


def _rows() -> list[tuple[str, int, str, str, str]]:
    """The engine's option table, read through laminar_option_get."""
    rows = []
    for i in range(lib.laminar_option_count()):
        out = [ffi.new("const char**") for _ in range(4)]
        scopes = ffi.new("int32_t*")
        assert lib.laminar_option_get(i, out[0], scopes, out[1], out[2], out[3]) == 0
        key, kind, default, doc = (ffi.string(p[0]).decode() for p in out)
        rows.append((key, scopes[0], kind, default, doc))
    return rows


def _default(key: str, scope: str) -> str:
    [default] = [r[3] for r in _rows() if r[0] == key and r[1] & SCOPE[scope]]
    return default


def _bytes(text: str) -> int:
    """A default byte count: a whole number, optionally in MB (1024 * 1024)."""
    number, unit, _ = text.partition("MB")
    return int(number) * (1 << 20 if unit else 1)


@pytest.mark.parametrize("doc", ["sql", "c", "kafka"])
def test_docs_tables_are_the_engines(doc: str) -> None:
    options_doc = _options_doc()
    rows = [options_doc.Option(*r) for r in _rows()]
    path = options_doc.DOCS[doc][0]
    block = options_doc.block(path.read_text(encoding="utf-8"), doc)
    assert block is not None, f"{path.name} lacks its options:{doc} markers"
    assert block == options_doc.render(rows, doc), (
        f"{path.name} is out of date: python3 scripts/options_doc.py --write"
    )


def test_table_covers_every_scope_and_the_recent_options() -> None:
    rows = _rows()
    seen = 0
    for key, scopes, kind, _default_text, doc in rows:
        assert all((key, kind, doc))
        seen |= scopes
    assert seen == 31
    config_keys = {r[0] for r in rows if r[1] & SCOPE["config"]}
    assert {"read_only", "sink_root", "max_queue_bytes", "max_state_bytes"} <= config_keys


def _check(err: laminardb.ConfigError, code: str, phrase: str) -> None:
    assert err.code == code
    assert phrase in str(err)


def test_config_scope() -> None:
    with pytest.raises(laminardb.ConfigError) as unknown:
        laminardb.open(bogus_key=1)
    _check(unknown.value, "LDB-6001", "config option 'bogus_key'")
    with pytest.raises(laminardb.ConfigError) as bad:
        laminardb.open(buffer_size=1000)
    _check(bad.value, "LDB-6002", "config option 'buffer_size'")


SQL_CASES = [
    # (statement, code, key, scope, object, the value's text)
    ("CREATE SOURCE a (k VARCHAR) WITH (nope = 1)", "LDB-6001", "nope", "source", "a", "1)"),
    (
        "CREATE SOURCE a (k VARCHAR)\n  WITH (wait_strategy = 'doze')",
        "LDB-6002",
        "wait_strategy",
        "source",
        "a",
        "'doze'",
    ),
    (
        "CREATE STREAM s AS SELECT k FROM t WITH (buffer_size = 8)",
        "LDB-6001",
        "buffer_size",
        "stream",
        "s",
        "8)",
    ),
    (
        "CREATE STREAM s AS SELECT k, COUNT(*) AS n FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) WITH (late_output = 3)",
        "LDB-6002",
        "late_output",
        "stream",
        "s",
        "3)",
    ),
    (
        "CREATE SINK o FROM t2 INTO FILE (path = '/tmp', compress = 'gz')",
        "LDB-6001",
        "compress",
        "sink",
        "o",
        "'gz'",
    ),
]


@pytest.mark.parametrize(("sql", "code", "key", "scope", "obj", "value"), SQL_CASES)
def test_sql_scopes(sql: str, code: str, key: str, scope: str, obj: str, value: str) -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts)")
        db.execute("CREATE STREAM t2 AS SELECT k FROM t")
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute(sql)
        _check(info.value, code, f"{scope} option '{key}'")
        before = sql[: sql.index(value)]
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        assert (info.value.line, info.value.column, info.value.object) == (line, column, obj)
        assert f"line {line}, column {column}" in str(info.value)
        # The source and stream made before the failure are still there.
        assert {r["name"] for r in db.query("SHOW STREAMS").to_pylist()} == {"t2"}


def test_subscription_scope() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (k VARCHAR); CREATE STREAM s AS SELECT k FROM t")
        with pytest.raises(laminardb.ConfigError) as bad:
            db.subscribe("s", buffer_size=1000)
        _check(bad.value, "LDB-6002", "subscription option 'buffer_size'")
        # The structured call (laminar_subscription_open) through the binding.
        keys = [ffi.new("char[]", b"slow_subscriber"), ffi.new("char[]", b"bogus")]
        values = [ffi.new("char[]", b"drop"), ffi.new("char[]", b"1")]
        out = ffi.new("laminar_subscription**")
        err = ffi.new("laminar_error*")
        code = lib.laminar_subscription_open(
            db._require_open(),
            b"s",
            ffi.new("char*[]", keys),
            ffi.new("char*[]", values),
            2,
            out,
            err,
        )
        assert code == 6001
        assert "subscription option 'bogus'" in ffi.string(err.message).decode()
        assert out[0] == ffi.NULL


def test_documented_defaults_are_used() -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE STREAM s AS SELECT k, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '1' SECOND)"
        )
        sub = db.subscribe("s")
        metrics = {
            (r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()
        }
        sub.close()
    assert metrics["source", "t", "queue_capacity"] == int(_default("buffer_size", "config"))
    assert metrics["source", "t", "max_queue_bytes"] == _bytes(
        _default("max_queue_bytes", "config")
    )
    assert metrics["stream", "s", "max_state_bytes"] == int(_default("max_state_bytes", "stream"))
    # A subscription's default is the config's ("config max_queue_bytes").
    assert _default("max_queue_bytes", "subscription") == "config max_queue_bytes"
    assert (
        metrics["subscription", "s", "max_queue_bytes"] == metrics["source", "t", "max_queue_bytes"]
    )
    cores = int(_default("cores", "config"))
    reactors = {name for kind, name, _ in metrics if kind == "reactor"}
    assert reactors == {str(i) for i in range(cores)}
