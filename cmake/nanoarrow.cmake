# nanoarrow.cmake -- fetch the pinned nanoarrow 0.9.0 source archive (the PyPI
# sdist, which carries the C library in subprojects/arrow-nanoarrow), verify its
# sha256, and build its C library as `lm_nanoarrow`: static, position-independent,
# hidden visibility, every symbol prefixed LaminarNanoarrow (NANOARROW_NAMESPACE)
# so it cannot clash with another nanoarrow in the process (pyarrow's, a user's).
# Its sources live only in the build tree; they are never committed.
#
# Where the archive comes from, first hit wins (each is sha256-checked):
#   1. -DLAMINAR_NANOARROW_ARCHIVE=<path to nanoarrow-0.9.0.tar.gz> (default: the
#      environment variable of that name, which scripts/setup.sh exports)
#   2. a copy already in this build tree (_deps/nanoarrow/)
#   3. a copy in the user cache: $LAMINAR_CACHE_DIR, else $XDG_CACHE_HOME/laminardb,
#      else ~/.cache/laminardb (filled by step 4, so fresh clones skip the download)
#   4. `python -m pip download --no-deps --no-binary nanoarrow nanoarrow==0.9.0`
#      with the interpreter of find_package(Python3) (set Python3_EXECUTABLE to
#      pick one that has pip, e.g. .venv/bin/python)
#
# Provides: target lm_nanoarrow; its include dirs give "nanoarrow/nanoarrow.h"
# with the generated nanoarrow_config.h (#define NANOARROW_NAMESPACE LaminarNanoarrow).

set(LM_NANOARROW_VERSION "0.9.0")
set(LM_NANOARROW_SHA256 "1ce15bbed8532839347faa78824c5dbd3769bff60661003e34c6fba5dd881bd3")
set(LAMINAR_NANOARROW_ARCHIVE "$ENV{LAMINAR_NANOARROW_ARCHIVE}" CACHE FILEPATH
    "A local nanoarrow-${LM_NANOARROW_VERSION}.tar.gz (PyPI sdist) to use instead of downloading")

set(_na_name "nanoarrow-${LM_NANOARROW_VERSION}.tar.gz")
set(_na_dir "${CMAKE_BINARY_DIR}/_deps/nanoarrow")
set(_na_archive "${_na_dir}/${_na_name}")
if(DEFINED ENV{LAMINAR_CACHE_DIR} AND NOT "$ENV{LAMINAR_CACHE_DIR}" STREQUAL "")
  set(_na_cache_dir "$ENV{LAMINAR_CACHE_DIR}")
elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_na_cache_dir "$ENV{XDG_CACHE_HOME}/laminardb")
elseif(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
  set(_na_cache_dir "$ENV{HOME}/.cache/laminardb")
else()
  set(_na_cache_dir "")
endif()
file(MAKE_DIRECTORY "${_na_dir}")

# lm_nanoarrow_sha256_ok(<file> <out var>): TRUE if <file> has the pinned digest.
function(lm_nanoarrow_sha256_ok file out)
  set(${out} FALSE PARENT_SCOPE)
  if(EXISTS "${file}" AND NOT IS_DIRECTORY "${file}")
    file(SHA256 "${file}" _sha)
    if(_sha STREQUAL LM_NANOARROW_SHA256)
      set(${out} TRUE PARENT_SCOPE)
    endif()
  endif()
endfunction()

# 1. An archive given explicitly must be the right one: a mismatch is an error,
#    not a reason to go and download something else.
if(LAMINAR_NANOARROW_ARCHIVE)
  if(NOT EXISTS "${LAMINAR_NANOARROW_ARCHIVE}")
    message(FATAL_ERROR "LAMINAR_NANOARROW_ARCHIVE=${LAMINAR_NANOARROW_ARCHIVE} does not exist")
  endif()
  file(SHA256 "${LAMINAR_NANOARROW_ARCHIVE}" _na_sha)
  if(NOT _na_sha STREQUAL LM_NANOARROW_SHA256)
    message(FATAL_ERROR
      "nanoarrow archive checksum mismatch for ${LAMINAR_NANOARROW_ARCHIVE}:\n"
      "  got      ${_na_sha}\n  expected ${LM_NANOARROW_SHA256}\n"
      "Pass the PyPI sdist nanoarrow-${LM_NANOARROW_VERSION}.tar.gz.")
  endif()
  lm_nanoarrow_sha256_ok("${_na_archive}" _na_ok)
  if(NOT _na_ok)
    file(COPY_FILE "${LAMINAR_NANOARROW_ARCHIVE}" "${_na_archive}")
  endif()
endif()

# 2./3. A copy in the build tree, else in the user cache.
lm_nanoarrow_sha256_ok("${_na_archive}" _na_ok)
if(NOT _na_ok AND _na_cache_dir)
  lm_nanoarrow_sha256_ok("${_na_cache_dir}/${_na_name}" _na_cached)
  if(_na_cached)
    message(STATUS "nanoarrow ${LM_NANOARROW_VERSION}: using ${_na_cache_dir}/${_na_name}")
    file(COPY_FILE "${_na_cache_dir}/${_na_name}" "${_na_archive}")
  endif()
endif()

# 4. Download the sdist with pip (the registry's ordinary client), replacing a
#    damaged copy in the build tree.
lm_nanoarrow_sha256_ok("${_na_archive}" _na_ok)
if(NOT _na_ok)
  file(REMOVE "${_na_archive}")
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  message(STATUS "nanoarrow ${LM_NANOARROW_VERSION}: downloading the source archive with "
                 "${Python3_EXECUTABLE} -m pip (takes a minute: pip prepares its metadata)")
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -m pip download --no-deps --no-binary nanoarrow
            "nanoarrow==${LM_NANOARROW_VERSION}" -d "${_na_dir}"
    RESULT_VARIABLE _na_rc OUTPUT_VARIABLE _na_out ERROR_VARIABLE _na_err)
  if(NOT _na_rc EQUAL 0 OR NOT EXISTS "${_na_archive}")
    message(FATAL_ERROR
      "Could not download nanoarrow ${LM_NANOARROW_VERSION} with "
      "'${Python3_EXECUTABLE} -m pip download' (exit ${_na_rc}):\n${_na_out}${_na_err}\n"
      "Use an interpreter that has pip (-DPython3_EXECUTABLE=.venv/bin/python after "
      "scripts/setup.sh), or pass -DLAMINAR_NANOARROW_ARCHIVE=<path to ${_na_name}>.")
  endif()
