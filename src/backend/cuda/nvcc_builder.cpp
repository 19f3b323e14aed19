// kloop backend/cuda: the cached nvcc → shared-object build (see nvcc_builder.hpp).
#include "backend/cuda/nvcc_builder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/cuda/ptxas_report.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

#ifndef KLOOP_WITH_CUDA
#define KLOOP_WITH_CUDA 0
#endif

namespace kloop::backend::cuda {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::string_view k_key_salt = "kloop/backend/cuda/nvcc/v1";

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

bool any_flag(const std::vector<std::string>& flags, std::initializer_list<std::string_view> prefixes) {
    return std::any_of(flags.begin(), flags.end(), [&](const std::string& f) {
        return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return starts_with(f, p); });
    });
}

bool is_executable(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

bool on_path(const std::string& name) {
    const std::string path = getenv_string("PATH");
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find(':', start);
        if (end == std::string::npos) end = path.size();
        std::string dir = path.substr(start, end - start);
        if (is_executable(fs::path(dir.empty() ? "." : dir) / name)) return true;
        start = end + 1;
    }
    return false;
}

// The host compiler nvcc will run: -ccbin/--compiler-bindir from the flags, $NVCC_CCBIN, else g++.
std::string host_compiler_fingerprint(const std::vector<std::string>& flags) {
    std::string name;
    for (std::size_t i = 0; i < flags.size(); ++i) {
        const auto& f = flags[i];
        if ((f == "-ccbin" || f == "--compiler-bindir") && i + 1 < flags.size()) name = flags[i + 1];
        else if (starts_with(f, "-ccbin=")) name = f.substr(7);
        else if (starts_with(f, "--compiler-bindir=")) name = f.substr(18);
    }
    if (name.empty()) name = getenv_string("NVCC_CCBIN");
    if (name.empty()) name = "g++";
    try {
        if (fs::is_directory(name)) name = (fs::path(name) / "g++").string();
        return identify_compiler(name).fingerprint;
    } catch (const std::exception&) {
        return "host compiler '" + name + "' not found";  // nvcc will say so when it runs
    }
}

// ptxas's verbose lines are the report, not diagnostics: drop them from what users read.
std::string without_ptxas_info(const std::string& text) {
    std::string out;
    std::size_t pos = 0;
    bool in_props = false;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        const bool info = starts_with(line, "ptxas info");
        const bool props_body = in_props && !line.empty() && (line[0] == ' ' || line[0] == '\t');
        in_props = info && line.find("Function properties for") != std::string::npos;
        if ((info && line.find("Potential Performance Loss") == std::string::npos) || props_body) continue;
        out += line;
        out += '\n';
    }
    return out;
}


}  // namespace

fs::path toolkit_library_dir(const compiler_identity& nvcc) {
    const fs::path root = fs::path(nvcc.resolved).parent_path().parent_path();  // <toolkit>/bin/nvcc
    for (const auto& d : {root / "lib64", root / "targets" / "x86_64-linux" / "lib", root / "lib"}) {
        std::error_code ec;
        if (fs::exists(d / "libcudart.so", ec) || fs::exists(d / "libcudart.so.13", ec)) return d;
    }
    return {};
}

bool cuda_support_built_in() { return KLOOP_WITH_CUDA != 0; }

std::string target_name(int compute_capability, const std::string& arch_suffix) {
    if (compute_capability < 50 || compute_capability > 999)
        throw usage_error(fmt::format("compute capability {} is not supported by the cuda backend (sm_50 or newer)",
                                      compute_capability));
    if (!arch_suffix.empty() && arch_suffix != "a" && arch_suffix != "f")
        throw usage_error("arch_suffix '" + arch_suffix + "' is not one of \"\", \"a\", \"f\"");
    return fmt::format("sm_{}{}", compute_capability, arch_suffix);
}

