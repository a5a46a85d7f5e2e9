# FindRdKafka.cmake -- librdkafka (the Kafka C client). Defines RdKafka_FOUND
# and the imported target RdKafka::RdKafka.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_RDKAFKA QUIET rdkafka)
endif()
find_path(RdKafka_INCLUDE_DIR librdkafka/rdkafka.h HINTS ${PC_RDKAFKA_INCLUDE_DIRS})
find_library(RdKafka_LIBRARY NAMES rdkafka HINTS ${PC_RDKAFKA_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RdKafka DEFAULT_MSG RdKafka_LIBRARY RdKafka_INCLUDE_DIR)
if(RdKafka_FOUND AND NOT TARGET RdKafka::RdKafka)
  add_library(RdKafka::RdKafka UNKNOWN IMPORTED)
  set_target_properties(RdKafka::RdKafka PROPERTIES IMPORTED_LOCATION "${RdKafka_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${RdKafka_INCLUDE_DIR}")
endif()
