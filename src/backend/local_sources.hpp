// kloop backend: the files a candidate is made of — its source and the local headers or modules
// it uses.
//
// Responsibility: find, from the source text, the files beside a candidate that its build reads,
// so that every verb builds the same thing and the loop stages, snapshots, hashes and commits all
// of them (docs/loop.md, "A candidate's files"):
//   - C, C++ and CUDA: every `#include "…"` (quoted; angle includes are the system's and the
//     spec's), resolved as the compiler does — next to the including file, then in the
//     candidate's directory (the builders pass it with -I), then in the allowed directories
//     (the spec's include_dirs, kloop's ABI headers) — and followed through the local headers.
//     A quoted include that resolves to an existing file anywhere else (`#include
//     "../common.cuh"`) is refused with a usage_error naming the including file and the line:
//     the loop could not stage it, so no verb builds it.
//   - Python: every `import a.b` and `from a.b import c` (relative ones too) whose module is a
//     file or package under the candidate's directory, followed through those modules; other
//     imports are the interpreter's.
//   - Declared files (op.toml's [candidate] files, relative to the candidate's directory): each
//     a file, or a directory whose regular files all count (hidden names, __pycache__ and
//     symbolic links inside it are skipped); they are scanned as above too. One that is not there
//     is a usage_error naming the field. For what the scan cannot see: a computed include, a file
//     a kernel reads at run time, a module imported by name.
//   - Angle includes (`#include <x.h>`) that resolve in the candidate's directory (the builders
//     pass it with -I, ahead of the system's) count as quoted ones do.
// The scan reads text: an include inside a comment or a branch the preprocessor drops counts too
// (an extra file staged, never a missing one); a computed include (`#include MACRO`) is not
// seen, and the build then fails with the compiler's own error.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/build_dispatch.hpp"

namespace kloop::backend {

struct local_sources {
    std::filesystem::path root;               // the candidate's directory
    std::vector<std::filesystem::path> files; // relative to root, sorted; the source first
};

// Throws kloop::usage_error as described above.
[[nodiscard]] local_sources find_local_sources(const std::filesystem::path& source, builder_kind builder,
                                               const std::vector<std::filesystem::path>& allowed_dirs,
                                               const std::vector<std::string>& declared = {});

// SHA-256 over every file's relative path and bytes, in order: the identity of a version.
[[nodiscard]] std::string local_sources_sha256(const local_sources& s);

// Copies every file to the same relative path under dest (directories created).
void copy_local_sources(const local_sources& s, const std::filesystem::path& dest);

}  // namespace kloop::backend
