// kloop loop: the loop's git operations in the user's repository.
//
// Responsibility: commit the candidate file (and only it) after each iteration with a message
// naming the iteration and its status, and keep the workspace out of git (.gitignore). Every
// git call goes through platform::command_runner_base with an argv vector (no shell). Outside a
// repository, or when git fails (no user.name, a hook refuses), the outcome is recorded and the
// loop carries on: a missing commit is data, not an error.
#pragma once

#include <filesystem>
#include <vector>
#include <string>

#include "loop/record/iteration_record.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

// `git add -- FILE…` then `git commit --allow-empty -m MSG -- FILE…` for the candidate and its
// local files (absolute paths; eval::candidate_sources): the pathspec limits the commit to them
// whatever else is staged; --allow-empty keeps an unchanged iteration's commit, as the protocol
// asks.
[[nodiscard]] git_record commit_candidate(const std::filesystem::path& candidate, const std::string& message,
                                          platform::command_runner_base& runner,
                                          const std::vector<std::filesystem::path>& local_files = {});

// Commits the content of `snapshot` as `candidate`, and of each local file (relative to the
// candidate's directory, its copy at the same relative path beside `snapshot`) as that file (a
// child commit of HEAD with those files changed, built in a private index) without touching the
// working tree or what the user staged; their index entries follow. For an iteration a later
// command records (its kloop died while evaluating it), when the files may already hold the next
// candidate.
[[nodiscard]] git_record commit_snapshot(const std::filesystem::path& candidate, const std::filesystem::path& snapshot,
                                         const std::string& message, platform::command_runner_base& runner,
                                         const std::vector<std::string>& local_files = {});

// Adds "/<workspace relative to the toplevel>/" to <toplevel>/.gitignore when the workspace is
// inside the repository and no line already says so. Returns a note for the output.
[[nodiscard]] std::string ignore_workspace(const std::filesystem::path& workspace, const std::filesystem::path& toplevel);

}  // namespace kloop::loop
