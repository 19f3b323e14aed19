// kloop backend/blackbox: refusal of gate-weakening variables and the clean child environment.
#include "backend/blackbox/gate_env.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

extern char** environ;

namespace kloop::backend::blackbox {

const std::vector<std::string>& default_pass_env() {
    static const std::vector<std::string> v = {
        "PATH",         "HOME",          "USER",           "LOGNAME",         "SHELL",
        "LANG",         "LANGUAGE",      "LC_*",           "TZ",              "TMPDIR",
        "VIRTUAL_ENV",  "CONDA_PREFIX",  "CONDA_DEFAULT_ENV", "PYENV_ROOT",   "PYENV_VERSION",
        "LD_LIBRARY_PATH", "CUDA_HOME",  "CUDA_PATH",      "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "TRITON_CACHE_DIR", "XDG_CACHE_HOME"};
    return v;
}

env_list current_environment() {
    env_list out;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string entry(*e);
        const auto eq = entry.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return out;
}

void refuse_weakening_env(const env_sources& src, std::string_view spec_file) {
    auto why = [](const std::string& pattern) {
        if (pattern == "FLA_CI_ENV") return std::string("it shrinks the tests' shapes while the gate still passes");
        if (pattern == "SKIP_TEST_*") return std::string("it skips tests while the gate still passes");
        if (pattern == "PYTEST_ADDOPTS") return std::string("it can deselect or stop tests behind the gate command's back");
        return std::string("the spec lists it in [gate] refuse_env");
    };
    for (const auto& [name, value] : src.kloop_env) {
        const auto p = spec::matching_pattern(src.refused, name);
        if (p.empty()) continue;
        throw usage_error("environment variable '" + name + "' is set (to '" + value + "') in kloop's environment: " +
                          why(p) + " (refused pattern '" + p + "'). Unset it (`unset " + name +
                          "`) and run again: the black-box gate runs only at full strength");
    }
    for (const auto& [name, value] : src.spec_env) {
        const auto p = spec::matching_pattern(src.refused, name);
        if (p.empty()) continue;
        throw usage_error("environment variable '" + name + "' is set (to '" + value + "') by the spec '" +
                          std::string(spec_file) + "': " + why(p) + " (refused pattern '" + p +
                          "'). Remove it from the spec's env table");
    }
}

clean_env make_clean_env(const env_sources& src, std::string_view spec_file) {
    refuse_weakening_env(src, spec_file);
    clean_env out;
    std::vector<std::string> pass = default_pass_env();
    pass.insert(pass.end(), src.pass_env.begin(), src.pass_env.end());
    std::vector<std::pair<std::string, std::string>> vars;
    auto set = [&](const std::string& name, const std::string& value) {
        auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& kv) { return kv.first == name; });
        if (it == vars.end()) vars.emplace_back(name, value);
        else it->second = value;
    };
    for (const auto& [name, value] : src.kloop_env)
        if (!spec::matching_pattern(pass, name).empty() && spec::matching_pattern(src.refused, name).empty()) {
            set(name, value);
            out.inherited.push_back(name);
        }
    for (const auto& [name, value] : src.kloop_set) {
        set(name, value);
        out.from_kloop.push_back(name);
    }
    for (const auto& [name, value] : src.spec_env) {
        set(name, value);
        out.from_spec.push_back(name);
    }
    std::sort(vars.begin(), vars.end());
    std::sort(out.inherited.begin(), out.inherited.end());
    out.vars = std::move(vars);
    return out;
}

std::string clean_env::describe() const {
    auto value_of = [&](const std::string& name) {
        for (const auto& [k, v] : vars)
            if (k == name) return v;
        return std::string();
    };
    std::string s = std::to_string(vars.size()) + " variables";
    if (!inherited.empty()) {
        s += "; inherited ";
        for (std::size_t i = 0; i < inherited.size(); ++i) s += (i ? ", " : "") + inherited[i];
    }
    if (!from_spec.empty()) {
        s += "; spec ";
        for (std::size_t i = 0; i < from_spec.size(); ++i) s += (i ? ", " : "") + from_spec[i] + "=" + value_of(from_spec[i]);
    }
    if (!from_kloop.empty()) {
        s += "; kloop ";
        for (std::size_t i = 0; i < from_kloop.size(); ++i) s += (i ? ", " : "") + from_kloop[i] + "=" + value_of(from_kloop[i]);
    }
    return s;
}

std::vector<std::string> argv_with_env(const clean_env& env, const std::vector<std::string>& argv) {
    std::vector<std::string> out = {"env", "-i"};
    for (const auto& [k, v] : env.vars) out.push_back(k + "=" + v);
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

}  // namespace kloop::backend::blackbox
