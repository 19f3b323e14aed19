// kloop spec: environment-variable patterns (see env_patterns.hpp).
#include "spec/env_patterns.hpp"

#include <algorithm>

namespace kloop::spec {

const std::vector<std::string>& builtin_refused_env() {
    static const std::vector<std::string> v = {"FLA_CI_ENV", "SKIP_TEST_*", "PYTEST_ADDOPTS"};
    return v;
}

bool env_pattern_matches(std::string_view pattern, std::string_view name) {
    if (!pattern.empty() && pattern.back() == '*') {
        pattern.remove_suffix(1);
        return name.substr(0, pattern.size()) == pattern;
    }
    return pattern == name;
}

std::string matching_pattern(const std::vector<std::string>& patterns, std::string_view name) {
    for (const auto& p : patterns)
        if (env_pattern_matches(p, name)) return p;
    return {};
}

bool is_env_pattern(std::string_view p) {
    if (!p.empty() && p.back() == '*') p.remove_suffix(1);
    if (p.empty()) return false;
    auto start = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    if (!start(p.front())) return false;
    return std::all_of(p.begin(), p.end(), [&](char c) { return start(c) || (c >= '0' && c <= '9'); });
}

}  // namespace kloop::spec
