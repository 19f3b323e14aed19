// kloop platform: where kloop finds itself, its data, its cache, the ABI header and its tools.
//
// Responsibility: every environment-dependent location in one place, each with its override:
//   KLOOP_HOME          data (and cache) root          kloop_home(), cache_dir()
//   XDG_DATA_HOME / XDG_CACHE_HOME / HOME               the usual fallbacks
//   KLOOP_DATA_DIR      kloop's bundled files (python/, calibrate/, examples/)  data_dir()
//   KLOOP_INCLUDE_DIR   directory holding kloop/kernel.h  abi_include_dir()
//   KLOOP_RUNNER        the kloop-runner binary          sibling_tool("kloop-runner")
// Environment variables are read on every call (nothing cached), so tests can setenv().
//
// Without an override, kloop's own files are found relative to the running executable, never
// at a path compiled in (docs/install.md, "Layout"). One ordered list of roots, prefix_roots(),
// holds the candidates: the installed layout's prefix (<prefix>/bin/kloop), then the folders
// one to three levels above the executable's, where a build tree — which mirrors the installed
// layout at its top with links into the checkout (cmake/KloopLayout.cmake) — is seen from the
// binaries built in its subfolders (<build>/src/kloop, <build>/tests/unit/<module>/...). Under a
// root, the layout is GNUInstallDirs' (include/, share/kloop/, libexec/kloop/ by default).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace kloop::platform {

// The running executable (/proc/self/exe). Throws kloop::usage_error when it cannot be read.
[[nodiscard]] std::filesystem::path self_exe_path();

// $KLOOP_HOME, else $XDG_DATA_HOME/kloop, else $HOME/.local/share/kloop (HOME from the password
// database when unset). XDG values that are not absolute are ignored, as the XDG spec says.
// Throws kloop::usage_error when no home can be found. Does not create the directory.
[[nodiscard]] std::filesystem::path kloop_home();

// $KLOOP_HOME/cache if KLOOP_HOME is set, else $XDG_CACHE_HOME/kloop, else $HOME/.cache/kloop.
[[nodiscard]] std::filesystem::path cache_dir();

// The installed layout under a root, relative (GNUInstallDirs at configure time).
struct installed_layout {
    std::filesystem::path bin_to_prefix;  // from the kloop executable's directory to the prefix: ".."
    std::filesystem::path include_dir;    // "include": kloop/kernel.h
    std::filesystem::path data_dir;       // "share/kloop": python/, calibrate/, examples/
    std::filesystem::path tool_dir;       // "libexec/kloop": kloop-runner, kloop-runner-cuda
};
[[nodiscard]] const installed_layout& layout();

// The roots that may hold kloop's files, in the order they are tried, for an executable in
// exe_dir: exe_dir/<bin_to_prefix> (the installed layout; also a build tree's top as seen from
// <build>/src), then exe_dir/.., exe_dir/../.. and exe_dir/../../.. (a build tree seen from a
// binary in a subfolder), normalised, without repeats.
[[nodiscard]] std::vector<std::filesystem::path> prefix_roots(const std::filesystem::path& exe_dir);

// kloop's bundled files (python/ for the Python worker, calibrate/ for `kloop preflight
// --calibrate`, examples/ for `kloop demo`): $KLOOP_DATA_DIR (must be a directory, else a
// usage_error), else the first <root>/<layout().data_dir> of prefix_roots(the executable's
// directory) that is a directory. Throws kloop::usage_error naming the places looked at and
// KLOOP_DATA_DIR when none is.
[[nodiscard]] std::filesystem::path data_dir();

// The directory containing kloop/kernel.h: $KLOOP_INCLUDE_DIR (must contain it, else a
// usage_error), else the first <root>/<layout().include_dir> of prefix_roots(the executable's
// directory) that holds it, with symbolic links resolved (the build tree's is a link to the
// checkout's include/). Throws kloop::usage_error explaining KLOOP_INCLUDE_DIR when none does.
[[nodiscard]] std::filesystem::path abi_include_dir();

// A tool kloop runs, e.g. kloop-runner: $KLOOP_RUNNER for name == "kloop-runner", else
// find_tool(the executable's directory, name).
[[nodiscard]] std::filesystem::path sibling_tool(std::string_view name);

// The lookups behind data_dir(), abi_include_dir() and sibling_tool() for an executable in
// exe_dir, without the environment overrides (so tests can lay out a tree of their own).
// find_data_dir / find_abi_include_dir: the first match over prefix_roots(exe_dir), or nothing.
[[nodiscard]] std::optional<std::filesystem::path> find_data_dir(const std::filesystem::path& exe_dir);
[[nodiscard]] std::optional<std::filesystem::path> find_abi_include_dir(const std::filesystem::path& exe_dir);
// The first that exists of exe_dir/<bin_to_prefix>/<layout().tool_dir>/<name> (installed) and
// exe_dir/<name> (a build tree: the tools are built next to kloop). When neither exists, the
// installed one if its directory exists, else the one next to the executable: spawning a missing
// tool fails with "could not start '...': No such file or directory", naming that path.
[[nodiscard]] std::filesystem::path find_tool(const std::filesystem::path& exe_dir, std::string_view name);

}  // namespace kloop::platform
