// kloop loop: `kloop init` — freeze the contract, measure the baseline, write the workspace.
//
// Responsibility: phase 1 of the loop. Loads the spec and takes the workspace lock before it
// writes anything (a second init on the same path is refused with the holder's pid; leftovers of
// an init that died are removed). Evaluates the kernel file as it is now (v0) with a plain
// build → gate → bench; a baseline that is not green stops here (nothing written: the loop
// starts from a correct kernel). Then assembles the whole workspace in a staging directory
// inside it — contract.json, docs/draft.md, OPT_LOG.md, TRAPS.md, dispatch.md, iter_v0/ — and
// moves it into place with contract.json last (the workspace exists once contract.json does),
// adds the workspace to the repository's .gitignore, records v0 in the strategy memory and
// writes run_manifest.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/record/evaluation.hpp"
#include "eval/record/evaluation_options.hpp"
#include "loop/version_profile.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

struct init_request {
    std::filesystem::path op_dir;
    std::filesystem::path candidate;
    int max_iterations = 0;
    std::optional<double> target_speedup;
    std::optional<std::filesystem::path> workspace;
    eval::evaluation_options options;
    std::vector<std::string> command_line;
    std::filesystem::path memory_db;
    profile_options profile;                 // the profile step of v0 (loop/version_profile.hpp)
};

struct init_outcome {
    bool created = false;                    // false: the baseline was not green
    std::filesystem::path workspace;
    eval::evaluation baseline;
    std::vector<std::string> notes;
};

[[nodiscard]] init_outcome initialise(const init_request& req, platform::command_runner_base& runner);

}  // namespace kloop::loop
