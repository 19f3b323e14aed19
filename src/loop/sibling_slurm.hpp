// kloop loop: a `kloop run --parallel` round's evaluations as one Slurm job array.
//
// Responsibility: the Slurm engine of a round (docs/scale-out.md). Each staged sibling becomes a
// task directory on the shared filesystem, DIR/round-R/attempt-NNN/:
//   task.json      the contract (with its hash), the numbered record with its registered
//                  predictions, the file it is labelled by, the best version's file name
//   candidate/     the staged sources and the proposal (the staging directory's copy)
//   best/          the sources of the best version it races against
//   state/         a black-box op's stable repository copies
//   evaluated.json written by the task last: the record with its verdict, the evaluation and the
//                  A/B reports, the notes
// and the task is `kloop evaluate-sibling <dir>` plus the run's forwarded timing, verdict and
// profile options: on its node it runs loop::evaluate_staged itself — the same gate, A/B,
// classification, confinement and quiet checks and profile step as a local round — so a record
// made there means what one made on the host means. The array's scripts and state live in
// DIR/round-R/array-<attempts>/ (platform/slurm_array: submission, waiting, resuming).
//
// Back on the host each sibling takes the task's record (its number, sources and best checked
// against the staged ones: a directory holding another run's task is refused), names its device
// "<CUDA_VISIBLE_DEVICES> on <node>", and gains what the node wrote beside its sources (the
// profile summaries and reports). A task that wrote no record stops the run (exit 3) naming the
// attempt, its device and its output; the same command resumes: a kloop killed while it waited
// submits the same siblings again, finds their task directories, waits for the job still
// running and submits only the tasks without a record.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "loop/iteration.hpp"
#include "loop/loop_session.hpp"
#include "platform/slurm_array.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

struct sibling_slurm_engine {
    platform::slurm_options options;                  // state_dir: DIR, shared with the nodes
    std::vector<std::string> forwarded;               // the run's options `kloop evaluate-sibling` takes
    std::function<void(const std::string&)> on_resume;  // an earlier run's job is waited for
};

// Evaluates `staged` (one round's siblings, `attempts` their attempt numbers) as the tasks of one
// job array, filling each staged iteration as evaluate_staged would. Throws kloop::error
// (gate_red) for a task without a record, usage_error for a task directory of another run or a
// sbatch that refuses, kloop::error (interrupted) on Ctrl-C while the job runs.
void evaluate_siblings_on_slurm(std::vector<staged_iteration>& staged, const std::vector<int>& attempts, int round,
                                const loop_session& session,
                                const sibling_slurm_engine& engine, platform::command_runner_base& commands);

// The task, on its node: reads `task_dir`/task.json, evaluates the candidate against the best
// with `req`'s options, and writes evaluated.json. Throws what evaluate_staged throws; a
// malformed task.json is a usage_error naming it.
void evaluate_sibling_task(const std::filesystem::path& task_dir, const iterate_request& req,
                           platform::command_runner_base& runner);

}  // namespace kloop::loop
