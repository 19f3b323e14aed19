// kloop backend/python: worker location, interpreter choice, manifests, worker command lines.
#include "backend/python/python_worker.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::backend::python {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

bool has_worker(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "kloop_worker" / "__init__.py", ec);
}

}  // namespace

fs::path worker_dir() {
    if (std::string d = env("KLOOP_PYTHON_DIR"); !d.empty()) {
        if (has_worker(d)) return fs::absolute(d).lexically_normal();
        throw usage_error(fmt::format(
            "KLOOP_PYTHON_DIR '{}' does not contain kloop_worker/__init__.py; point it at the directory that holds "
            "kloop_worker/ (kloop's python/ folder)",
            d));
    }
    const fs::path dir = platform::data_dir() / "python";
    if (has_worker(dir)) {
        std::error_code ec;
        fs::path real = fs::canonical(dir, ec);
        return ec ? dir : real;
    }
    throw usage_error(fmt::format(
        "cannot find kloop's Python worker kloop_worker/ in '{}'; set KLOOP_PYTHON_DIR to the directory that "
        "contains kloop_worker/, or KLOOP_DATA_DIR to kloop's data directory",
        dir.string()));
}

interpreter_choice choose_interpreter(const spec::op_spec& s) {
    if (std::string p = env("KLOOP_PYTHON"); !p.empty()) return {p, "KLOOP_PYTHON"};
    if (!s.python.interpreter.empty()) {
        std::string name = s.python.interpreter;
        if (name.find('/') != std::string::npos && !fs::path(name).is_absolute())
            name = (s.op_dir / name).lexically_normal().string();
        return {name, "[python] interpreter"};
    }
    return {"python3", "default"};
}

json to_json(const library_manifest& m) {
    return json{{"schema", manifest_schema_version},
                {"role", m.role},
                {"source", m.source.string()},
                {"snapshot", m.snapshot.string()},
                {"module", m.module},
                {"triton_cache_dir", m.triton_cache_dir.string()},
                {"inductor_cache_dir", m.inductor_cache_dir.string()},
                {"interpreter", m.interpreter},
                {"worker_dir", m.worker_dir.string()},
                {"device", m.device},
                {"allow_tf32", m.allow_tf32},
                {"key", m.key},
                {"probe", m.probe},
                {"native", m.native},
                {"native_sha256", m.native_sha256}};
}

library_manifest read_manifest(const fs::path& path) {
    json j;
    try {
        j = json::parse(platform::read_file(path));
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("the Python library manifest '{}' is not JSON: {}", path.string(), e.what()));
    }
    if (!j.is_object() || j.value("schema", 0) != manifest_schema_version)
        throw usage_error(fmt::format("'{}' is not a kloop Python library manifest (schema {})", path.string(),
                                      manifest_schema_version));
    library_manifest m;
    try {
        m.role = j.value("role", "");
        m.source = j.at("source").get<std::string>();
        m.snapshot = j.at("snapshot").get<std::string>();
        m.module = j.at("module").get<std::string>();
        m.triton_cache_dir = j.value("triton_cache_dir", "");
        m.inductor_cache_dir = j.value("inductor_cache_dir", "");
        m.interpreter = j.at("interpreter").get<std::string>();
        m.worker_dir = j.at("worker_dir").get<std::string>();
        m.device = j.value("device", "auto");
        m.allow_tf32 = j.value("allow_tf32", false);
        m.key = j.value("key", "");
        m.probe = j.value("probe", json::object());
        m.native = j.value("native", false);
        m.native_sha256 = j.value("native_sha256", "");
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("the Python library manifest '{}' is incomplete: {}", path.string(), e.what()));
    }
    return m;
}

std::vector<std::pair<std::string, std::string>> worker_environment(const library_manifest& m) {
    std::string pythonpath = m.worker_dir.string();
    if (std::string old = env("PYTHONPATH"); !old.empty()) pythonpath += ":" + old;
    std::vector<std::pair<std::string, std::string>> e = {{"PYTHONPATH", pythonpath}, {"PYTHONUNBUFFERED", "1"}};
    // Bytecode goes to kloop's cache, never next to the user's files (a source's mtime and size
    // in each .pyc header keep an edited file from reusing stale code). Not writing it at all
    // made every worker recompile torch's ~1900 modules where site-packages ships no .pyc: 5 s
    // of each process on the H200 host, a third of a Triton iteration as it was then.
    // An inherited PYTHONDONTWRITEBYTECODE=1 (CI images and the H200 host's shell set it) is
    // overridden: with the cache elsewhere it would only make every worker compile torch's
    // modules again (838 of them, 3-4 s per gate on the H200 host). An empty value
    // is "unset" to Python.
    try {
        e.emplace_back("PYTHONPYCACHEPREFIX", (platform::cache_dir() / "python-bytecode").string());
        e.emplace_back("PYTHONDONTWRITEBYTECODE", "");
    } catch (const usage_error&) {
        e.emplace_back("PYTHONDONTWRITEBYTECODE", "1");  // no cache directory: write none
    }
    if (!m.triton_cache_dir.empty()) e.emplace_back("TRITON_CACHE_DIR", m.triton_cache_dir.string());
    if (!m.inductor_cache_dir.empty()) e.emplace_back("TORCHINDUCTOR_CACHE_DIR", m.inductor_cache_dir.string());
    return e;
}

worker_command worker_command_for(const fs::path& candidate_manifest, const fs::path& job_path,
                                  const fs::path& events_path) {
    const auto m = read_manifest(candidate_manifest);
    worker_command c;
    c.argv = {m.interpreter, "-m", "kloop_worker", "--job", job_path.string(), "--events", events_path.string()};
    c.env = worker_environment(m);
    c.worker_dir = m.worker_dir;
    c.may_use_torch = m.device != "cpu";
    return c;
}

}  // namespace kloop::backend::python
