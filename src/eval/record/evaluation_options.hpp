// kloop eval: the knobs of one evaluation (gate + bench) of a candidate.
//
// Responsibility: a plain config struct filled by the CLI (or the loop) and recorded verbatim in
// the result, so every run says how it was made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/record/progress.hpp"
#include "measure/stopping_rule.hpp"
#include "platform/host_info.hpp"

namespace kloop::eval {

// Three quarters of the machine's physical memory, rounded down to MiB (0 when unknown): a
// candidate that allocates past it fails its own allocation before the out-of-memory killer picks
// a victim (kloop, or another process of the machine).
[[nodiscard]] inline std::size_t default_memory_limit_bytes() {
    return (platform::physical_memory_bytes() / 4 * 3) >> 20 << 20;
}

struct evaluation_options {
    std::vector<std::string> modes;        // empty = every mode in the spec
    std::vector<std::string> bench_shapes; // empty = every bench shape; else only these (the gate is unchanged)
    std::string gate_k;                    // --gate-k expression; non-empty marks the run partial
    std::optional<std::uint64_t> seed;     // replay the drawn trial seed instead of drawing one
    int trials = 3;                        // >= 3: two fixed seeds + drawn ones
    int held_out = 2;                      // held-out shapes drawn per mode when the spec declares a domain; 0: none
    double timeout_s = 120.0;              // per runner process (gate, then bench)
    double compile_timeout_s = 600.0;      // per compiler run (c++, nvcc) or Python import probe
    // What each of a runner's stdout and stderr logs keeps (the candidate's prints); the rest is
    // read and dropped.
    std::size_t max_output_bytes = std::size_t{16} << 20;
    // A CPU runner's data memory per process (RLIMIT_DATA; runner_session.hpp); 0: no limit.
    // Default: three quarters of the machine's physical memory.
    std::size_t max_memory_bytes = default_memory_limit_bytes();
    bool bench = true;
    measure::stopping_config stop;         // per bench shape
    int input_sets = 0;                    // 0 = enough to cover 2 x LLC (see plan_rotation)
    int check_every = 8;
    int tail_checks = 4;                    // runner/job.hpp: the draw of checked calls
    std::uint64_t evict_bytes = 0;         // 0 = 2 x last-level cache
    // Who shows the work's progress while it runs (eval/record/progress.hpp); null: nobody.
    // Not owned; never part of a record.
    progress_sink* progress = nullptr;
};

}  // namespace kloop::eval
