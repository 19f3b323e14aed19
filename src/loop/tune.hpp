// kloop loop: `kloop tune` — a parameter search over the candidate's tunables, ending in one
// iteration of the loop.
//
// Responsibility: the flow around the search (loop/tune_search):
//   1. open the workspace for writing (contract check, exit 5; the lock, held to the end) and
//      refuse past the iteration cap, as `kloop iterate` does;
//   2. read the candidate's tunables (loop/tunables; none is a usage error);
//   3. copy the candidate's local sources twice into a scratch directory per lane — one copy
//      holds the incumbent, the other the point under test — so every variant is a complete
//      source whose local headers are found, and every point of a lane builds at the same path
//      (a byte-identical build is a byte-identical library);
//   4. search: each point built (its library's SHA-256 is its identity) and raced against the
//      incumbent with eval::compare_candidates (both gated, timed interleaved, the verdict with
//      its bootstrap interval), each point recorded in the strategy memory's database
//      (loop/tune_memory) as soon as it is decided. With several device slots (`devices`:
//      eval/visible_devices) a batch of points races at once, one race per GPU, each point in its
//      own lane's copy of the sources, each A/B's two sides on one GPU; each point names its GPU.
//      With a Slurm engine a batch is one job array of `kloop compare` tasks (loop/tune_slurm),
//      its sources in the batch's directory under the shared one; a killed tune run again with
//      the same directory resumes (records read back, a running job waited for);
//   5. write the best configuration's source over the candidate file and submit it as one
//      iteration (loop::run_iteration, under the same lock) with a generated proposal —
//      Direction, Expected, `Prediction: speedup A-B` (the race of the best against the start)
//      or `Prediction: no change`, and the tags `parameter-tuning` plus one per changed tunable.
//      A start that stayed best is submitted too: the iteration is the loop's record that the
//      search was spent (it counts against the cap and is classified like any other);
//   6. write tune_vN.md (every point) next to iter_vN/.
// Ctrl-C during the search ends it: the points so far stay in the memory and in tune_vN.md,
// no iteration is submitted, and kloop::error (exit_code::interrupted) is thrown.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "eval/record/evaluation_options.hpp"
#include "loop/iteration.hpp"
#include "loop/record/tune_record.hpp"
#include "loop/tune_search.hpp"
#include "loop/version_profile.hpp"
#include "measure/ab_comparison.hpp"
#include "platform/slurm_array.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

// `kloop tune --slurm DIR`: a batch's races as one Slurm job array (loop/tune_slurm).
struct tune_slurm_engine {
    platform::slurm_options options;                 // state_dir: DIR, on a filesystem the nodes share
    std::size_t batch = 4;                           // points raced at once (--slurm-batch)
    std::vector<std::string> forwarded;              // the tune's options a race's `kloop compare` takes
    std::function<void(const std::string&)> on_resume;  // an earlier tune's job was found (its id)
};

struct tune_request {
    std::filesystem::path workspace;
    std::optional<std::filesystem::path> candidate;  // default: the contract's kernel file
    tune_search_options search;
    std::string devices = "1";                       // --devices: the slots a batch races on (eval/visible_devices)
    std::optional<tune_slurm_engine> slurm;          // --slurm: batches as job arrays instead
    eval::evaluation_options options;                // the stopping rule and timeouts, per race
    measure::ab_config ab;
    std::vector<std::string> command_line;
    std::filesystem::path memory_db;
    profile_options profile;                         // the end iteration's profile step
    bool allow_unconfined = false;                   // the end iteration's promotion rules
    bool require_quiet = false;
    std::function<void(const tune_point&)> on_point; // each point once decided (the CLI prints it)
};

struct tune_outcome {
    tune_result search;
    iterate_outcome iteration;
    std::filesystem::path table;                     // tune_vN.md
    std::string tune_id;                             // the key of its points in the memory
};

[[nodiscard]] tune_outcome run_tune(const tune_request& req, platform::command_runner_base& runner);

// The end iteration's optimization_proposal.md for a finished search.
[[nodiscard]] std::string tune_proposal_md(const tune_result& r);

// "tune_v3.md".
[[nodiscard]] std::string tune_table_name(int iteration);

}  // namespace kloop::loop
