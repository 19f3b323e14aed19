// kloop backend/cpu: compiles a C++ candidate (or reference) into a shared object, cached.
//
// Responsibility: turn one source file plus flags into lib.so that kloop-runner can dlopen, and
// never compile the same thing twice. A compile error is an outcome (build_record.ok == false
// with the compiler's diagnostics), never an exception; exceptions are for the environment:
// an unreadable source or ABI header (kloop::usage_error), a compiler not on PATH
// (kloop::usage_error), a cache directory that cannot be written (kloop::usage_error), and
// SIGINT/SIGTERM during the compile (kloop::error with exit_code::interrupted).
//
// The cache (the machinery is shared with the nvcc builder: backend/build_cache.hpp).
// key = SHA-256 over: the source's absolute path and bytes, the flags, the include
// directories, the ABI include directory and kloop/kernel.h's bytes, the compiler's identity
// (the path invoked, the file it resolves to, that file's size and mtime; no process is run
// for it), and the compiler-relevant environment (CPATH, CPLUS_INCLUDE_PATH, C_INCLUDE_PATH,
// GCC_EXEC_PREFIX, COMPILER_PATH). Entry: <cache_dir>/build/<key>/ with
//   lib.so     the library
//   deps.json  every file the compiler read (its -MD list) with the file's SHA-256 at build time
//   meta.json  argv, compiler, compiler_version (`<compiler> --version`, first line), wall_s,
//              created, diagnostics (warnings of a successful build)
// A hit needs meta.json, lib.so and every recorded dependency's hash unchanged, so editing an
// included header invalidates it; validating a hit spawns no process. The source path is in the
// key because -I<source dir> decides which headers it sees. Known blind spot (shared with make
// and ninja): a header newly created earlier on the include path, shadowing a recorded one, is
// not noticed.
//
// Concurrency: a miss takes an exclusive flock on <entry>/.lock, re-checks for a hit (another
// kloop may just have built it), invalidates meta.json, compiles into temporary names in the
// entry dir and renames them into place, meta.json last. Hits take no lock: meta.json present
// means a complete entry.
//
// The compiler: build_request::compiler names it (default "c++"); an empty value means
// $KLOOP_CXX, else "c++" (default_compiler()). A name without '/' is looked up on PATH.
// The compile runs in the entry directory, so relative paths inside `flags` would resolve there;
// source, include_dirs and abi_include_dir are made absolute by the builder, flags are passed
// verbatim.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "backend/build_cache.hpp"

namespace kloop::platform {
class command_runner_base;
}

namespace kloop::backend::cpu {

struct build_request {
    std::filesystem::path source;
    std::vector<std::string> flags;  // e.g. {"-O3", "-march=native"}; -std=c++17 is added unless one sets -std
    std::vector<std::filesystem::path> include_dirs;
    std::filesystem::path abi_include_dir;  // holds kloop/kernel.h; empty: platform::abi_include_dir()
    std::string compiler = "c++";           // empty: default_compiler()
    std::filesystem::path cache_dir;        // empty: platform::cache_dir()
    double timeout_s = 300;
};

// The record of one build (defined with the shared cache: backend/build_cache.hpp).
using build_record = backend::build_record;

// $KLOOP_CXX when set and non-empty, else "c++".
[[nodiscard]] std::string default_compiler();

// One builder per thread (it memoises compiler versions); any number of builders and kloop
// processes may share a cache directory.
class cpu_builder {
public:
    explicit cpu_builder(platform::command_runner_base& runner);
    build_record build(const build_request& r);

private:
    platform::command_runner_base& m_runner;
    compiler_version_cache m_versions;  // compiler identity -> first line of --version
};

}  // namespace kloop::backend::cpu
