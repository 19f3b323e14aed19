// kloop backend/blackbox: op.toml for an FLA registry op (see fla_op_template.hpp).
#include "backend/fla_op_template.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/blackbox/bench_output.hpp"
#include "backend/python/python_worker.hpp"
#include "core/error.hpp"

namespace kloop::backend::blackbox {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A TOML basic string.
std::string toml_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// One line when it fits in about 100 columns, else one item per line.
std::string array_of(const std::vector<std::string>& items, const std::string& indent) {
    std::string line = "[";
    for (std::size_t i = 0; i < items.size(); ++i) line += (i ? ", " : "") + toml_string(items[i]);
    line += "]";
    if (line.size() <= 90) return line;
    std::string out = "[\n";
    for (const auto& i : items) out += indent + "  " + toml_string(i) + ",\n";
    return out + indent + "]";
}

}  // namespace

fla_op_facts describe_fla_op(const fs::path& repo, const std::string& op, const std::string& registry_file,
                             const std::string& python, platform::command_runner_base& commands) {
    platform::process_request req;
    req.argv = {python, "-m", "kloop_worker.fla_registry", "--describe", "--op", op, "--registry", registry_file};
    req.cwd = repo;
    req.env_overrides = {{"PYTHONPATH", python::worker_dir().string()}, {"PYTHONDONTWRITEBYTECODE", "1"}};
    req.timeout_s = 300;
    const auto r = commands.run(req);
    if (!r.started) throw usage_error(fmt::format("option --python: cannot run '{}': {}", python, r.spawn_error));
    const json doc = last_json_line(r.stdout_text, {"error", "test_file"}).value_or(json::object());
    if (doc.contains("error"))
        throw usage_error(fmt::format("the registry of '{}' cannot describe op '{}': {}", repo.string(), op,
                                      doc.at("error").get<std::string>()));
    if (!r.succeeded() || !doc.contains("test_file")) {
        std::string err = r.stderr_text;
        while (!err.empty() && err.back() == '\n') err.pop_back();
        const auto nl = err.rfind('\n');
        throw usage_error(fmt::format("describing op '{}' with {} in '{}' failed ({}){}", op, python, repo.string(),
                                      r.describe(), err.empty() ? "" : ": " + err.substr(nl == std::string::npos ? 0 : nl + 1)));
    }
    fla_op_facts f;
    f.name = doc.at("name").get<std::string>();
    f.import_path = doc.at("import_path").get<std::string>();
    f.test_file = doc.at("test_file").get<std::string>();
    f.package_dir = doc.at("package_dir").get<std::string>();
    f.modes = doc.at("modes").get<std::vector<std::string>>();
    f.shapes = doc.at("shapes").get<std::vector<std::string>>();
    return f;
}

std::string fla_op_toml(const fla_op_facts& f, const fla_op_choices& c) {
    auto must_exist = [&](const std::string& rel, const std::string& what, const std::string& option) {
        if (!fs::is_regular_file(c.repo / rel))
            throw usage_error(fmt::format("{} '{}' does not exist in '{}'{}", what, rel, c.repo.string(), option));
    };
    must_exist(f.test_file, "the op's test file", " (the registry's test_file, or tests/ops/test_<name>.py)");
    must_exist(c.registry_file, "the registry", " (option --registry)");
    const std::string target = c.target.empty() ? f.package_dir + "/chunk.py" : c.target;
    must_exist(target, "the target", " (option --target: the file the loop edits)");
    if (f.shapes.empty()) throw usage_error("op '" + f.name + "' has no registry shape its dim_constraints allow");

    std::vector<std::string> frozen{f.test_file, c.registry_file};
    if (fs::is_regular_file(c.repo / f.package_dir / "naive.py") && f.package_dir + "/naive.py" != target)
        frozen.push_back(f.package_dir + "/naive.py");
    std::vector<std::string> shapes;
    for (const auto& m : f.modes)
        for (const auto& s : f.shapes) shapes.push_back(m + "/" + s);
    std::string root = c.repo.lexically_relative(c.spec_dir).generic_string();
    if (root.empty()) root = ".";

    std::string t;
    t += fmt::format("# {} from {}: written by `kloop new --from-fla` (docs/fla.md). The repository's own test\n"
                     "# file is the gate; kloop's bench module times the registry's shapes.\n",
                     f.name, f.import_path);
    t += "[op]\n";
    t += "name = " + toml_string(f.name) + "\n";
    t += "description = " + toml_string(f.name + " (" + f.import_path + "), FLA registry op") + "\n";
    t += "mode = \"blackbox\"\nbackend = \"python\"\n";  // Triton kernels in Python files
    t += "frozen = " + array_of(frozen, "") + "\n\n";
    t += "[repo]\nroot = " + toml_string(root) + "\ntarget = " + toml_string(target) + "\n\n";
    t += "[gate]\n";
    t += "command = " + array_of({c.python, "-m", "pytest", f.test_file, "-q"}, "") + "\n";
    t += "timeout = 3600\n\n";
    t += "[bench]\n";
    t += "registry = { op = " + toml_string(f.name) + ", python = " + toml_string(c.python) +
         (c.registry_file == "benchmarks/ops/registry.py" ? std::string() : ", file = " + toml_string(c.registry_file)) + " }\n";
    t += "shapes = " + array_of(shapes, "") + "\n";
    // A round's time: one second per shape, shared out (settled shapes stop at an early verdict
    // and leave theirs to the noisy ones); at least 5 s.
    t += "rounds = 2\ntimeout = 1800\n";
    t += fmt::format("round_time_s = {}  # one bench run's time, shared out over its shapes (docs/blackbox.md)\n",
                     std::max<std::size_t>(5, shapes.size()));
    return t;
}

}  // namespace kloop::backend::blackbox
