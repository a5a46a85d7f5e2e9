"""The documentation is executable and consistent with the header.

* every ```python block of README.md and docs/*.md runs (in order, per file);
* the LDB code list of include/laminar.h equals docs/C-API.md's table and
  laminardb.errors.CODES;
* every code in laminar.h is produced by some test (except the two that need
  fault injection, which does not exist yet).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import laminardb

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def _header_codes() -> dict[str, int]:
    text = (ROOT / "include" / "laminar.h").read_text()
    return {
        name: int(value)
        for name, value in re.findall(r"\b(LAMINAR_(?:OK|ERR_[A-Z_]+)) = (\d+)", text)
    }


@pytest.mark.parametrize("path", [p for p in DOCS if _python_blocks(p)], ids=lambda p: p.name)
def test_doc_python_examples_run(path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"doc:{path.name}"}
    for block in _python_blocks(path):
        exec(compile(block, str(path), "exec"), namespace)  # noqa: S102 -- our own docs


def test_codes_match_docs_and_python() -> None:
    header = _header_codes()
    assert header["LAMINAR_OK"] == 0
    doc = (ROOT / "docs" / "C-API.md").read_text()
    documented = {
        name: int(num)
        for num, name in re.findall(r"^\| (\d+) \| `(LAMINAR_[A-Z_]+)` \|", doc, re.M)
    }
    assert documented == header
    python_numbers = set(laminardb.CODES)
    assert python_numbers == {v for v in header.values() if v != 0}


def test_every_code_is_produced_by_a_test() -> None:
    sources = "".join(p.read_text() for p in (ROOT / "tests").rglob("*.[ch]"))
    sources += "".join(p.read_text() for p in (ROOT / "tests" / "python").glob("*.py"))
    needs_fault_injection = {"LAMINAR_ERR_INTERNAL"}
    missing = [
        name
        for name, number in _header_codes().items()
        if number != 0
        and name not in needs_fault_injection
        and name not in sources
        and f"LDB-{number}" not in sources
    ]
    assert missing == []


def test_readme_c_quickstart_is_an_excerpt_of_the_tested_program() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```c\n(.*?)```", readme, flags=re.S)
    assert blocks, "README.md lost its C quick start"
    program = {
        line.strip() for line in (ROOT / "tests/install/quickstart.c").read_text().splitlines()
    }
    lines = [line.strip() for line in blocks[0].splitlines() if line.strip()]
    assert [line for line in lines if line not in program] == []
