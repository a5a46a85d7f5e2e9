"""Type stub of the generated cffi module (its contents come from laminar.h)."""

from typing import Any

ffi: Any
lib: Any