endif()

# Always verify what is about to be built, whatever its origin.
file(SHA256 "${_na_archive}" _na_sha)
if(NOT _na_sha STREQUAL LM_NANOARROW_SHA256)
  file(REMOVE "${_na_archive}")
  message(FATAL_ERROR
    "nanoarrow archive checksum mismatch (${_na_archive}, now removed):\n"
    "  got      ${_na_sha}\n  expected ${LM_NANOARROW_SHA256}")
endif()
if(_na_cache_dir AND NOT EXISTS "${_na_cache_dir}/${_na_name}")
  file(MAKE_DIRECTORY "${_na_cache_dir}")
  file(COPY_FILE "${_na_archive}" "${_na_cache_dir}/${_na_name}" RESULT _na_copy_rc)
endif()

# Extract (again whenever the archive is newer than the last extraction).
set(_na_root "${_na_dir}/nanoarrow-${LM_NANOARROW_VERSION}")
set(_na_src "${_na_root}/subprojects/arrow-nanoarrow/src")
set(_na_stamp "${_na_dir}/extracted.stamp")
if(NOT EXISTS "${_na_stamp}" OR "${_na_archive}" IS_NEWER_THAN "${_na_stamp}")
  file(REMOVE_RECURSE "${_na_root}")
  file(ARCHIVE_EXTRACT INPUT "${_na_archive}" DESTINATION "${_na_dir}")
  if(NOT EXISTS "${_na_src}/nanoarrow/common/array.c")
    message(FATAL_ERROR "${_na_archive} has no subprojects/arrow-nanoarrow/src")
  endif()
  file(TOUCH "${_na_stamp}")
endif()

# The config header, generated as nanoarrow's own CMakeLists does, with our
# namespace. Its directory comes first on the include path so it wins.
set(NANOARROW_VERSION "${LM_NANOARROW_VERSION}")
string(REPLACE "." ";" _na_parts "${LM_NANOARROW_VERSION}")
list(GET _na_parts 0 NANOARROW_VERSION_MAJOR)
list(GET _na_parts 1 NANOARROW_VERSION_MINOR)
list(GET _na_parts 2 NANOARROW_VERSION_PATCH)
set(NANOARROW_NAMESPACE_DEFINE "#define NANOARROW_NAMESPACE LaminarNanoarrow")
set(_na_gen "${_na_dir}/include")
configure_file("${_na_src}/nanoarrow/nanoarrow_config.h.in"
               "${_na_gen}/nanoarrow/nanoarrow_config.h" @ONLY)
file(STRINGS "${_na_gen}/nanoarrow/nanoarrow_config.h" _na_ns_line
     REGEX "^#define NANOARROW_NAMESPACE LaminarNanoarrow$")
if(NOT _na_ns_line)
  message(FATAL_ERROR "generated nanoarrow_config.h lacks the LaminarNanoarrow namespace")
endif()

add_library(lm_nanoarrow STATIC
  "${_na_src}/nanoarrow/common/array.c"
  "${_na_src}/nanoarrow/common/schema.c"
  "${_na_src}/nanoarrow/common/array_stream.c"
  "${_na_src}/nanoarrow/common/utils.c")
set_target_properties(lm_nanoarrow PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  C_VISIBILITY_PRESET hidden)
target_include_directories(lm_nanoarrow SYSTEM PUBLIC "${_na_gen}" "${_na_src}")
target_compile_options(lm_nanoarrow PRIVATE -w)  # not our code: its warnings are not ours
