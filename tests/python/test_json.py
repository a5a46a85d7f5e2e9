"""JSON as VARCHAR text against DuckDB (issue 25 item 1).

``json_extract`` (``->``), ``json_extract_string`` (``->>``), ``json_type``,
``json_array_length`` and ``json_valid`` over generated documents and paths --
the paths of values the document holds and paths it does not -- in a stream
and in a SELECT over a table, compared with DuckDB's functions over the same
strings. Where DuckDB raises (an invalid document) the result is NULL here
(docs/SQL.md "JSON").
"""

from __future__ import annotations

import json
import random
from typing import Any

import duckdb
import pytest
from _oracle_util import announce_seed, examples, seed_strategy_bounds
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

KEYS = ["a", "b", "x y", "c.d", "é", "k~0", "s/t", "0", ""]
STRINGS = ["", "x", "é", "\u2028", "tab\there", 'q"uote', "back\\slash", "\x01\x1f", "😀", "/"]
FLOATS = [0.1, -0.0, 1.5, 2.5e-7, 1e21, 1e20, 123456.789, -3.25, 1e300, 5e-324, 0.000001]


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.random()
    if depth < 3 and kind < 0.25:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and kind < 0.45:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind < 0.6:
        return rng.choice([rng.randint(-(2**63), 2**64 - 1), rng.randint(-1000, 1000), 0])
    if kind < 0.7:
        return rng.choice(
            FLOATS + [rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30)]
        )
    if kind < 0.85:
        return rng.choice(STRINGS)
    return rng.choice([True, False, None])


def _text(rng: random.Random, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.3:
        text = text.replace(", ", " ,  ").replace(": ", " : ")
    if rng.random() < 0.2:
        text = f"  {text}\n"
    return text


def _paths(rng: random.Random, value: Any, prefix: str = "$", pointer: str = "") -> list[str]:
    """Paths of values inside ``value`` (in every spelling) and a few that miss."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "":
                continue
            plain = all(ch not in k for ch in ' ."[]*') and k.isprintable()
            step = f".{k}" if plain else f'."{k}"'
            esc = k.replace("~", "~0").replace("/", "~1")
            out += _paths(rng, v, prefix + step, f"{pointer}/{esc}")
            if prefix == "$":
                out.append(k)
        out.append(prefix + ".missing")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(rng, v, f"{prefix}[{i}]", f"{pointer}/{i}")
        out += [f"{prefix}[-1]", f"{prefix}[#-1]", f"{prefix}[{len(value)}]"]
    if pointer:
        out.append(pointer)
    return out


def _cases(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    cases: list[tuple[str, str]] = []
    for _ in range(n):
        value = _value(rng, 0)
        text = _text(rng, value)
        if rng.random() < 0.1:  # damage: a truncated or trailing document
            text = rng.choice([text[: max(0, len(text) - 1)], text + " x", "{", "nul"])
        paths = _paths(rng, value)
        cases += [(text, rng.choice(paths)) for _ in range(3)]
    return cases


def _duckdb(cases: list[tuple[str, str]]) -> list[tuple]:
    con = duckdb.connect()
    out = []
    for doc, path in cases:
        try:
            out.append(
                con.execute(
                    "SELECT json_extract(?, ?), json_extract_string(?, ?), json_type(?, ?),"
                    " json_array_length(?, ?), json_valid(?)",
                    [doc, path] * 4 + [doc],
                ).fetchone()
            )
        except duckdb.Error:  # an invalid document: NULL here, valid = false
            out.append((None, None, None, None, False))
    return out


ITEMS = (
    "json_extract(doc, path) AS e, json_extract_string(doc, path) AS s, "
    "json_type(doc, path) AS t, json_array_length(doc, path) AS n, json_valid(doc) AS v"
)


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_json_functions_match_duckdb_in_a_stream(seed):
    announce_seed(seed)
    cases = _cases(seed, 30)
    expected = _duckdb(cases)
    with laminardb.open() as db:
        db.execute(
            f"CREATE SOURCE j (doc JSON, path VARCHAR); CREATE STREAM r AS SELECT {ITEMS} FROM j;"
        )
        sub = db.subscribe("r")
        db.insert("j", {"doc": [d for d, _ in cases], "path": [p for _, p in cases]})
        db.run_until_idle()
        got = [tuple(r.values()) for r in sub.to_arrow_table().to_pylist()]
    for case, want, have in zip(cases, expected, got):
        assert tuple(want) == have, f"seed {seed}: {case!r}"
    assert len(got) == len(cases)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_arrow_operators_with_constant_paths_match_duckdb(seed):
    """``->`` / ``->>`` with a literal path (parsed once per batch) and an index."""
    announce_seed(seed)
    rng = random.Random(seed)
    docs = [_text(rng, _value(rng, 0)) for _ in range(40)]
    value = json.loads(rng.choice(docs))
    path = rng.choice(_paths(rng, value)).replace("'", "''")
    index = rng.randint(-3, 3)
    sql = (
        f"SELECT doc -> '{path}' AS a, doc ->> '{path}' AS b, doc -> {index} AS c, "
        f"doc ->> {index} AS d"
    )
    con = duckdb.connect()
    expected = []
    for doc in docs:
        row = con.execute(
            "SELECT json_extract(?, ?), json_extract_string(?, ?), json_extract(?, ?), "
            "json_extract_string(?, ?)",
            [doc, path.replace("''", "'"), doc, path.replace("''", "'"), doc, index, doc, index],
        ).fetchone()
        expected.append(row)
    with laminardb.open() as db:
        db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, doc JSON)")
        db.upsert("t", {"id": list(range(len(docs))), "doc": docs})
        db.run_until_idle()
        got = [tuple(r.values()) for r in db.query(sql + " FROM t ORDER BY id").to_pylist()]
    assert got == [tuple(r) for r in expected], f"seed {seed}: {path!r}"


@pytest.mark.parametrize(
    ("expr", "code", "column"),
    [
        ("json_extract(doc, '$.a[*]')", "LDB-1005", 45),
        ("json_extract(doc, '$.a b')", "LDB-1102", 45),
        ("json_extract(n, '$.a')", "LDB-2001", 40),
        ("doc -> 1.5", "LDB-2001", 34),
    ],
)
def test_json_refusals(expr, code, column):
    with laminardb.open() as db:
        db.execute("CREATE SOURCE j (doc JSON, n BIGINT)")
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(f"CREATE STREAM r AS SELECT {expr} FROM j")
        assert e.value.code == code
        assert (e.value.line, e.value.column) == (1, column)
