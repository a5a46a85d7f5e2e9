#!/usr/bin/env python3
"""Generate the option tables of docs/SQL.md and docs/C-API.md from the engine.

The one table of options lives in ``src/db/options.c`` and is read through
``laminar_option_count`` / ``laminar_option_get``. Each doc holds its part of
it between two marker lines::

    <!-- options:sql begin ... -->     (docs/SQL.md: source, stream, sink)
    <!-- options:c begin ... -->       (docs/C-API.md: config, subscription)
    <!-- options:kafka begin ... -->   (docs/KAFKA.md: the Kafka sink's)

Usage::

    python3 scripts/options_doc.py --lib build/liblaminar.so          # check
    python3 scripts/options_doc.py --lib build/liblaminar.so --write  # rewrite

``tests/python/test_options.py`` runs the same check through the ``laminardb``
package, so a table and its docs cannot drift apart.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]

# laminar_option_scope bits, in the order the scope column lists them.
SCOPES = {1: "config", 2: "source", 4: "stream", 8: "subscription", 16: "sink"}

# Which scopes each doc's table shows, and the keys of those scopes it leaves out.
DOCS: dict[str, tuple[Path, int, frozenset[str]]] = {
    "sql": (ROOT / "docs" / "SQL.md", 2 | 4 | 16, frozenset()),
    "c": (ROOT / "docs" / "C-API.md", 1 | 8, frozenset()),
    "kafka": (
        ROOT / "docs" / "KAFKA.md",
        2 | 16,
        frozenset(
            {
                "path",
                "buffer_size",
                "max_queue_bytes",
                "backpressure",
                "wait_strategy",
                "watermark",
                "allowed_lateness",
                "wal_mode",
                "checkpoint_interval",
                "alignment_group",
                "max_drift",
                "watermark_key",
            }
        ),
    ),
}


class Option(NamedTuple):
    """One row of the engine's option table (laminar_option_get)."""

    key: str
    scopes: int
    type: str
    default: str
    doc: str


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(text: str) -> str:
    if text == "":
        return "none"
    if text.startswith("config "):
        return f"config `{text[7:]}`"
    return f"`{text}`"


def render(options: list[Option], doc: str) -> str:
    """The markdown table of ``options`` for ``doc`` ("sql" or "c").

    Args:
        options: The engine's rows, in table order.
        doc: Which doc's table: "sql" (WITH options), "c" (config and
            subscription options) or "kafka" (the Kafka sink's).

    Returns:
        The lines between the doc's markers (a header row, a rule and one row
        per option in the doc's scopes), newline-terminated.
    """
    _, mask, skip = DOCS[doc]
    lines = [
        "| option | scope | type | default | description |",
        "|---|---|---|---|---|",
    ]
    for o in options:
        shown = o.scopes & mask
        if not shown or o.key in skip:
            continue
        scope = ", ".join(name for bit, name in SCOPES.items() if shown & bit)
        lines.append(
            f"| `{o.key}` | {scope} | {_cell(o.type)} | {_cell(_default(o.default))} "
            f"| {_cell(o.doc)} |"
        )
    return "\n".join(lines) + "\n"


_BLOCK = r"(<!-- options:{doc} begin[^\n]*-->\n)(.*?)(<!-- options:{doc} end -->)"


def block(text: str, doc: str) -> str | None:
    """The text between ``doc``'s markers in ``text``, or None without them."""
    m = re.search(_BLOCK.format(doc=doc), text, flags=re.S)
    return m.group(2) if m else None


def replace_block(text: str, doc: str, table: str) -> str:
    """``text`` with the lines between ``doc``'s markers replaced by ``table``."""
    return re.sub(
        _BLOCK.format(doc=doc), lambda m: m.group(1) + table + m.group(3), text, flags=re.S
    )


def options_from_library(path: str) -> list[Option]:
    """Read the option table from a built liblaminar.so with ctypes."""
    lib = ctypes.CDLL(path)
    lib.laminar_option_count.restype = ctypes.c_int32
    get = lib.laminar_option_get
    text = ctypes.c_char_p
    get.argtypes = [
        ctypes.c_int32,
        ctypes.POINTER(text),
        ctypes.POINTER(ctypes.c_int32),
        ctypes.POINTER(text),
        ctypes.POINTER(text),
        ctypes.POINTER(text),
    ]
    rows = []
    for i in range(lib.laminar_option_count()):
        key, kind, default, doc = text(), text(), text(), text()
        scopes = ctypes.c_int32()
        if get(i, key, scopes, kind, default, doc) != 0:
            raise RuntimeError(f"laminar_option_get({i}) failed")
        rows.append(
            Option(
                (key.value or b"").decode(),
                scopes.value,
                (kind.value or b"").decode(),
                (default.value or b"").decode(),
                (doc.value or b"").decode(),
            )
        )
    return rows


def main() -> int:
    """Check (or with --write, rewrite) the docs' option tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=str(ROOT / "build" / "liblaminar.so"))
    parser.add_argument("--write", action="store_true", help="rewrite the docs")
    args = parser.parse_args()
    options = options_from_library(args.lib)
    stale = []
    for doc, (path, _, _) in DOCS.items():
        text = path.read_text(encoding="utf-8")
        if block(text, doc) is None:
            print(f"{path}: no <!-- options:{doc} begin --> marker", file=sys.stderr)
            return 1
        table = render(options, doc)
        if block(text, doc) != table:
            stale.append(path)
            if args.write:
                path.write_text(replace_block(text, doc, table), encoding="utf-8")
    for path in stale:
        print(f"{path}: {'rewritten' if args.write else 'out of date'}")
    return 0 if args.write or not stale else 1


if __name__ == "__main__":
    sys.exit(main())
