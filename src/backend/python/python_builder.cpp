// kloop backend/python: snapshot + probe + manifest (see python_builder.hpp).
#include "backend/python/python_builder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/python/fork_server.hpp"
#include "backend/python/python_worker.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace kloop::backend::python {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::string_view k_key_salt = "kloop/backend/python/build/v2";  // v2: JIT caches keyed apart
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// The worker's own sources, in a stable order: a change of the probe or the screen re-probes.
std::string worker_fingerprint(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "kloop_worker", ec))
        if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    platform::sha256_hasher h;
    for (const auto& f : files) {
        h.update_field(f.filename().string());
        try {
            h.update_field(platform::read_file(f));
        } catch (const usage_error&) {
            h.update_field("<unreadable>");
        }
    }
    return h.hex_digest();
}

// What decides a probe's facts and a JIT cache's contents besides the interpreter: the import
// path, which GPUs are visible (torch on the GPU, or on the CPU under Triton's interpreter), the
// interpreter flag. Set-but-empty differs from unset: CUDA_VISIBLE_DEVICES="" hides every GPU.
void hash_environment(platform::sha256_hasher& h) {
    for (const char* var : {"PYTHONPATH", "CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET"}) {
        const char* v = std::getenv(var);
        h.update_field(v != nullptr ? fmt::format("{}={}", var, v) : fmt::format("{} unset", var));
    }
}

// The JIT caches' key: what the code is — its bytes, its local modules, the interpreter, the
// settings and the environment the build key reads — not where it lies nor which worker probes
// it. The same bytes at another path (the loop's snapshot of a candidate, the base of the next
// iteration) find their kernels compiled and autotuned; two different sources never share a cache.
std::string jit_cache_key(const build_request& r, const std::string& source_bytes, const std::string& interpreter) {
    platform::sha256_hasher h;
    h.update_field("kloop python jit caches 1").update_field(r.role == source_role::candidate ? "candidate" : "reference");
    h.update_field(source_bytes).update_field(r.sources_sha256).update_field(interpreter);
    h.update_field(r.spec->python.device).update_field(r.spec->python.allow_tf32 ? "tf32" : "no-tf32");
    hash_environment(h);
    return h.hex_digest();
}

std::string tail(const std::string& text, std::size_t max_chars) {
    return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

std::string str_or(const json& j, const char* key, const std::string& fallback) {
    if (j.contains(key) && j.at(key).is_string()) return j.at(key).get<std::string>();
    return fallback;
}

}  // namespace

std::string describe_versions(const json& p) {
    const json py = p.value("python", json::object());
    std::string s = fmt::format("{} {} ({})", str_or(py, "implementation", "Python"), str_or(py, "version", "?"),
                                str_or(py, "executable", "?"));
    s += "; numpy " + str_or(p, "numpy", "-");
    s += "; torch " + str_or(p, "torch", "-");
    if (p.contains("torch_cuda") && p.at("torch_cuda").is_string()) s += " (CUDA " + p.at("torch_cuda").get<std::string>() + ")";
    s += "; triton " + str_or(p, "triton", "-");
    return s;
}

std::string describe_tensors(const json& p) {
    std::string t = str_or(p, "tensors", "?");
    if (p.value("triton_interpret", false)) t += "+TRITON_INTERPRET";
    return t;
}

python_builder::python_builder(platform::command_runner_base& runner) : m_runner(runner) {}

