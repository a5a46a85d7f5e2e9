# FindHwloc.cmake -- hwloc (NUMA topology). Defines Hwloc_FOUND and the imported
# target Hwloc::Hwloc.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_HWLOC QUIET hwloc)
endif()
find_path(Hwloc_INCLUDE_DIR hwloc.h HINTS ${PC_HWLOC_INCLUDE_DIRS})
find_library(Hwloc_LIBRARY NAMES hwloc HINTS ${PC_HWLOC_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hwloc DEFAULT_MSG Hwloc_LIBRARY Hwloc_INCLUDE_DIR)
if(Hwloc_FOUND AND NOT TARGET Hwloc::Hwloc)
  add_library(Hwloc::Hwloc UNKNOWN IMPORTED)
  set_target_properties(Hwloc::Hwloc PROPERTIES IMPORTED_LOCATION "${Hwloc_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Hwloc_INCLUDE_DIR}")
endif()