std::string default_nvcc() {
    const std::string env = getenv_string("KLOOP_NVCC");
    if (!env.empty()) return env;
    if (on_path("nvcc")) return "nvcc";
    const std::string cuda_home = getenv_string("CUDA_HOME");
    if (!cuda_home.empty() && is_executable(fs::path(cuda_home) / "bin" / "nvcc"))
        return (fs::path(cuda_home) / "bin" / "nvcc").string();
    if (is_executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
    return "nvcc";
}

std::string pick_nvcc_version_line(const std::string& out) {
    std::string first, release;
    std::size_t pos = 0;
    while (pos < out.size()) {
        std::size_t end = out.find('\n', pos);
        if (end == std::string::npos) end = out.size();
        std::string line = out.substr(pos, end - pos);
        pos = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (first.empty()) first = line;
        if (line.find("release") != std::string::npos) release = line;
    }
    return release.empty() ? first : release;
}

std::vector<std::string> nvcc_argv(const std::string& nvcc, const nvcc_request& r, const fs::path& abi_dir,
                                   const std::vector<fs::path>& include_dirs, const fs::path& source,
                                   const fs::path& depfile, const fs::path& output) {
    std::vector<std::string> argv{nvcc};
    argv.insert(argv.end(), r.flags.begin(), r.flags.end());
    if (!any_flag(r.flags, {"-std", "--std"})) argv.emplace_back("-std=c++17");
    if (!any_flag(r.flags, {"-O", "--optimize"})) argv.emplace_back("-O3");
    argv.emplace_back("-lineinfo");
    argv.insert(argv.end(), {"-shared", "-Xcompiler", "-fPIC"});
    if (!any_flag(r.flags, {"-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code"})) {
        const std::string target = target_name(r.compute_capability, r.arch_suffix);
        if (r.arch_suffix.empty()) {
            argv.push_back("-arch=" + target);
        } else {
            // -arch=sm_90a would also run a plain compute_90 pass that rejects wgmma/setmaxnreg.
            argv.push_back(fmt::format("-gencode=arch=compute_{}{},code={}", r.compute_capability, r.arch_suffix, target));
        }
    }
    if (!any_flag(r.flags, {"-cudart", "--cudart"})) {
        // The shared runtime: the candidate's imports then name every CUDA API it calls (the
        // imported-symbol integrity check reads them), instead of a static copy of cudart whose
        // own dlopen/threads/timers would hide the candidate's.
        argv.insert(argv.end(), {"-cudart", "shared"});
        if (!r.cudart_dir.empty()) argv.insert(argv.end(), {"-Xlinker", "-rpath", "-Xlinker", r.cudart_dir.string()});
    }
    argv.insert(argv.end(), {"-Xptxas", "-v"});
    argv.push_back("-I" + abi_dir.string());
    for (const auto& d : include_dirs) argv.push_back("-I" + d.string());
    argv.push_back("-I" + source.parent_path().string());
    argv.insert(argv.end(), {"-MD", "-MF", depfile.string(), "-o", output.string(), source.string()});
    return argv;
}

nvcc_builder::nvcc_builder(platform::command_runner_base& runner) : m_runner(runner) {}

build_record nvcc_builder::build(const nvcc_request& r) {
    const auto t0 = clock_type::now();
    if (r.source.empty()) throw usage_error("cuda build: no source file given");
    const fs::path source = fs::absolute(r.source).lexically_normal();
    const std::string source_bytes = platform::read_file(source);
    const fs::path abi_dir =
        fs::absolute(r.abi_include_dir.empty() ? platform::abi_include_dir() : r.abi_include_dir).lexically_normal();
    std::string abi_bytes;
    try {
        abi_bytes = platform::read_file(abi_dir / "kloop" / "kernel.h");
    } catch (const usage_error& e) {
        throw usage_error(fmt::format("{}\n  (the ABI include directory must contain kloop/kernel.h)", e.what()));
    }
    std::vector<fs::path> include_dirs;
    for (const auto& d : r.include_dirs) include_dirs.push_back(fs::absolute(d).lexically_normal());
    const fs::path cache_root = r.cache_dir.empty() ? platform::cache_dir() : fs::absolute(r.cache_dir);
    const std::string target = target_name(r.compute_capability, r.arch_suffix);
    const compiler_identity nvcc = identify_compiler(
        r.compiler.empty() ? default_nvcc() : r.compiler, "CUDA compiler",
        "install the CUDA toolkit, put nvcc on PATH or name it with KLOOP_NVCC");

    platform::sha256_hasher h;
    h.update_field(k_key_salt);
    h.update_field(source.string()).update_field(source_bytes);
    h.update_field(std::to_string(r.flags.size()));
    for (const auto& f : r.flags) h.update_field(f);
    h.update_field(std::to_string(include_dirs.size()));
    for (const auto& d : include_dirs) h.update_field(d.string());
    h.update_field(abi_dir.string()).update_field(abi_bytes);
    h.update_field(target);
    h.update_field(nvcc.fingerprint);
    h.update_field(r.cudart_dir.string());
    h.update_field(host_compiler_fingerprint(r.flags));
    for (const char* var : {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH", "CPLUS_INCLUDE_PATH"})
        h.update_field(fmt::format("{}={}", var, getenv_string(var)));
    const cache_entry entry(cache_root, h.hex_digest());

    if (auto hit = entry.find_hit_record()) {
        hit->wall_s = seconds_since(t0);
        return *hit;
    }
    const auto lock = entry.acquire();
    if (auto hit = entry.find_hit_record()) {
        hit->wall_s = seconds_since(t0);
        return *hit;
    }
    entry.invalidate();

    build_record rec;
    rec.key = entry.get_key();
    rec.entry_dir = entry.get_dir();
    rec.compiler = nvcc.invoked;
    rec.target = target;
    rec.compiler_version = m_versions.get(m_runner, nvcc, {"--version"}, &pick_nvcc_version_line);

    const std::string suffix = unique_suffix();
    const fs::path tmp_lib = entry.get_dir() / fmt::format("lib.so.tmp-{}", suffix);
    const fs::path tmp_deps = entry.get_dir() / fmt::format("deps.d.tmp-{}", suffix);
    const scoped_file_cleanup cleanup{{tmp_lib, tmp_deps}};

    nvcc_request with_rpath = r;
    if (with_rpath.cudart_dir.empty()) with_rpath.cudart_dir = toolkit_library_dir(nvcc);
    rec.argv = nvcc_argv(nvcc.invoked, with_rpath, abi_dir, include_dirs, source, tmp_deps, tmp_lib);
    platform::process_request q;
    q.argv = rec.argv;
    q.cwd = entry.get_dir();
    q.timeout_s = r.timeout_s;
    // A compiler orphaned by a kloop that died (the death signal reaches only its driver) still
    // ends: twice the wall limit in CPU time, per process.
    q.cpu_limit_s = 2 * r.timeout_s;
    q.guard_group = true;  // a killed kloop takes the compiler's own children (cc1plus, cicc, ptxas) along
    q.max_capture_bytes = 16 << 20;  // ptxas -v on a CUTLASS TU is long
    auto res = m_runner.run(q);
    rec.compile_wall_s = res.wall_s;
    if (res.interrupted)
        throw kloop::error(exit_code::interrupted, fmt::format("interrupted while compiling '{}'", source.string()));
    if (!res.started) throw usage_error(fmt::format("{} (while compiling '{}')", res.describe(), source.string()));

    std::string output = res.stderr_text;
    if (!res.stdout_text.empty()) output += (output.empty() ? "" : "\n") + res.stdout_text;
    const ptxas_report report = parse_ptxas_output(output);
    rec.ptxas = report.to_json();
    if (!res.succeeded()) {
        std::string why = res.timed_out || res.term_signal != 0 || output.empty()
                              ? fmt::format("nvcc {}", res.describe())
                              : std::string();
        const std::string shown = without_ptxas_info(output);
        rec.ok = false;
        rec.diagnostics = trim_diagnostics(why.empty() ? shown : (shown.empty() ? why : why + "\n" + shown));
        rec.wall_s = seconds_since(t0);
        return rec;
    }
    rec.diagnostics = trim_diagnostics(without_ptxas_info(output));
    platform::write_file_atomic(entry.get_dir() / "ptxas.txt", output);

    std::string depfile;
    try {
        depfile = platform::read_file(tmp_deps);
    } catch (const usage_error&) {
        depfile.clear();
    }
    const std::string library_sha256 = entry.publish(tmp_lib, parse_depfile(depfile), source,
                  json{{"source", source.string()},
                       {"argv", rec.argv},
                       {"compiler", nvcc.invoked},
                       {"compiler_resolved", nvcc.resolved},
                       {"compiler_version", rec.compiler_version},
                       {"target", target},
                       {"ptxas", rec.ptxas},
                       {"wall_s", res.wall_s},
                       {"diagnostics", rec.diagnostics}});
    rec.library = entry.get_library();
    rec.library_sha256 = library_sha256;
    rec.ok = true;
    rec.wall_s = seconds_since(t0);
    return rec;
}

}  // namespace kloop::backend::cuda
