// kloop backend/python: where the Python worker is, which interpreter runs it, the manifest of a
// "built" Python source, and the command line of one worker run.
//
// Responsibility: everything the orchestrator needs to start `<python> -m kloop_worker` in place
// of kloop-runner (docs/python.md). The worker speaks the runner's job JSON and event protocol
// (runner/job.hpp, runner/runner.hpp); what differs is only how it is started:
//
//   argv  <interpreter> -m kloop_worker --job JOB --events EVENTS
//   env   PYTHONPATH=<worker dir>[:$PYTHONPATH]   PYTHONUNBUFFERED=1
//         PYTHONPYCACHEPREFIX=<kloop's cache>/python-bytecode, PYTHONDONTWRITEBYTECODE= (empty: off)
//         (PYTHONDONTWRITEBYTECODE=1 without a cache directory)
//         TRITON_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR = the candidate's own cache directories (keyed
//         by its content: python_builder.hpp)
//
// A Python "library" (runner::job's candidate_lib, reference_lib, base_lib) is a manifest: a JSON
// file in the build cache (backend/python/python_builder.hpp) naming the source, the snapshot of
// its bytes that the worker imports, the module name, the candidate's Triton cache directory,
// the interpreter and the worker directory, the spec's [python] settings and the probe's facts.
// Passing manifests where native jobs pass shared objects keeps the gate, the bench, the A/B
// phase and the loop unchanged.
//
// Locations, each with its override (read on every call, nothing cached):
//   KLOOP_PYTHON_DIR  directory holding kloop_worker/         worker_dir()
//   KLOOP_PYTHON      the interpreter (wins over [python] interpreter)   choose_interpreter()
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/op_spec.hpp"

namespace kloop::backend::python {

// The job device of Python sources (build_dispatch): jobs on it are run by the worker.
inline constexpr const char* worker_device = "python";
inline constexpr int manifest_schema_version = 1;

// The directory that contains kloop_worker/__init__.py: $KLOOP_PYTHON_DIR (must contain it, else
// a usage_error), else platform::data_dir()/python (<prefix>/share/kloop/python installed; the
// build tree's link to the checkout's python/), with symbolic links resolved. Throws
// kloop::usage_error naming the place looked at, KLOOP_PYTHON_DIR and KLOOP_DATA_DIR when it
// does not have it.
[[nodiscard]] std::filesystem::path worker_dir();

struct interpreter_choice {
    std::string name;    // as given: "python3", "/usr/bin/python3", ".venv/bin/python" made absolute
    std::string origin;  // "KLOOP_PYTHON" | "[python] interpreter" | "default"
};
// $KLOOP_PYTHON, else the spec's [python] interpreter (a name is looked up on PATH; a path with a
// '/' is relative to the op directory), else "python3". Runs nothing.
[[nodiscard]] interpreter_choice choose_interpreter(const spec::op_spec& s);

struct library_manifest {
    std::string role;                      // "candidate" | "reference"
    std::filesystem::path source;          // the file as the user named it (absolute)
    std::filesystem::path snapshot;        // the bytes that were hashed, imported by the worker
    std::string module;                    // the module name the worker imports it under
    std::filesystem::path triton_cache_dir;
    std::filesystem::path inductor_cache_dir;
    std::string interpreter;               // the resolved path kloop starts
    std::filesystem::path worker_dir;
    std::string device = "auto";           // [python] device
    bool allow_tf32 = false;               // [python] allow_tf32
    std::string key;                       // the build cache key
    nlohmann::json probe;                  // the probe's facts (python_builder.hpp)
    // A native candidate (a .cu or C++ source, built by nvcc or the C++ compiler): the snapshot is
    // the shared library, loaded through the C ABI (kloop_worker/native_library.py) after its
    // SHA-256 is checked against this one.
    bool native = false;
    std::string native_sha256;
};

[[nodiscard]] nlohmann::json to_json(const library_manifest& m);
// Throws kloop::usage_error naming the path when it cannot be read or is not a manifest.
[[nodiscard]] library_manifest read_manifest(const std::filesystem::path& path);

struct worker_command {
    std::vector<std::string> argv;
    std::vector<std::pair<std::string, std::string>> env;
    std::filesystem::path worker_dir;  // the manifest's
    bool may_use_torch = true;         // [python] device is not "cpu" (fork_server.hpp's preload)
};

// How to run one job whose candidate library is the manifest `candidate_manifest`.
[[nodiscard]] worker_command worker_command_for(const std::filesystem::path& candidate_manifest,
                                                const std::filesystem::path& job_path,
                                                const std::filesystem::path& events_path);

// The environment every worker and probe gets (PYTHONPATH first, then the cache directories).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> worker_environment(const library_manifest& m);

}  // namespace kloop::backend::python