build_record python_builder::build(const build_request& r) {
    const auto t0 = clock_type::now();
    if (r.source.empty() || r.spec == nullptr) throw internal_error("python build: no source or spec given");
    const fs::path source = fs::absolute(r.source).lexically_normal();
    const bool native = !r.native_library.empty();
    // A native candidate is its library: the bytes that run (the source's headers are in them).
    const std::string source_bytes = platform::read_file(native ? r.native_library : source);
    const fs::path cache_root = r.cache_dir.empty() ? platform::cache_dir() : fs::absolute(r.cache_dir);
    const auto choice = choose_interpreter(*r.spec);
    const compiler_identity py = identify_compiler(
        choice.name, "Python interpreter",
        fmt::format("install Python 3 with numpy, or name one with KLOOP_PYTHON or [python] interpreter (tried '{}', "
                    "from {})",
                    choice.name, choice.origin));
    const fs::path wdir = worker_dir();
    const auto& settings = r.spec->python;
    const std::string role = r.role == source_role::candidate ? "candidate" : "reference";

    platform::sha256_hasher h;
    h.update_field(k_key_salt).update_field(role).update_field(native ? "native" : "module");
    h.update_field(source.string()).update_field(source_bytes);
    // The local modules it imports: the probe imports them too, so a change in one alone probes again.
    h.update_field(r.sources_sha256);
    h.update_field(py.fingerprint);
    h.update_field(settings.device).update_field(settings.allow_tf32 ? "tf32" : "no-tf32");
    h.update_field(wdir.string()).update_field(worker_fingerprint(wdir));
    hash_environment(h);
    const std::string key = h.hex_digest();
    const fs::path entry = cache_root / "python" / key;
    const fs::path jit = cache_root / "python-jit" / jit_cache_key(r, source_bytes, py.fingerprint);
    const fs::path manifest_path = entry / "manifest.json";

    library_manifest m;
    m.role = role;
    m.source = source;
    m.snapshot = entry / (native ? source.filename().string() + ".so" : source.filename().string());
    m.native = native;
    if (native) m.native_sha256 = platform::sha256_hex(source_bytes);
    m.module = fmt::format("kloop_{}_{}", role, key.substr(0, 16));
    m.triton_cache_dir = jit / "triton";
    m.inductor_cache_dir = jit / "inductor";
    m.interpreter = py.invoked;
    m.worker_dir = wdir;
    m.device = settings.device;
    m.allow_tf32 = settings.allow_tf32;
    m.key = key;

    build_record rec;
    rec.key = key;
    rec.entry_dir = entry;
    rec.compiler = py.invoked;
    rec.library = manifest_path;
    rec.argv = {py.invoked,  "-m",         "kloop_worker", "--probe",        "--source",
                source.string(), "--snapshot", m.snapshot.string(), "--module", m.module,
                "--device",      m.device,     "--role",           role,        "--triton-cache",
                m.triton_cache_dir.string()};
    if (native) {
        rec.argv.emplace_back("--native-sha256");
        rec.argv.push_back(m.native_sha256);
    }
    rec.argv.emplace_back("--out");

    // A hit: a complete entry (manifest.json is written last) whose snapshot is still there.
    std::error_code ec;
    if (fs::is_regular_file(manifest_path, ec) && fs::is_regular_file(m.snapshot, ec)) {
        try {
            const auto hit = read_manifest(manifest_path);
            rec.ok = true;
            rec.cache_hit = true;
            rec.compiler_version = describe_versions(hit.probe);
            rec.target = describe_tensors(hit.probe);
            rec.argv.push_back((entry / "probe.json").string());
            rec.wall_s = seconds_since(t0);
            return rec;
        } catch (const usage_error&) {
            // an unreadable manifest: probe again and replace it
        }
    }

    platform::ensure_directory(entry);
    platform::write_file_atomic(m.snapshot, source_bytes);
    const fs::path probe_out = entry / fmt::format("probe.json.tmp-{}", unique_suffix());
    const scoped_file_cleanup cleanup{{probe_out}};
    rec.argv.push_back(probe_out.string());

    platform::process_request q;
    q.argv = rec.argv;
    q.cwd = entry;
    q.timeout_s = r.timeout_s;
    q.env_overrides = worker_environment(m);
    route_through_fork_server(q, wdir, settings.device != "cpu");
    const auto res = m_runner.run(q);
    if (res.interrupted) throw kloop::error(exit_code::interrupted, "interrupted while probing '" + source.string() + "'");
    if (!res.started)
        throw usage_error(fmt::format("{} (the Python interpreter from {})", res.describe(), choice.origin));
    const std::string output = tail(res.stderr_text + (res.stdout_text.empty() ? "" : "\n" + res.stdout_text), 6000);
    if (res.timed_out) {
        rec.ok = false;
        rec.diagnostics = fmt::format("importing '{}' {}\n{}", source.filename().string(), res.describe(), output);
        rec.wall_s = seconds_since(t0);
        return rec;
    }
    json facts;
    try {
        facts = json::parse(platform::read_file(probe_out));
    } catch (const std::exception&) {
        throw usage_error(fmt::format(
            "the Python interpreter '{}' (from {}) could not run kloop's worker ({}): the probe {}\n{}\n"
            "  hint: kloop's worker needs Python 3.8 or newer with numpy; set KLOOP_PYTHON to such an interpreter",
            py.invoked, choice.origin, (wdir / "kloop_worker").string(), res.describe(), output));
    }
    if (facts.contains("environment_error")) {
        const std::string missing = str_or(facts, "missing_module", "");
        throw usage_error(fmt::format(
            "the Python interpreter '{}' (from {}; {}) cannot run this op: {}\n  hint: {}", py.invoked, choice.origin,
            describe_versions(facts), facts.at("environment_error").get<std::string>(),
            missing.empty() ? std::string("check [python] device in op.toml")
                            : fmt::format("install {} for that interpreter, or point KLOOP_PYTHON (or [python] "
                                          "interpreter) at one that has it",
                                          missing)));
    }
    rec.compiler_version = describe_versions(facts);
    rec.target = describe_tensors(facts);
    if (facts.contains("import_error")) {
        rec.ok = false;
        std::string why = facts.at("import_error").get<std::string>();
        if (facts.contains("import_traceback")) why += "\n" + facts.at("import_traceback").get<std::string>();
        rec.diagnostics = trim_diagnostics(why);
        rec.wall_s = seconds_since(t0);
        return rec;
    }
    m.probe = facts;
    platform::write_file_atomic(entry / "probe.json", facts.dump(1));
    rec.argv.back() = (entry / "probe.json").string();
    platform::write_file_atomic(manifest_path, to_json(m).dump(1));
    rec.ok = true;
    rec.diagnostics = trim_diagnostics(tail(output, 4000));
    rec.compile_wall_s = res.wall_s;
    rec.wall_s = seconds_since(t0);
    return rec;
}

}  // namespace kloop::backend::python
