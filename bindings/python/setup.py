"""Build script of the ``laminardb`` package: the C core, then the cffi extension.

``pip install ./bindings/python`` (from the repository root) runs the custom
``build_ext`` below, which

1. configures and builds ``liblaminar`` with CMake (Release, no tests, no
   benchmarks) from the repository two levels above this file, in a build
   directory under ``build_temp`` (or ``$LAMINAR_CORE_BUILD_DIR``, kept between
   runs for incremental builds);
2. generates the cffi ``cdef`` from ``include/laminar.h`` and compiles the
   API-mode extension ``laminardb._laminar_cffi`` against it, with an
   ``$ORIGIN`` rpath, and the small C extension ``laminardb._capsule`` (the
   Arrow PyCapsules: a capsule's struct address, a struct moved into a capsule);
3. copies the library, under its soname (``liblaminar.so.0``), next to the
   extension, so the wheel is self-contained;
4. when a JDK and mvn are here, builds laminardb.spark's JVM engine: one
   ``laminardb-spark.jar`` per Spark line, compiled against that line's own
   artifacts on Maven Central (bindings/java/spark/CMakeLists.txt), and copies
   each line's folder (the jar and the ``arrow-c-data`` jar it needs) into
   ``laminardb/jars/<line>/``. A failed JVM-engine build (Maven Central out of
   reach, say) leaves the engine out with a warning, unless
   ``LAMINAR_SPARK_ENGINE=ON`` asks for it (then it fails the install).

Environment knobs: ``LAMINAR_SOURCE_DIR`` (the repository root, when this file
is not inside it), ``LAMINAR_CORE_BUILD_DIR``, ``LAMINAR_NANOARROW_ARCHIVE``
(passed to CMake: a local nanoarrow source archive instead of a download),
``LAMINAR_LIBRARY`` (an already built ``liblaminar.so`` to use instead of
running CMake, e.g. the one of a ctest build; its build tree's
``bindings/java/spark`` jars are taken when there), ``LAMINAR_SPARK_ENGINE``
(``ON``: the JVM engine must be built; ``OFF``: not built).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
MODULE_NAME = "laminardb._laminar_cffi"
#: The PyCapsule helper (laminardb/_capsule.c): plain C against Python.h and the
#: Arrow structs of laminar.h; it does not link liblaminar.
CAPSULE_MODULE = "laminardb._capsule"
_EXTENSION_ATTRS = (
    "sources",
    "include_dirs",
    "define_macros",
    "library_dirs",
    "libraries",
    "extra_compile_args",
    "extra_link_args",
)


def _repo_root() -> Path:
    """Locate the repository root (the directory holding ``include/laminar.h``).

    Returns:
        The root directory.

    Raises:
        RuntimeError: If the header cannot be found.
    """
    candidates = [os.environ.get("LAMINAR_SOURCE_DIR"), str(HERE.parents[1])]
    for candidate in candidates:
        if candidate and (Path(candidate) / "include" / "laminar.h").is_file():
            return Path(candidate).resolve()
    raise RuntimeError(
        "cannot find include/laminar.h two levels above bindings/python; "
        "set LAMINAR_SOURCE_DIR to the LaminarDB source tree"
    )


def _version() -> str:
    """Read the package version from the ``LAMINAR_VERSION`` macro.

    Returns:
        The version string, e.g. ``"0.1.0"``.

    Raises:
        RuntimeError: If the macro is missing.
    """
    text = (_repo_root() / "include" / "laminar.h").read_text(encoding="utf-8")
    match = re.search(r'^#define LAMINAR_VERSION "([^"]+)"', text, re.MULTILINE)
    if match is None:
        raise RuntimeError("laminar.h lacks #define LAMINAR_VERSION")
    return match.group(1)


def _load_ffi_build() -> ModuleType:
    """Import ``laminardb/_ffi_build.py`` by path (the package is not built yet).

    Returns:
        The module.
    """
    path = HERE / "laminardb" / "_ffi_build.py"
    spec = importlib.util.spec_from_file_location("_laminar_ffi_build", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _soname(library: Path) -> str:
    """Find the soname of the library: what the extension's ``DT_NEEDED`` names.

    Args:
        library: Path of ``liblaminar.so`` (usually a link to the soname file).

    Returns:
        The soname, e.g. ``liblaminar.so.0``.
    """
    try:
        dynamic = subprocess.run(
            ["readelf", "-d", str(library)], check=True, capture_output=True, text=True
        ).stdout
        match = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
        if match:
            return match.group(1)
    except (OSError, subprocess.CalledProcessError):
        pass
    # Without binutils: CMake makes liblaminar.so a link to the soname file.
    return Path(os.readlink(library)).name if library.is_symlink() else library.name


class BuildCoreAndExt(build_ext):
    """``build_ext`` that first builds ``liblaminar`` and then the cffi module."""

    def _build_core(self, root: Path) -> Path:
        """Configure and build the core library with CMake.

        Args:
            root: The repository root.

        Returns:
            The path of ``liblaminar.so`` in the build directory.

        Raises:
            RuntimeError: If the build produced no library.
        """
        build_dir = Path(
            os.environ.get("LAMINAR_CORE_BUILD_DIR")
            or Path(self.build_temp).resolve() / "laminar-core"
        )
        configure = [
            "cmake",
            "-S",
            str(root),
            "-B",
            str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DLAMINAR_BUILD_TESTS=OFF",
            "-DLAMINAR_BUILD_BENCH=OFF",
            # A user's compiler may warn where ours did not; never fail an install.
            "-DLAMINAR_WERROR=OFF",
        ]
        archive = os.environ.get("LAMINAR_NANOARROW_ARCHIVE")
        if archive:
            configure.append(f"-DLAMINAR_NANOARROW_ARCHIVE={archive}")
        engine = os.environ.get("LAMINAR_SPARK_ENGINE", "").upper()
        if engine in ("ON", "OFF"):
            configure.append(f"-DLAMINAR_SPARK_ENGINE={engine}")
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        subprocess.run(configure, check=True)
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", "laminar", "-j", jobs],
            check=True,
        )
        library = build_dir / "liblaminar.so"
        if not library.exists():
            raise RuntimeError(f"the CMake build did not produce {library}")
        cache = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8")
        if re.search(r"^LAMINAR_SPARK_ENGINE:\w+=ON$", cache, re.MULTILINE):
            build = ["cmake", "--build", str(build_dir), "--target", "laminar_spark_jar",
                     "-j", jobs]
            try:
                subprocess.run(build, check=True)
            except subprocess.CalledProcessError:
                if engine == "ON":
                    raise
                print("warning: laminardb.spark's JVM engine was not built (see the "
                      "output above); the package runs Spark tasks in Python only. "
                      "LAMINAR_SPARK_ENGINE=ON makes this an error.")
        return library

    @staticmethod
    def _ship_spark_jars(library: Path, package_dir: Path) -> None:
        """Copy the JVM engine's jars of ``library``'s build tree into ``laminardb/jars``.

        Each Spark line's folder holding a ``laminardb-spark.jar`` goes in whole
        (``laminardb/jars/<line>/``, with its ``arrow-c-data`` jar).

        Args:
            library: ``liblaminar.so`` in its CMake build directory.
            package_dir: The package's build directory.
        """
        built = library.parent / "bindings" / "java" / "spark"
        target = package_dir / "jars"
        if target.exists():
            shutil.rmtree(target)
        for jar in sorted(built.glob("*/laminardb-spark.jar")):
            line = target / jar.parent.name
            line.mkdir(parents=True)
            for each in sorted(jar.parent.glob("*.jar")):
                shutil.copy2(each, line / each.name)

    def run(self) -> None:
        """Build the core, generate and compile the extension, ship the library."""
        root = _repo_root()
        prebuilt = os.environ.get("LAMINAR_LIBRARY")
        library = Path(prebuilt).absolute() if prebuilt else self._build_core(root)
        if prebuilt and library.name != "liblaminar.so":
            raise RuntimeError(f"LAMINAR_LIBRARY must name a liblaminar.so, got {library}")
        soname = _soname(library)

        ffi_build = _load_ffi_build()
        ffibuilder = ffi_build.make_ffibuilder(
            root / "include" / "laminar.h", library_dirs=[str(library.parent)]
        )
        gen_dir = Path(self.build_temp) / "cffi-gen"
        gen_dir.mkdir(parents=True, exist_ok=True)
        # cffi writes the C module and describes it as a plain distutils
        # Extension; carry that onto the (already finalized) placeholder.
        generated = ffibuilder.distutils_extension(str(gen_dir))
        (extension,) = [e for e in self.extensions if e.name == MODULE_NAME]
        for attr in _EXTENSION_ATTRS:
            setattr(extension, attr, list(getattr(generated, attr) or []))
        super().run()

        package_dir = Path(self.get_ext_fullpath(MODULE_NAME)).parent
        package_dir.mkdir(parents=True, exist_ok=True)
        target = package_dir / soname
        if target.exists() or target.is_symlink():
            target.unlink()
        shutil.copy2(library.resolve(), target)
        self._ship_spark_jars(library, package_dir)


setup(
    version=_version(),
    # Placeholder: replaced in BuildCoreAndExt.run() by the generated module;
    # declaring it makes the wheel platform-specific and build_ext run at all.
    ext_modules=[
        Extension(MODULE_NAME, sources=[]),
        Extension(
            CAPSULE_MODULE,
            sources=["laminardb/_capsule.c"],
            include_dirs=[str(_repo_root() / "include")],
        ),
    ],
    cmdclass={"build_ext": BuildCoreAndExt},
    zip_safe=False,
)
