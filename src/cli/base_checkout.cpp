// kloop cli: --base FILE|REF, with a temporary git worktree for a ref.
#include "cli/base_checkout.hpp"

#include <system_error>

#include "core/error.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

namespace {

platform::process_result git(platform::command_runner_base& runner, const fs::path& dir, std::vector<std::string> args) {
    platform::process_request r;
    r.argv = {"git", "-C", dir.string()};
    r.argv.insert(r.argv.end(), args.begin(), args.end());
    r.env_overrides = {{"LC_ALL", "C"}};
    r.timeout_s = 120;
    return runner.run(r);
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string first_line(const std::string& s) {
    const auto t = trim(s);
    const auto nl = t.find('\n');
    return nl == std::string::npos ? t : t.substr(0, nl);
}

}  // namespace

base_checkout::worktree_guard::~worktree_guard() {
    // Runs during unwinding too, so never throws. After Ctrl-C the runner refuses to start
    // commands while the interrupt flag is set; the error that carries the interruption is
    // already on its way up, so clear the flag and clean up.
    try {
        if (platform::interrupt_requested()) platform::clear_interrupt_request();
        (void)git(runner, toplevel, {"worktree", "remove", "--force", dir.string()});
        std::error_code ec;
        fs::remove_all(dir, ec);
        (void)git(runner, toplevel, {"worktree", "prune"});
    } catch (...) {
    }
}

base_checkout::base_checkout(const std::string& base_arg, const fs::path& candidate, platform::command_runner_base& runner) {
    if (base_arg.empty()) throw usage_error("option --base '': give a file or a git ref");
    std::error_code ec;
    if (fs::exists(base_arg, ec)) {
        if (!fs::is_regular_file(base_arg, ec))
            throw usage_error("option --base '" + base_arg + "': exists and is not a regular file");
        m_path = fs::absolute(base_arg);
        m_label = base_arg;
        return;
    }

    // A git ref of the candidate's repository.
    const fs::path cand = fs::weakly_canonical(fs::absolute(candidate));
    const auto top = git(runner, cand.parent_path(), {"rev-parse", "--show-toplevel"});
    if (!top.succeeded())
        throw usage_error("option --base '" + base_arg + "': no such file, and the candidate '" + candidate.string() +
                          "' is not in a git repository, so it cannot be a git ref either");
    const fs::path toplevel = fs::weakly_canonical(trim(top.stdout_text));
    const auto commit = git(runner, toplevel, {"rev-parse", "--verify", "--quiet", "--end-of-options", base_arg + "^{commit}"});
    if (!commit.succeeded())
        throw usage_error("option --base '" + base_arg + "': no such file, and no commit '" + base_arg +
                          "' in the repository '" + toplevel.string() + "' (a file path or a git ref such as HEAD, HEAD~1, "
                          "a branch, a tag or a commit)");
    const fs::path rel = cand.lexically_relative(toplevel);
    if (rel.empty() || *rel.begin() == "..")
        throw usage_error("option --base '" + base_arg + "': the candidate '" + candidate.string() +
                          "' is not inside the repository '" + toplevel.string() + "'");

    m_tmp = std::make_unique<platform::scoped_temp_dir>("kloop-base");
    const fs::path dir = m_tmp->path() / "worktree";
    const auto add = git(runner, toplevel, {"worktree", "add", "--detach", dir.string(), trim(commit.stdout_text)});
    // From here on the guard removes whatever `worktree add` left, even half of it.
    m_worktree = std::make_unique<worktree_guard>(runner, toplevel, dir);
    if (add.interrupted) throw error(exit_code::interrupted, "interrupted");
    if (!add.succeeded())
        throw usage_error("option --base '" + base_arg + "': git could not check it out into a temporary worktree (" +
                          add.describe() + "): " + first_line(add.stderr_text));
    m_path = dir / rel;
    m_label = base_arg + ":" + rel.generic_string();
    if (!fs::exists(m_path, ec))
        throw usage_error("option --base '" + base_arg + "': the candidate's file '" + rel.generic_string() +
                          "' does not exist at that commit");
}

base_checkout::~base_checkout() {
    m_worktree.reset();  // the worktree first, then its temporary directory
    m_tmp.reset();
}

}  // namespace kloop::cli
