// kloop backend/python: the fork server — Python workers started by fork from a warm interpreter.
//
// Responsibility: make a Python worker process cheap to start without making it less of a
// process. Every kloop Python process (a build probe, a gate, a bench, an A/B) used to be a new
// interpreter that imported numpy and torch first: 3.5 s of each on the H200 host, four or five
// times per iteration (docs/perf.md). Instead, kloop starts one server per interpreter and
// environment (python/kloop_worker/fork_server.py) the first time it needs one; the server
// imports those modules once and forks a child per worker. The child is still its own process
// — its own CUDA context (the server never touches CUDA), Triton cache, crash and exit status;
// only the imports are shared, copy-on-write.
//
// What the rest of kloop sees does not change: route_through_fork_server() rewrites a worker's
// process_request so that it starts fork_client.py, a stdlib-only script that hands its streams,
// environment and working directory to the server and ends exactly as the worker ended (exit
// code or signal). Timeouts and Ctrl-C kill the client as they killed the worker; the server
// then kills the worker's process group. Whatever the server cannot take — no server, a server
// that died, another interpreter or environment — runs as a fresh interpreter, as before.
//
//   KLOOP_PYTHON_FORK_SERVER=0   never route: every worker is a fresh interpreter
//
// The servers live as long as this kloop process: each reads a pipe only kloop holds and exits
// at its end-of-file (kloop done, or killed); stop_fork_servers() ends them explicitly.
#pragma once

#include <filesystem>

#include "platform/subprocess.hpp"

namespace kloop::backend::python {

// `q` runs `<interpreter> -m kloop_worker ...` with worker_environment() overrides (anything
// else is left unchanged). `worker_dir` holds kloop_worker/. `preload_torch`: the server imports
// torch, torch.profiler and triton too (the spec's [python] device is not "cpu").
void route_through_fork_server(platform::process_request& q, const std::filesystem::path& worker_dir,
                               bool preload_torch);

// Ends every fork server this process started, and their children. Later requests start new ones.
void stop_fork_servers();

}  // namespace kloop::backend::python
