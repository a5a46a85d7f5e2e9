"""Type hints of the Arrow PyCapsule Interface, as the specification gives them.

Objects that export Arrow data to ``laminardb`` (pyarrow, polars, nanoarrow,
pandas...) implement one of these protocols; ``Subscription`` implements
:class:`ArrowStreamExportable`. Static typing only: nothing here is checked at
run time.
"""

from __future__ import annotations

from typing import Protocol

__all__ = [
    "ArrowArrayExportable",
    "ArrowSchemaExportable",
    "ArrowStreamExportable",
]


class ArrowSchemaExportable(Protocol):
    """An object exporting an ``ArrowSchema`` capsule (named ``"arrow_schema"``)."""

    def __arrow_c_schema__(self) -> object:
        """Export the schema as a PyCapsule named ``"arrow_schema"``."""
        ...


class ArrowArrayExportable(Protocol):
    """An object exporting an ``ArrowSchema`` and an ``ArrowArray`` capsule."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """Export as a pair of capsules ``("arrow_schema", "arrow_array")``."""
        ...


class ArrowStreamExportable(Protocol):
    """An object exporting an ``ArrowArrayStream`` capsule."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """Export as a PyCapsule named ``"arrow_array_stream"``."""
        ...
