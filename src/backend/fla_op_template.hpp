// kloop backend: a black-box op.toml written for an op of an FLA-style registry (implemented in
// backend/blackbox/fla_op_template.cpp; public, for `kloop new --from-fla OP`, docs/fla.md).
//
// Responsibility: from the registry's own description of an op (kloop_worker.fla_registry
// --describe, run under the same clean rules as a bench: kloop's module on PYTHONPATH, the
// repository as the working directory) to the spec text a maintainer would otherwise write by
// hand: the gate is the op's pytest file (the registry's `test_file`, or tests/ops/test_<last
// segment>.py), frozen are that file, the registry and the package's naive.py where there is one,
// the target is the package's chunk.py (or the file named), the bench is `[bench] registry` with
// every registry shape in every mode. Pure text generation is separate from the one subprocess.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "platform/subprocess.hpp"

namespace kloop::backend::blackbox {

struct fla_op_facts {
    std::string name;
    std::string import_path;           // fla.ops.gla
    std::string test_file;             // tests/ops/test_gla.py (relative to the repository root)
    std::string package_dir;           // fla/ops/gla
    std::vector<std::string> modes;    // fwd, fwdbwd
    std::vector<std::string> shapes;   // registry shape names
};

// Runs `python -m kloop_worker.fla_registry --describe` in `repo`. Throws kloop::usage_error
// with the module's message (an unknown op lists the registered ones; no torch says so).
[[nodiscard]] fla_op_facts describe_fla_op(const std::filesystem::path& repo, const std::string& op,
                                           const std::string& registry_file, const std::string& python,
                                           platform::command_runner_base& commands);

struct fla_op_choices {
    std::filesystem::path repo;        // absolute
    std::filesystem::path spec_dir;    // where op.toml goes (absolute)
    std::string registry_file = "benchmarks/ops/registry.py";
    std::string python = "python";
    std::string target;                // relative to repo; empty: <package_dir>/chunk.py
};

// The op.toml text. Throws kloop::usage_error when the test file, the registry or the target
// does not exist in the repository (naming it and what to pass instead).
[[nodiscard]] std::string fla_op_toml(const fla_op_facts& facts, const fla_op_choices& choices);

}  // namespace kloop::backend::blackbox
