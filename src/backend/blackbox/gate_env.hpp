// kloop backend/blackbox: the environment of a black-box gate and bench — refusal and a clean copy.
//
// Responsibility: a repository's tests often read environment variables that quietly weaken them
// while pytest still exits 0 — FLA's FLA_CI_ENV=1 shrinks the parametrised shapes, SKIP_TEST_*
// skips whole tests, PYTEST_ADDOPTS can add `-k`/`--deselect`. kloop refuses to run when one of
// them is set, in its own environment or in the spec's `env` tables, naming the variable
// (kloop::usage_error, exit 2). The commands then get a clean environment built here, never
// kloop's own: a short list of variables a toolchain needs (PATH, HOME, locale, CUDA device
// selection, virtualenv/conda), the names the spec passes through (`pass_env`), the spec's
// `env` values, and what kloop itself sets. The result is recorded in full.
//
// Patterns: an exact name ("FLA_CI_ENV") or a prefix ending in '*' ("SKIP_TEST_*").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spec/env_patterns.hpp"

namespace kloop::backend::blackbox {

using env_list = std::vector<std::pair<std::string, std::string>>;

// Inherited from kloop's environment when set: PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE,
// LC_*, TZ, TMPDIR, VIRTUAL_ENV, CONDA_PREFIX, CONDA_DEFAULT_ENV, PYENV_ROOT, PYENV_VERSION,
// LD_LIBRARY_PATH, CUDA_HOME, CUDA_PATH, CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES,
// HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, TRITON_CACHE_DIR, XDG_CACHE_HOME.
// Deliberately not PYTHONPATH: it could import the user's original files instead of the copy
// the candidate sits in (pass it with `pass_env` if the repository needs it).
[[nodiscard]] const std::vector<std::string>& default_pass_env();

// The process's own environment, in order.
[[nodiscard]] env_list current_environment();

struct env_sources {
    env_list kloop_env;                   // kloop's environment (current_environment())
    std::vector<std::string> refused;     // builtin_refused_env() + the spec's refuse_env
    std::vector<std::string> pass_env;    // the spec's pass_env (added to default_pass_env())
    env_list spec_env;                    // the spec's env table, in file order
    env_list kloop_set;                   // what kloop sets (PYTHONDONTWRITEBYTECODE=1, hints)
};

// Throws kloop::usage_error naming the first refused variable set in kloop's environment or in
// the spec's env, with the pattern that refuses it and how to proceed.
void refuse_weakening_env(const env_sources& src, std::string_view spec_file);

struct clean_env {
    env_list vars;                        // the whole environment of the child, sorted by name
    std::vector<std::string> inherited;   // names taken from kloop's environment
    std::vector<std::string> from_spec;   // names the spec set
    std::vector<std::string> from_kloop;  // names kloop set

    // "14 variables: inherited PATH, HOME, ...; spec OMP_NUM_THREADS=1; kloop PYTHONDONTWRITEBYTECODE=1"
    [[nodiscard]] std::string describe() const;
};

// Refuses first (refuse_weakening_env), then builds the child's environment: inherited names,
// then kloop's own values, then the spec's values (the spec wins).
[[nodiscard]] clean_env make_clean_env(const env_sources& src, std::string_view spec_file);

// argv that runs `argv` under exactly `env` and nothing else: {"env", "-i", "K=V"..., argv...}.
// POSIX `env -i` clears the inherited environment; the program is looked up on env's PATH.
[[nodiscard]] std::vector<std::string> argv_with_env(const clean_env& env, const std::vector<std::string>& argv);

}  // namespace kloop::backend::blackbox
