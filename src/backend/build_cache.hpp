// kloop backend: the build cache and compiler plumbing shared by the cpu (c++) and cuda (nvcc)
// builders.
//
// Responsibility: everything about "compile one source into lib.so, never twice" that does not
// depend on which compiler runs: finding a compiler and fingerprinting it without running it,
// asking it for its version once per process, the cache entry (<cache_dir>/build/<key>/ holding
// lib.so, deps.json, meta.json), validating a hit without spawning anything, the per-entry lock,
// publishing a finished build atomically (lib.so, then deps.json, then meta.json), reading a
// make-style depfile (gcc -MD and nvcc -MD write the same form) and trimming long diagnostics.
// Each builder computes its own key (its own salt and inputs), runs its compiler and adds its
// own fields to meta.json; see backend/cpu/cpu_builder.hpp for the cache's contract.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {
class command_runner_base;
}

namespace kloop::backend {

// The schema of meta.json and deps.json (both builders).
inline constexpr int build_cache_schema_version = 1;

// The record of one build, by either builder. A compile error is ok == false with the
// compiler's diagnostics, never an exception.
struct build_record {
    bool ok = false;
    bool cache_hit = false;
    std::filesystem::path library;  // <cache_dir>/build/<key>/lib.so (when ok)
    // SHA-256 of lib.so as published; checked on every cache hit, and again by the runner on the
    // sealed copy it loads (platform/sealed_copy.hpp). Empty for builds that make no library.
    std::string library_sha256;
    std::string key;
    std::vector<std::string> argv;  // the compile command as run (for a hit: the original build's)
    std::string compiler;           // the path invoked (PATH-resolved)
    std::string compiler_version;   // c++: first line of --version; nvcc: its "release" line
    std::string diagnostics;  // ok=false: why (compiler stderr, trimmed); ok=true: its warnings
    double wall_s = 0;        // time spent in this build() call
    double compile_wall_s = 0;  // the compiler's own run time (for a hit: the original build's)
    std::filesystem::path entry_dir;
    // nvcc builds only: the device target ("sm_90", "sm_90a") and the parsed -Xptxas -v report
    // (backend/cuda/ptxas_report.hpp: {kernels: [{name, registers, smem_bytes, ...}], ...}).
    std::string target;
    nlohmann::json ptxas;  // null for c++ builds

    [[nodiscard]] nlohmann::json to_json() const;
};

struct compiler_identity {
    std::string invoked;      // what argv[0] will be (PATH-resolved, symlinks kept: clang++ vs clang)
    std::string resolved;     // the file it finally points at
    std::string fingerprint;  // invoked|resolved|size|mtime: part of every cache key
};

// Finds `name` (a path, or a name looked up on PATH) and fingerprints it; runs nothing.
// Throws kloop::usage_error "cannot find the <what> '<name>' on PATH; <hint>" when it is missing.
[[nodiscard]] compiler_identity identify_compiler(const std::string& name, std::string_view what = "C++ compiler",
                                                  std::string_view hint = "install one or name it with KLOOP_CXX");

// The value of an environment variable, or "" when unset.
[[nodiscard]] std::string getenv_string(const char* name);

// Keeps the head (where the first error is) and the tail of long compiler output.
[[nodiscard]] std::string trim_diagnostics(std::string text);

// The prerequisites of the first rule of a make-style depfile (gcc/clang/nvcc -MD output).
[[nodiscard]] std::vector<std::string> parse_depfile(const std::string& text);


// "<pid>-<counter>": unique temporary-name suffix within this machine.
[[nodiscard]] std::string unique_suffix();

// Memoised `<compiler> <args>` (LC_ALL=C): one spawn per compiler identity per object. `pick`
// chooses the line to keep from stdout (default: the first non-empty line).
class compiler_version_cache {
public:
    using line_picker = std::string (*)(const std::string& stdout_text);
    std::string get(platform::command_runner_base& runner, const compiler_identity& id,
                    std::vector<std::string> args = {"--version"}, line_picker pick = nullptr);

private:
    std::map<std::string, std::string> m_versions;  // identity fingerprint -> version line
};

// One entry of the build cache: <root>/build/<key>/.
class cache_entry {
public:
    cache_entry(const std::filesystem::path& cache_root, std::string key);

    [[nodiscard]] const std::filesystem::path& get_dir() const noexcept { return m_dir; }
    [[nodiscard]] const std::string& get_key() const noexcept { return m_key; }
    [[nodiscard]] std::filesystem::path get_library() const { return m_dir / "lib.so"; }

    // meta.json of a complete, valid entry (schema, key, lib.so present with the SHA-256 recorded
    // when it was published, every recorded dependency's SHA-256 unchanged), else nothing: an
    // entry whose library was changed after its build is rebuilt, never loaded. Spawns no
    // process; never throws.
    [[nodiscard]] std::optional<nlohmann::json> find_hit() const;
    // find_hit() turned into the record of the original build (argv, compiler, diagnostics, and
    // for nvcc builds the target and ptxas report), marked cache_hit. Spawns no process; never throws.
    [[nodiscard]] std::optional<build_record> find_hit_record() const;

    // An exclusive flock on <entry>/.lock held while the object lives (creates the directory).
    class lock {
    public:
        explicit lock(const std::filesystem::path& file);

    private:
        platform::detail::unique_fd m_fd;  // closing it releases the lock
    };
    [[nodiscard]] lock acquire() const;

    // Removes meta.json: the entry is incomplete until publish() writes it back.
    void invalidate() const;

    // Moves `built_library` to lib.so, hashes every dependency (relative paths are relative to
    // the entry directory; an empty list records `fallback_dep`), writes deps.json, then
    // meta.json = `meta` plus schema_version, key, created and library_sha256. Returns the
    // library's SHA-256. Throws usage_error when the cache cannot be written.
    std::string publish(const std::filesystem::path& built_library, const std::vector<std::string>& dep_paths,
                 const std::filesystem::path& fallback_dep, nlohmann::json meta) const;

private:
    std::filesystem::path m_dir;
    std::string m_key;
};

// Removes the listed files on destruction (temporary compiler outputs).
struct scoped_file_cleanup {
    std::vector<std::filesystem::path> files;
    ~scoped_file_cleanup();
};

}  // namespace kloop::backend
