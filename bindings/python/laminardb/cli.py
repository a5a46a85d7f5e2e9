"""The ``laminardb`` command line.

Subcommands: ``version`` (package and core versions). More subcommands (the
market-data ``demo``, running SQL files over CSV/Parquet/JSON) are added here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import laminardb
from laminardb import bench, demo

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every subcommand.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(
        prog="laminardb", description="LaminarDB, an embedded streaming SQL database."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("version", help="print the package and core library versions")
    demo.add_parser(commands)
    bench.add_parser(commands)
    return parser


def _version() -> int:
    """Print the versions.

    Returns:
        The exit status, 0.
    """
    print(f"laminardb {laminardb.__version__} (liblaminar {laminardb.core_version()})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: The arguments without the program name; None reads ``sys.argv``.

    Returns:
        The exit status: 0 on success, 2 for a usage error, 1 for an engine
        error (its LDB code is printed).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "version":
            return _version()
        handler = getattr(args, "handler", None)  # set by demo/bench.add_parser
        if handler is not None:
            return int(handler(args))
    except laminardb.LaminarError as e:
        print(f"laminardb: {e}", file=sys.stderr)
        return 1
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
