// kloop backend/cpu: the cached C++ → shared-object build (see cpu_builder.hpp for the cache).
#include "backend/cpu/cpu_builder.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/build_cache.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace kloop::backend::cpu {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::string_view k_key_salt = "kloop/backend/cpu/build/v1";

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

bool flags_set_standard(const std::vector<std::string>& flags) {
    return std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
        return f.rfind("-std=", 0) == 0 || f.rfind("--std", 0) == 0;
    });
}


}  // namespace

std::string default_compiler() {
    std::string c = getenv_string("KLOOP_CXX");
    return c.empty() ? std::string("c++") : c;
}

cpu_builder::cpu_builder(platform::command_runner_base& runner) : m_runner(runner) {}

build_record cpu_builder::build(const build_request& r) {
    const auto t0 = clock_type::now();

    // Inputs, made absolute: the compiler runs in the entry directory.
    if (r.source.empty()) throw usage_error("cpu build: no source file given");
    const fs::path source = fs::absolute(r.source).lexically_normal();
    const std::string source_bytes = platform::read_file(source);
    const fs::path abi_dir =
        fs::absolute(r.abi_include_dir.empty() ? platform::abi_include_dir() : r.abi_include_dir).lexically_normal();
    const fs::path abi_header = abi_dir / "kloop" / "kernel.h";
    std::string abi_bytes;
    try {
        abi_bytes = platform::read_file(abi_header);
    } catch (const usage_error& e) {
        throw usage_error(fmt::format("{}\n  (the ABI include directory must contain kloop/kernel.h)", e.what()));
    }
    std::vector<fs::path> include_dirs;
    for (const auto& d : r.include_dirs) include_dirs.push_back(fs::absolute(d).lexically_normal());
    const fs::path cache_root = r.cache_dir.empty() ? platform::cache_dir() : fs::absolute(r.cache_dir);
    const compiler_identity cc = identify_compiler(r.compiler.empty() ? default_compiler() : r.compiler);

    // The key.
    platform::sha256_hasher h;
    h.update_field(k_key_salt);
    h.update_field(source.string()).update_field(source_bytes);
    h.update_field(std::to_string(r.flags.size()));
    for (const auto& f : r.flags) h.update_field(f);
    h.update_field(std::to_string(include_dirs.size()));
    for (const auto& d : include_dirs) h.update_field(d.string());
    h.update_field(abi_dir.string()).update_field(abi_bytes);
    h.update_field(cc.fingerprint);
    for (const char* var : {"CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH"})
        h.update_field(fmt::format("{}={}", var, getenv_string(var)));
    const cache_entry entry(cache_root, h.hex_digest());
    const std::string& key = entry.get_key();

    if (auto hit = entry.find_hit_record()) {
        hit->wall_s = seconds_since(t0);
        return *hit;
    }

    // A miss: one builder per entry at a time.
    const auto lock = entry.acquire();
    if (auto hit = entry.find_hit_record()) {  // built by another kloop while we waited
        hit->wall_s = seconds_since(t0);
        return *hit;
    }
    entry.invalidate();  // the entry is incomplete until meta.json is back

    build_record rec;
    rec.key = key;
    rec.entry_dir = entry.get_dir();
    rec.compiler = cc.invoked;
    rec.compiler_version = m_versions.get(m_runner, cc);

    const std::string suffix = unique_suffix();
    const fs::path tmp_lib = entry.get_dir() / fmt::format("lib.so.tmp-{}", suffix);
    const fs::path tmp_deps = entry.get_dir() / fmt::format("deps.d.tmp-{}", suffix);
    const scoped_file_cleanup cleanup{{tmp_lib, tmp_deps}};

    std::vector<std::string> argv{cc.invoked};
    argv.insert(argv.end(), r.flags.begin(), r.flags.end());
    if (!flags_set_standard(r.flags)) argv.emplace_back("-std=c++17");
    argv.insert(argv.end(), {"-shared", "-fPIC", "-I" + abi_dir.string()});
    for (const auto& d : include_dirs) argv.push_back("-I" + d.string());
    argv.push_back("-I" + source.parent_path().string());
    argv.insert(argv.end(), {"-MD", "-MF", tmp_deps.string(), "-o", tmp_lib.string(), source.string()});
    rec.argv = argv;

    platform::process_request q;
    q.argv = argv;
    q.cwd = entry.get_dir();
    q.timeout_s = r.timeout_s;
    // A compiler orphaned by a kloop that died (the death signal reaches only its driver) still
    // ends: twice the wall limit in CPU time, per process.
    q.cpu_limit_s = 2 * r.timeout_s;
    q.guard_group = true;  // a killed kloop takes the compiler's own children (cc1plus, cicc, ptxas) along
    auto res = m_runner.run(q);
    rec.compile_wall_s = res.wall_s;

    if (res.interrupted)
        throw kloop::error(exit_code::interrupted, fmt::format("interrupted while compiling '{}'", source.string()));
    if (!res.started)
        throw usage_error(fmt::format("{} (while compiling '{}')", res.describe(), source.string()));

    std::string output = res.stderr_text;
    if (!res.stdout_text.empty()) output += (output.empty() ? "" : "\n") + res.stdout_text;
    if (!res.succeeded()) {
        std::string why = res.timed_out || res.term_signal != 0 || output.empty()
                              ? fmt::format("compiler {}", res.describe())
                              : std::string();
        rec.ok = false;
        rec.diagnostics = trim_diagnostics(why.empty() ? output : (output.empty() ? why : why + "\n" + output));
        rec.wall_s = seconds_since(t0);
        return rec;
    }
    rec.diagnostics = trim_diagnostics(output);

    // Record what the compiler read, with hashes, then publish: lib.so, deps.json, meta.json.
    std::string depfile;
    try {
        depfile = platform::read_file(tmp_deps);
    } catch (const usage_error&) {
        depfile.clear();  // no depfile: record only the source (the cache is then weaker, not wrong)
    }
    const std::string library_sha256 = entry.publish(tmp_lib, parse_depfile(depfile), source,
                  json{{"source", source.string()},
                       {"argv", argv},
                       {"compiler", cc.invoked},
                       {"compiler_resolved", cc.resolved},
                       {"compiler_version", rec.compiler_version},
                       {"wall_s", res.wall_s},
                       {"diagnostics", rec.diagnostics}});
    rec.library = entry.get_library();
    rec.library_sha256 = library_sha256;

    rec.ok = true;
    rec.wall_s = seconds_since(t0);
    return rec;
}

}  // namespace kloop::backend::cpu
