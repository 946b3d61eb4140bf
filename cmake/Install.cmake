# Installs harp for other projects: headers, libraries and tools, and the
# CMake package HarpConfig.cmake whose imported targets (Harp::HarpDialect,
# Harp::HarpPipelines, Harp::HarpCAPI, ...) link like the build tree's and
# find Debian's MLIR the way harp's own build does.
include(CMakePackageConfigHelpers)

set(HARP_EXPORTED_LIBRARIES
  HarpCAPI HarpCodegenCommon HarpCodegenCPU HarpCodegenGPU HarpCudaRuntime
  HarpDialect HarpJit HarpPipelines HarpRuntimeSupport HarpTarget
  HarpToLinalg HarpTransforms HarpVersion HarpAPI)
foreach(lib ${HARP_EXPORTED_LIBRARIES})
  target_include_directories(${lib} INTERFACE $<INSTALL_INTERFACE:include>)
endforeach()
install(TARGETS ${HARP_EXPORTED_LIBRARIES} EXPORT HarpTargets
  ARCHIVE DESTINATION lib LIBRARY DESTINATION lib)
install(TARGETS HarpLibraryRuntime ARCHIVE DESTINATION lib)
install(TARGETS harp-opt harp-run harp-compile harp-reduce harp-lsp-server
  RUNTIME DESTINATION bin)
install(TARGETS HarpPlugin LIBRARY DESTINATION lib)

install(DIRECTORY ${HARP_SOURCE_DIR}/include/harp ${HARP_SOURCE_DIR}/include/harp-c
  DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "*.td")
install(DIRECTORY ${HARP_BINARY_DIR}/include/harp DESTINATION include
  FILES_MATCHING PATTERN "*.inc" PATTERN "*.h" PATTERN "CMakeFiles" EXCLUDE)

set(HARP_CMAKE_DIR lib/cmake/harp)
install(EXPORT HarpTargets NAMESPACE Harp:: DESTINATION ${HARP_CMAKE_DIR})
configure_package_config_file(${HARP_SOURCE_DIR}/cmake/HarpConfig.cmake.in
  ${HARP_BINARY_DIR}/cmake/HarpConfig.cmake
  INSTALL_DESTINATION ${HARP_CMAKE_DIR}
  PATH_VARS HARP_CMAKE_DIR)
write_basic_package_version_file(${HARP_BINARY_DIR}/cmake/HarpConfigVersion.cmake
  VERSION 0.1 COMPATIBILITY SameMajorVersion)
install(FILES ${HARP_BINARY_DIR}/cmake/HarpConfig.cmake
  ${HARP_BINARY_DIR}/cmake/HarpConfigVersion.cmake
  DESTINATION ${HARP_CMAKE_DIR})
