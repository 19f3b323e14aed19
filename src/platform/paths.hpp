// kloop platform: where kloop finds itself, its data, its cache, the ABI header and its tools.
//
// Responsibility: every environment-dependent location in one place, each with its override:
//   KLOOP_HOME          data (and cache) root          kloop_home(), cache_dir()
//   XDG_DATA_HOME / XDG_CACHE_HOME / HOME               the usual fallbacks
//   KLOOP_INCLUDE_DIR   directory holding kloop/kernel.h  abi_include_dir()
//   KLOOP_RUNNER        the kloop-runner binary          sibling_tool("kloop-runner")
// Environment variables are read on every call (nothing cached), so tests can setenv().
#pragma once

#include <filesystem>
#include <string_view>

namespace kloop::platform {

// The running executable (/proc/self/exe). Throws kloop::usage_error when it cannot be read.
[[nodiscard]] std::filesystem::path self_exe_path();

// $KLOOP_HOME, else $XDG_DATA_HOME/kloop, else $HOME/.local/share/kloop (HOME from the password
// database when unset). XDG values that are not absolute are ignored, as the XDG spec says.
// Throws kloop::usage_error when no home can be found. Does not create the directory.
[[nodiscard]] std::filesystem::path kloop_home();

// $KLOOP_HOME/cache if KLOOP_HOME is set, else $XDG_CACHE_HOME/kloop, else $HOME/.cache/kloop.
[[nodiscard]] std::filesystem::path cache_dir();

// The directory containing kloop/kernel.h: $KLOOP_INCLUDE_DIR (must contain it, else a
// usage_error), else KLOOP_SOURCE_DIR/include (a development build), else exe_dir/../include,
// exe_dir/../../include, exe_dir/../../../include. Throws kloop::usage_error explaining
// KLOOP_INCLUDE_DIR when none holds the header.
[[nodiscard]] std::filesystem::path abi_include_dir();

// A binary next to self_exe_path(), e.g. kloop-runner. $KLOOP_RUNNER overrides for
// name == "kloop-runner". The path is returned whether or not it exists; spawning a missing
// tool fails with "could not start '...': No such file or directory".
[[nodiscard]] std::filesystem::path sibling_tool(std::string_view name);

}  // namespace kloop::platform
