// kloop spec: environment-variable patterns and the variables that weaken a repository's gate.
//
// Responsibility: the pattern grammar of a black-box op's `refuse_env` and `pass_env` (an exact
// name, or a prefix ending in '*'), and the built-in list of variables kloop refuses because they
// quietly weaken a repository's tests while pytest still exits 0 (FLA's FLA_CI_ENV=1 shrinks the
// parametrised shapes, SKIP_TEST_* skips whole tests, PYTEST_ADDOPTS can add `-k`/`--deselect`).
// The spec loader validates the spec's tables with it; the black-box backend's clean environment
// (backend/blackbox/gate_env) refuses with it. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kloop::spec {

// FLA_CI_ENV, SKIP_TEST_*, PYTEST_ADDOPTS.
[[nodiscard]] const std::vector<std::string>& builtin_refused_env();

// true when `name` matches `pattern` (exact, or prefix for a pattern ending in '*').
[[nodiscard]] bool env_pattern_matches(std::string_view pattern, std::string_view name);
// The first pattern of `patterns` matching `name`, or "" when none does.
[[nodiscard]] std::string matching_pattern(const std::vector<std::string>& patterns, std::string_view name);
// A well-formed pattern: [A-Za-z_][A-Za-z0-9_]* with an optional trailing '*'.
[[nodiscard]] bool is_env_pattern(std::string_view pattern);

}  // namespace kloop::spec
