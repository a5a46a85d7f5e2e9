"""Build-time helper: turn ``include/laminar.h`` into the cffi extension.

The cffi ``cdef`` is generated from the public header, never copied by hand
(STYLE §1.2): comments, preprocessor lines and the ``LAMINAR_API`` export marker
are dropped, as are the lines inside ``#ifdef __cplusplus`` blocks (the
``extern "C" {`` wrapper); everything else is fed to ``ffibuilder.cdef``.

The extension is out-of-line API mode: ``set_source`` compiles a C module that
includes ``laminar.h`` itself, so the C compiler checks every declaration, struct
layout and enum value of the cdef against the real header, and the module links
to ``liblaminar`` with an ``$ORIGIN`` rpath so the copy shipped next to it in the
package is the one loaded.

Used by ``setup.py``; importing it needs cffi, nothing else of the package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

MODULE_NAME = "laminardb._laminar_cffi"

#: Functions implemented in Python (``@ffi.def_extern`` in ``laminardb.sinks``,
#: ``laminardb.functions`` and ``laminardb.aggregates``) that the core calls
#: through ``laminar_sink_callbacks``, ``laminar_function_register`` and
#: ``laminar_aggregate_register``.
PYTHON_CALLBACKS = """
extern "Python" int lm_py_sink_begin(void*, uint64_t);
extern "Python" int lm_py_sink_write(void*, struct ArrowArray*, struct ArrowSchema*);
extern "Python" int lm_py_sink_pre_commit(void*, uint64_t);
extern "Python" int lm_py_sink_commit(void*, uint64_t);
extern "Python" int lm_py_sink_rollback(void*, uint64_t);
extern "Python" int lm_py_sink_recover(void*, uint64_t);
extern "Python" int lm_py_udf_call(void*, const struct ArrowArray*, const struct ArrowSchema*,
                                   struct ArrowArray*, struct ArrowSchema*, char*, size_t);
extern "Python" void lm_py_udf_destroy(void*);
extern "Python" int lm_py_udaf_update(void*, void*, const uint32_t*, const struct ArrowArray*,
                                      const struct ArrowSchema*, char*, size_t);
extern "Python" int lm_py_udaf_retract(void*, void*, const uint32_t*, const struct ArrowArray*,
                                       const struct ArrowSchema*, char*, size_t);
extern "Python" int lm_py_udaf_merge(void*, void*, const void*, char*, size_t);
extern "Python" int lm_py_udaf_finalize(void*, const void*, int64_t, struct ArrowArray*,
                                        struct ArrowSchema*, char*, size_t);
extern "Python" int64_t lm_py_udaf_serialize(void*, const void*, void*, int64_t);
extern "Python" int lm_py_udaf_deserialize(void*, void*, const void*, int64_t);
extern "Python" void lm_py_udaf_destroy_state(void*, void*);
extern "Python" void lm_py_udaf_destroy(void*);
"""

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"//[^\n]*")


def _strip_comments(text: str) -> str:
    """Remove C comments, keeping the line structure.

    Args:
        text: C source text.

    Returns:
        The text with every comment replaced by blanks (block comments keep
        their newlines, so line numbers still match the header).
    """
    text = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return _LINE_COMMENT.sub("", text)


def cdef_from_header(header_text: str) -> str:
    """Derive the cffi ``cdef`` text from the contents of ``laminar.h``.

    Args:
        header_text: The full text of ``laminar.h``.

    Returns:
        Declarations cffi's parser accepts: no comments, no preprocessor lines,
        no ``LAMINAR_API`` marker, nothing from ``__cplusplus`` blocks.

    Raises:
        ValueError: If the header's ``#if``/``#endif`` lines do not balance.
    """
    lines = _strip_comments(header_text).splitlines()
    out: list[str] = []
    # One entry per open #if block: True when its content must be skipped.
    stack: list[bool] = []
    for raw in lines:
        line = raw.strip()
        if line.startswith("#"):
            directive = line[1:].strip()
            if directive.startswith(("if", "ifdef", "ifndef")):
                stack.append("__cplusplus" in directive)
            elif directive.startswith("endif"):
                if not stack:
                    raise ValueError("unbalanced #endif in laminar.h")
                stack.pop()
            continue
        if any(stack):
            continue
        line = re.sub(r"\bLAMINAR_API\b", "", raw).rstrip()
        if line.strip():
            out.append(line)
    if stack:
        raise ValueError("unterminated #if block in laminar.h")
    return "\n".join(out) + "\n"


def make_ffibuilder(
    header: Path,
    *,
    library_dirs: Sequence[str] = (),
    extra_link_args: Sequence[str] = (),
) -> object:
    """Configure a ``cffi.FFI`` builder for ``laminardb._laminar_cffi``.

    Args:
        header: Path of ``laminar.h``; its directory becomes an include dir.
        library_dirs: Directories holding ``liblaminar.so`` for the link step.
        extra_link_args: Extra linker flags (the ``$ORIGIN`` rpath is always added).

    Returns:
        The configured ``cffi.FFI`` object (typed ``object`` so this module does
        not need cffi's stubs).
    """
    import cffi  # build dependency only

    ffibuilder = cffi.FFI()
    ffibuilder.cdef(cdef_from_header(header.read_text(encoding="utf-8")))
    ffibuilder.cdef(PYTHON_CALLBACKS)
    ffibuilder.set_source(
        MODULE_NAME,
        '#include "laminar.h"\n',
        include_dirs=[str(header.parent)],
        library_dirs=list(library_dirs),
        libraries=["laminar"],
        extra_link_args=["-Wl,-rpath,$ORIGIN", *extra_link_args],
    )
    return ffibuilder
