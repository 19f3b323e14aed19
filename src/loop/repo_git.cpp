// kloop loop: git commits and .gitignore (see repo_git.hpp).
#include "loop/repo_git.hpp"

#include <sstream>

#include "platform/file_io.hpp"
#include "platform/host_info.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;

namespace {
std::string first_line(const std::string& s) {
    auto t = s;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    const auto nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}
}  // namespace

git_record commit_candidate(const fs::path& candidate, const std::string& message, platform::command_runner_base& runner) {
    git_record g;
    const auto dir = fs::absolute(candidate).parent_path();
    const auto state = platform::git_state_of(dir, runner);
    if (!state.available) {
        g.note = "the candidate is not in a git repository with a commit; nothing committed";
        return g;
    }
    g.in_repo = true;
    auto git = [&](std::vector<std::string> args) {
        platform::process_request r;
        r.argv = {"git", "-C", state.toplevel};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        r.env_overrides = {{"LC_ALL", "C"}};
        r.timeout_s = 60;
        return runner.run(r);
    };
    const auto rel = fs::absolute(candidate).lexically_normal().lexically_relative(state.toplevel).string();
    if (auto add = git({"add", "--", rel}); !add.succeeded()) {
        g.note = "git add failed (" + add.describe() + "): " + first_line(add.stderr_text);
        return g;
    }
    if (auto commit = git({"commit", "--allow-empty", "-q", "-m", message, "--", rel}); !commit.succeeded()) {
        g.note = "git commit failed (" + commit.describe() + "): " + first_line(commit.stderr_text + commit.stdout_text);
        return g;
    }
    auto head = git({"rev-parse", "HEAD"});
    g.committed = true;
    g.commit = first_line(head.stdout_text);
    g.note = message;
    return g;
}

std::string ignore_workspace(const fs::path& workspace, const fs::path& toplevel) {
    const auto rel = fs::absolute(workspace).lexically_normal().lexically_relative(fs::absolute(toplevel).lexically_normal());
    if (rel.empty() || rel.string().rfind("..", 0) == 0) return "the workspace is outside the repository; .gitignore unchanged";
    const std::string line = "/" + rel.generic_string() + "/";
    const fs::path gi = toplevel / ".gitignore";
    std::string text = fs::exists(gi) ? platform::read_file(gi) : std::string();
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l == line || l == line.substr(1) || l == line.substr(0, line.size() - 1) || l == "/profile/" || l == "profile/")
            return ".gitignore already ignores the workspace";
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "# kloop optimisation workspace (local evidence, not part of a PR)\n" + line + "\n";
    platform::write_file_atomic(gi, text);
    return "added '" + line + "' to " + gi.string();
}

}  // namespace kloop::loop
