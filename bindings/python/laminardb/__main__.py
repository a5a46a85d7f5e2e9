"""``python -m laminardb``: the command line (see :mod:`laminardb.cli`)."""

from laminardb.cli import main

raise SystemExit(main())
