# FindAvro.cmake -- Avro C (Apache Avro's C library, libavro-dev). Defines Avro_FOUND
# and the imported target Avro::Avro.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_AVRO QUIET avro-c)
endif()
find_path(Avro_INCLUDE_DIR avro.h HINTS ${PC_AVRO_INCLUDE_DIRS})
find_library(Avro_LIBRARY NAMES avro HINTS ${PC_AVRO_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Avro DEFAULT_MSG Avro_LIBRARY Avro_INCLUDE_DIR)
if(Avro_FOUND AND NOT TARGET Avro::Avro)
  add_library(Avro::Avro UNKNOWN IMPORTED)
  set_target_properties(Avro::Avro PROPERTIES IMPORTED_LOCATION "${Avro_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Avro_INCLUDE_DIR}")
endif()
