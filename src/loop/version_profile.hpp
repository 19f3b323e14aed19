// kloop loop: the profile step of `kloop init` (v0) and `kloop iterate` (each candidate).
//
// Responsibility: decide whether a version is profiled (a CUDA op, not --no-profile, its gate
// green and its bench timed), run eval/profile_step into the iteration's folder — a targeted and
// a full capture per mode, on the bench shape with the most spec bytes, each summarised against
// the roofline with the version's own bench median — and copy the outcome into the record:
// profile status and note (the dominant kernel's bound with its numbers), the bound, the
// suspect flag with its reasons, and the named facts predictions are scored on
// (loop/record/profile_facts). ncu missing or refused: one clear line, status "unavailable",
// the loop carries on timing only.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "eval/record/evaluation.hpp"
#include "eval/record/evaluation_options.hpp"
#include "eval/profile_capture.hpp"
#include "loop/record/iteration_record.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::loop {

struct profile_options {
    bool enabled = true;                                  // --no-profile turns it off
    std::vector<eval::profile_set> sets = {eval::profile_set::targeted, eval::profile_set::full};
    double timeout_s = 600;                               // per ncu run
};

// Fills r.profile_status, profile_note, profile_bound, suspect, suspect_reasons, profile_facts; writes
// profile_summary.{json,md} and the ncu reports into `dir`. Returns a one-line note for the user
// (empty when nothing worth saying). Never throws for what ncu or the candidate do.
std::string profile_version(iteration_record& r, const spec::op_spec& spec, const std::filesystem::path& source,
                            const std::map<std::string, std::vector<std::string>>& census_kernels,
                            const std::filesystem::path& dir, const eval::evaluation_options& options,
                            const profile_options& profile, platform::command_runner_base& runner);

}  // namespace kloop::loop
