// kloop loop: a batch of `kloop tune`'s races as one Slurm job array.
//
// Responsibility: the Slurm engine of tune's batches (docs/scale-out.md). Each race of a batch is
// a task `kloop compare <spec> --base <incumbent source> --candidate <point source> --json-out
// <record>` plus the tune's forwarded timing options; the sources lie in the batch's directory on
// the shared filesystem, which is also the job array's state directory (platform/slurm_array:
// scripts, submission, waiting, gathering, resuming). A tune killed while a batch ran, started
// again with the same directory, replays the same search: every finished race's record is read
// back, a job still queued or running is waited for, and only the races without a record are
// submitted. The records come back as A/B evaluations (loop::ab_from_json) with the device and
// node each task ran on; a task that wrote none says why (its output's tail).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/ab_evaluation.hpp"
#include "platform/slurm_array.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

struct slurm_race {
    std::filesystem::path base;       // the incumbent's source, on the shared filesystem
    std::filesystem::path candidate;  // the point's source, likewise
};

struct slurm_race_result {
    std::optional<eval::ab_evaluation> ab;  // the race's record; empty when the task wrote none
    std::string device;                     // "<CUDA_VISIBLE_DEVICES> on <node>"
    std::string missing;                    // why there is no record (the task's output tail)
};

struct slurm_batch_outcome {
    std::vector<slurm_race_result> races;   // in order
    std::vector<std::string> job_ids;
    bool resumed = false;                   // an earlier tune's job for this batch was found
};

// A `kloop compare` record (schema kloop.compare) as the A/B the loop's classification reads:
// loop::ab_from_json's verdicts and shapes, and each side's disposition, reason, gate (verdict,
// runner failure, cases), integrity checks and build diagnostics.
[[nodiscard]] eval::ab_evaluation race_from_record(const nlohmann::json& record);

// `options.state_dir` is the batch's directory (records go there as race-<i>.json).
[[nodiscard]] slurm_batch_outcome race_batch_on_slurm(const std::filesystem::path& spec_file,
                                                      const std::vector<slurm_race>& races,
                                                      const std::vector<std::string>& forwarded,
                                                      const platform::slurm_options& options,
                                                      platform::command_runner_base& commands);

}  // namespace kloop::loop
