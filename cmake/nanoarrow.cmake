# nanoarrow.cmake -- fetch the pinned nanoarrow 0.9.0 source archive (PyPI sdist),
# verify its sha256, and build its C library as a static, position-independent,
# symbol-namespaced library `lm_nanoarrow`. Its sources are never committed.
#
# Sources, in order: -DLAMINAR_NANOARROW_ARCHIVE=<path to nanoarrow-0.9.0.tar.gz>,
# a copy already in the build tree, else `pip download` into the build tree.

set(LM_NANOARROW_VERSION "0.9.0")
set(LM_NANOARROW_SHA256 "1ce15bbed8532839347faa78824c5dbd3769bff60661003e34c6fba5dd881bd3")
set(LAMINAR_NANOARROW_ARCHIVE "" CACHE FILEPATH "Local nanoarrow-${LM_NANOARROW_VERSION}.tar.gz")

set(_na_dir "${CMAKE_BINARY_DIR}/_deps/nanoarrow")
set(_na_archive "${_na_dir}/nanoarrow-${LM_NANOARROW_VERSION}.tar.gz")
file(MAKE_DIRECTORY "${_na_dir}")

if(LAMINAR_NANOARROW_ARCHIVE AND NOT EXISTS "${_na_archive}")
  file(COPY_FILE "${LAMINAR_NANOARROW_ARCHIVE}" "${_na_archive}")
endif()
if(NOT EXISTS "${_na_archive}")
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  message(STATUS "Downloading nanoarrow ${LM_NANOARROW_VERSION} source archive with pip")
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -m pip download --no-deps --no-binary nanoarrow
            "nanoarrow==${LM_NANOARROW_VERSION}" -d "${_na_dir}"
    RESULT_VARIABLE _na_rc OUTPUT_QUIET ERROR_VARIABLE _na_err)
  if(NOT _na_rc EQUAL 0 OR NOT EXISTS "${_na_archive}")
    message(FATAL_ERROR "Could not download nanoarrow ${LM_NANOARROW_VERSION}: ${_na_err}\n"
                        "Pass -DLAMINAR_NANOARROW_ARCHIVE=<path to the .tar.gz> instead.")
  endif()
endif()

file(SHA256 "${_na_archive}" _na_sha)
if(NOT _na_sha STREQUAL LM_NANOARROW_SHA256)
  file(REMOVE "${_na_archive}")
  message(FATAL_ERROR "nanoarrow archive checksum mismatch: got ${_na_sha}, "
                      "expected ${LM_NANOARROW_SHA256}")
endif()

set(_na_src "${_na_dir}/nanoarrow-${LM_NANOARROW_VERSION}/subprojects/arrow-nanoarrow/src")
if(NOT EXISTS "${_na_src}/nanoarrow/common/array.c")
  file(ARCHIVE_EXTRACT INPUT "${_na_archive}" DESTINATION "${_na_dir}")
endif()

# The generated config header carries the namespace: every nanoarrow symbol
# becomes LaminarNanoarrow<Name>, so it cannot clash with another nanoarrow in
# the same process (pyarrow's, a user's).
set(NANOARROW_VERSION "${LM_NANOARROW_VERSION}")
set(NANOARROW_VERSION_MAJOR 0)
set(NANOARROW_VERSION_MINOR 9)
set(NANOARROW_VERSION_PATCH 0)
set(NANOARROW_NAMESPACE_DEFINE "#define NANOARROW_NAMESPACE LaminarNanoarrow")
set(_na_gen "${_na_dir}/include")
configure_file("${_na_src}/nanoarrow/nanoarrow_config.h.in"
               "${_na_gen}/nanoarrow/nanoarrow_config.h" @ONLY)

add_library(lm_nanoarrow STATIC
  "${_na_src}/nanoarrow/common/array.c"
  "${_na_src}/nanoarrow/common/schema.c"
  "${_na_src}/nanoarrow/common/array_stream.c"
  "${_na_src}/nanoarrow/common/utils.c")
set_target_properties(lm_nanoarrow PROPERTIES POSITION_INDEPENDENT_CODE ON
                                              C_VISIBILITY_PRESET hidden)
# The generated include dir comes first so its nanoarrow_config.h wins.
target_include_directories(lm_nanoarrow SYSTEM PUBLIC "${_na_gen}" "${_na_src}")
target_compile_options(lm_nanoarrow PRIVATE -w)
