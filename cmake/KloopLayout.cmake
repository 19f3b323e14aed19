# Where kloop's files live, installed and in the build tree (docs/install.md, "Layout").
#
# An installed kloop finds everything relative to its own executable (platform/paths.hpp), so the
# install is relocatable and no path of this machine is compiled in. The layout comes from
# GNUInstallDirs, whose directories must therefore stay relative to the prefix:
#   <prefix>/${CMAKE_INSTALL_BINDIR}/kloop
#   <prefix>/${CMAKE_INSTALL_LIBEXECDIR}/kloop/{kloop-runner,kloop-runner-cuda}
#   <prefix>/${CMAKE_INSTALL_INCLUDEDIR}/kloop/kernel.h
#   <prefix>/${CMAKE_INSTALL_DATADIR}/kloop/{python,calibrate,examples}
# build/generated/kloop/install_layout.hpp carries those relative directories into
# platform/paths.cpp.
#
# The build tree mirrors the same layout at its top, as symbolic links into the checkout:
#   <build>/${CMAKE_INSTALL_INCLUDEDIR}          -> include/
#   <build>/${CMAKE_INSTALL_DATADIR}/kloop/python    -> python/
#   <build>/${CMAKE_INSTALL_DATADIR}/kloop/calibrate -> share/calibrate/
#   <build>/${CMAKE_INSTALL_DATADIR}/kloop/examples  -> examples/
# so a development build (<build>/src/kloop, a test in <build>/tests/...) finds the checkout's
# files by the same lookup, wherever the build directory is. The tools stay in <build>/src, next
# to kloop, where platform::sibling_tool looks after the installed libexec directory.
include(GNUInstallDirs)

if(PROJECT_BINARY_DIR STREQUAL PROJECT_SOURCE_DIR)
  message(FATAL_ERROR "kloop: build in a directory of its own (cmake -S . -B build): the build tree mirrors "
                      "the installed layout with links into the checkout")
endif()

foreach(_kloop_dir BINDIR LIBEXECDIR INCLUDEDIR DATADIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kloop_dir}}")
    message(FATAL_ERROR "kloop: CMAKE_INSTALL_${_kloop_dir} '${CMAKE_INSTALL_${_kloop_dir}}' must be relative to "
                        "the prefix: kloop finds its files relative to its own executable")
  endif()
endforeach()

# From the directory of the kloop executable to the prefix ("..": bin/ is one folder deep).
file(RELATIVE_PATH KLOOP_BIN_TO_PREFIX "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix")
string(REGEX REPLACE "/$" "" KLOOP_BIN_TO_PREFIX "${KLOOP_BIN_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/install_layout.hpp.in
               ${PROJECT_BINARY_DIR}/generated/kloop/install_layout.hpp @ONLY)

# The build tree's mirror of the installed layout.
function(_kloop_mirror_link target link)
  get_filename_component(_parent ${link} DIRECTORY)
  file(MAKE_DIRECTORY ${_parent})
  if(IS_SYMLINK ${link} OR EXISTS ${link})
    file(REMOVE ${link})
  endif()
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()
set(KLOOP_BUILD_DATA_DIR ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_DATADIR}/kloop)
_kloop_mirror_link(${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_INCLUDEDIR})
_kloop_mirror_link(${PROJECT_SOURCE_DIR}/python ${KLOOP_BUILD_DATA_DIR}/python)
_kloop_mirror_link(${PROJECT_SOURCE_DIR}/share/calibrate ${KLOOP_BUILD_DATA_DIR}/calibrate)
_kloop_mirror_link(${PROJECT_SOURCE_DIR}/examples ${KLOOP_BUILD_DATA_DIR}/examples)
