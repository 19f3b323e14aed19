// kloop runner: the candidate host — the only process that runs candidate code.
//
// Responsibility: the far end of runner/remote_executor. The checker (kloop-runner, which holds
// the job, the reference, every comparison and the results channel) starts one host per library
// it must time — the candidate, and in an A/B the base — as `kloop-runner --serve-candidate`,
// connected by one socket (runner/host_link.hpp) and nothing else: no job file, no events file,
// no seed. The host then, in this order:
//   1. makes its executor (the device context: CUDA opens /dev/nvidia* here);
//   2. is confined (platform/confinement.hpp) with the policy the checker sends: after this it
//      cannot start processes, signal or trace anything but itself, write outside its scratch
//      directory, or read kloop's files;
//   3. answers the timer calibration: kloop's own empty entry point timed as a candidate would
//      be, so the checker learns what its window around a timed call adds (before any candidate
//      code has run);
//   4. loads the library from a sealed memfd whose hash the checker verified (never a path in
//      the build cache);
//   5. serves requests until the checker closes the link: map or allocate a shared buffer, copy
//      it to or from the device, fill it, describe an argument set ({buffer, offset} per tensor:
//      the two processes map the buffers at different addresses), invoke, time, flush, extra
//      timing, profiler range. After every reply (the first is its hello) it stops itself with
//      SIGSTOP, every thread of it, until the checker's SIGCONT that precedes the next request.
// Everything it says is a claim: the checker verifies outputs, red zones and inputs in buffers it
// shares, and holds every sample against its own clock (docs/security.md).
#pragma once

#include "runner/runner_main.hpp"

namespace kloop::runner {

// argv: kloop-runner --serve-candidate --link-fd N --device cpu|cuda [--census]. Returns the
// process's exit status (0 when the checker closed the link).
int serve_candidate(int argc, char** argv, const executor_factory& make_executor);

// True when argv asks for the candidate host (runner_main dispatches on it).
[[nodiscard]] bool is_candidate_host_command(int argc, char** argv);

}  // namespace kloop::runner
