# cmake -DKLOOP=<kloop> -DWHAT=bash|zsh|man -DOUT=<file> -P KloopGenerateShellFiles.cmake
# Writes what the built kloop generates from its own command line (cmake/KloopInstall.cmake):
# a shell completion or the man page. A failed run leaves no output, so the build stops.
if(WHAT STREQUAL "bash" OR WHAT STREQUAL "zsh")
  set(_args --generate-completion ${WHAT})
elseif(WHAT STREQUAL "man")
  set(_args --generate-man)
else()
  message(FATAL_ERROR "KloopGenerateShellFiles: WHAT must be bash, zsh or man, not '${WHAT}'")
endif()
get_filename_component(_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_dir}")
execute_process(COMMAND "${KLOOP}" ${_args} OUTPUT_FILE "${OUT}.tmp" ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  file(REMOVE "${OUT}.tmp")
  message(FATAL_ERROR "'${KLOOP} ${_args}' failed (${_rc}): ${_err}")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
