// kloop backend/python: the "build" of a Python candidate or reference — a snapshot, a probe and
// a manifest, cached by content.
//
// Responsibility: what compiling is for native sources. Nothing is compiled (Triton compiles at
// the first call, into the candidate's own cache directory); instead the builder
//   1. chooses the interpreter (python_worker.hpp: $KLOOP_PYTHON, [python] interpreter, python3)
//      and finds it — missing: kloop::usage_error naming the interpreter tried (exit 2);
//   2. keys the entry: SHA-256 over the role, the source's absolute path and bytes, the
//      interpreter's identity (path, resolved file, size, mtime), the [python] settings, the
//      worker's own sources, $PYTHONPATH, $CUDA_VISIBLE_DEVICES and $TRITON_INTERPRET;
//   3. on a miss, writes <cache>/python/<key>/<file name> (the snapshot the worker imports, so
//      the code run is the code hashed) and runs the probe, `<python> -m kloop_worker --probe`:
//      versions of Python, numpy, torch, triton; the tensors this machine gives [python] device;
//      the static source screen (python_source_screen); and an import of the snapshot;
//   4. writes manifest.json (python_worker.hpp's library_manifest), which is the "library".
// Outcomes: a probe that reports a missing module (numpy; torch for device "cuda") or a worker
// that cannot run in that interpreter is a usage_error (exit 2) naming the interpreter and the
// module; a source that does not import is ok == false with the traceback as diagnostics (the
// candidate's build failed, exit 4). A hit spawns nothing. Failures are not cached.
//
// Entry: <cache_dir>/python/<key>/ with the snapshot and manifest.json. The JIT caches, triton/
// (TRITON_CACHE_DIR) and inductor/ (TORCHINDUCTOR_CACHE_DIR), lie in <cache_dir>/python-jit/<jit
// key>/, keyed by content alone (the source's bytes and local modules, the interpreter, the
// settings; not its path, not the worker's sources): the same candidate at another path — the
// loop's snapshot of it, later the base — or under another kloop finds its kernels compiled and
// autotuned (FLA's first calls autotune for 40-47 s per key with empty caches). Two different
// sources never share one, so no candidate writes a cache another candidate reads.
#pragma once

#include <filesystem>
#include <string>

#include "backend/build_cache.hpp"
#include "backend/build_dispatch.hpp"
#include "spec/op_spec.hpp"

namespace kloop::platform {
class command_runner_base;
}

namespace kloop::backend::python {

struct build_request {
    std::filesystem::path source;
    // backend::local_sources_sha256 of the source and the local modules it imports (a candidate's
    // [candidate] files too): part of the cache key.
    std::string sources_sha256;
    source_role role = source_role::candidate;
    const spec::op_spec* spec = nullptr;   // [python] settings, the op directory
    std::filesystem::path cache_dir;       // empty: platform::cache_dir()
    double timeout_s = 600;                // the probe (importing torch and the source)
    // A native candidate: the shared library its native build made (python_backend builds a .cu
    // or C++ source with the CUDA or CPU backend's builder first). Its bytes are what is keyed,
    // copied into the entry as the snapshot and loaded by the worker through the C ABI.
    std::filesystem::path native_library;
};

// "CPython 3.11.2 (/usr/bin/python3); numpy 1.24.2; torch 2.5.1 (CUDA 12.4); triton 3.1.0" from
// the probe's facts: the build record's compiler_version.
[[nodiscard]] std::string describe_versions(const nlohmann::json& probe);
// "numpy" | "torch-cuda" | "torch-cpu" | "torch-cpu+TRITON_INTERPRET": the build record's target.
[[nodiscard]] std::string describe_tensors(const nlohmann::json& probe);

class python_builder {
public:
    explicit python_builder(platform::command_runner_base& runner);
    // library = the manifest's path. Throws kloop::usage_error for the environment (see above).
    build_record build(const build_request& r);

private:
    platform::command_runner_base& m_runner;
};

}  // namespace kloop::backend::python
