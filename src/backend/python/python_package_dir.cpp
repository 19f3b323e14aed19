// kloop backend/python: where an installed Python package lies (see python_package_dir.hpp).
#include "backend/python/python_package_dir.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "backend/python/python_worker.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;

namespace kloop::backend::python {
namespace {

// Prints the package's directory, or exits 3 when the interpreter does not find it. find_spec
// of a top-level name searches sys.path and runs none of the package's code.
constexpr const char* find_package_script =
    "import importlib.util, os, sys\n"
    "s = importlib.util.find_spec(sys.argv[1])\n"
    "if s is None: sys.exit(3)\n"
    "loc = list(s.submodule_search_locations or [])\n"
    "print(loc[0] if loc else os.path.dirname(s.origin or ''))\n";

struct lookup {
    bool found = false;
    fs::path dir;       // found
    std::string why;    // not found: the sentence
};

lookup find_package(const std::string& interpreter, const std::string& package) {
    platform::process_request r;
    // Not -I (isolated): that drops PYTHONPATH and the user's site-packages, where pip --target and
    // --user installs live. The working directory is "/", so no package of kloop's cwd is found.
    r.argv = {interpreter, "-c", find_package_script, package};
    r.cwd = "/";
    r.timeout_s = 60;
    platform::posix_command_runner runner;
    const platform::process_result res = runner.run(r);
    if (!res.started) return {false, {}, res.spawn_error};
    if (res.succeeded())
        if (std::string out = trimmed(res.stdout_text); !out.empty()) return {true, fs::path(out), {}};
    if (res.exit_code == 3)
        return {false, {}, "'" + interpreter + "' finds no package '" + package + "'"};
    const std::string_view err = trim(res.stderr_text);  // its last line: the exception
    return {false, {}, "'" + interpreter + "' " + res.describe() + " looking for '" + package + "'" +
                           (err.empty() ? "" : ": " + std::string(split_lines(err).back()))};
}

lookup find_package_memoised(const std::string& interpreter, const std::string& package) {
    static std::mutex mu;
    static std::map<std::pair<std::string, std::string>, lookup> memo;
    {
        const std::lock_guard lock(mu);
        if (auto it = memo.find({interpreter, package}); it != memo.end()) return it->second;
    }
    lookup l = find_package(interpreter, package);
    const std::lock_guard lock(mu);
    return memo.emplace(std::make_pair(interpreter, package), std::move(l)).first->second;
}

}  // namespace

fs::path resolve_include_dir(const spec::op_spec& spec, const spec::include_dir& dir) {
    if (dir.python_package.empty()) return spec.op_dir / dir.path;
    const interpreter_choice py = choose_interpreter(spec);
    const lookup l = find_package_memoised(py.name, dir.python_package);
    const std::string field = dir.field + ".python_package";
    if (!l.found)
        throw spec_error(spec.spec_file.string(), dir.line, field,
                         l.why + " (the interpreter: " + py.origin +
                             "): install the distribution that provides it into that interpreter's environment "
                             "(for CUTLASS's headers, 'pip install nvidia-cutlass'), or choose another interpreter "
                             "with KLOOP_PYTHON");
    const fs::path abs = (dir.path.empty() ? l.dir : l.dir / dir.path).lexically_normal();
    std::error_code ec;
    if (!fs::is_directory(abs, ec))
        throw spec_error(spec.spec_file.string(), dir.line, dir.field + ".path",
                         "'" + dir.path + "' is not a directory inside package '" + dir.python_package + "' (looked for '" +
                             abs.string() + "', the package found by '" + py.name + "' at '" + l.dir.string() + "')");
    return abs;
}

}  // namespace kloop::backend::python
