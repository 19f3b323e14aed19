// kloop loop: git commits and .gitignore (see repo_git.hpp).
#include "loop/repo_git.hpp"

#include <optional>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

// What a failed git said: its "fatal:" or "error:" line (the one naming the cause), else its
// last line.
std::string git_error_line(const std::string& text) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l.rfind("fatal:", 0) == 0 || l.rfind("error:", 0) == 0) return l;
    return first_line(text);
}

// kloop's claim on the repository's index while it commits: <git dir>/kloop-commit.owner, written
// with kloop's pid and held under flock for as long as kloop's git commands run. git leaves
// index.lock behind when it is killed (kloop SIGKILLed takes its git along), and every later
// commit then fails. An index.lock no younger than the claim is kloop's own when the claim's
// holder is dead (the flock is free) or when kloop's git just died by a signal or a timeout:
// it is removed, with a note. An index.lock without a claim is someone else's and is left alone.
class index_claim {
public:
    explicit index_claim(const fs::path& git_dir) : m_owner(git_dir / "kloop-commit.owner"), m_lock(git_dir / "index.lock") {}
    index_claim(const index_claim&) = delete;
    index_claim& operator=(const index_claim&) = delete;
    ~index_claim() {
        if (m_fd >= 0) {
            std::error_code ec;
            fs::remove(m_owner, ec);
            ::close(m_fd);
        }
    }

    // Removes what a dead kloop left, then claims the index. Returns a note, or "".
    std::string take() {
        std::string note;
        const int old = ::open(m_owner.c_str(), O_RDWR | O_CLOEXEC);
        if (old >= 0) {
            if (::flock(old, LOCK_EX | LOCK_NB) == 0) {  // its holder is gone
                std::string who = first_line(read_or_empty(m_owner));
                if (remove_lock_if_ours()) note = "removed the index.lock that kloop (pid " + who + ") left when it died while committing";
                std::error_code ec;
                fs::remove(m_owner, ec);
            }
            ::close(old);
        }
        const std::string pid = std::to_string(::getpid()) + "\n";
        m_fd = ::open(m_owner.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (m_fd >= 0 && (::flock(m_fd, LOCK_EX | LOCK_NB) != 0 || ::ftruncate(m_fd, 0) != 0 ||
                          ::write(m_fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size()))) {
            ::close(m_fd);  // another kloop commits right now: git's own lock decides
            m_fd = -1;
        }
        return note;
    }

    // After a git command of ours that was killed or timed out. Returns a note, or "".
    std::string after_killed_git() {
        if (m_fd < 0 || !remove_lock_if_ours()) return "";
        return "removed the index.lock that kloop's killed git left";
    }

private:
    static std::string read_or_empty(const fs::path& p) {
        try {
            return platform::read_file(p);
        } catch (const std::exception&) {
            return "?";
        }
    }
    bool remove_lock_if_ours() {
        struct stat lock {}, owner {};
        if (::stat(m_lock.c_str(), &lock) != 0 || ::stat(m_owner.c_str(), &owner) != 0) return false;
        if (lock.st_mtim.tv_sec < owner.st_mtim.tv_sec ||
            (lock.st_mtim.tv_sec == owner.st_mtim.tv_sec && lock.st_mtim.tv_nsec < owner.st_mtim.tv_nsec))
            return false;  // older than the claim: not ours
        return ::unlink(m_lock.c_str()) == 0;
    }

    fs::path m_owner, m_lock;
    int m_fd = -1;
};
}  // namespace

namespace {

// One commit's git commands in the candidate's repository, with kloop's claim on its index.
class commit_session {
public:
    commit_session(const fs::path& candidate, platform::command_runner_base& runner) : m_runner(runner) {
        const auto dir = fs::absolute(candidate).parent_path();
        const auto state = platform::git_state_of(dir, runner);
        if (!state.available) return;
        m_toplevel = state.toplevel;
        m_rel = fs::absolute(candidate).lexically_normal().lexically_relative(state.toplevel).string();
        if (auto git_dir = git({"rev-parse", "--absolute-git-dir"}); git_dir.succeeded()) {
            m_git_dir = first_line(git_dir.stdout_text);
            m_claim.emplace(m_git_dir);
            m_recovered = m_claim->take();
        }
    }

    [[nodiscard]] bool in_repo() const { return !m_toplevel.empty(); }
    [[nodiscard]] const std::string& rel() const { return m_rel; }
    // `path` relative to the repository's top level.
    [[nodiscard]] std::string rel_of(const fs::path& path) const {
        return fs::absolute(path).lexically_normal().lexically_relative(m_toplevel).string();
    }
    [[nodiscard]] const std::string& git_dir() const { return m_git_dir; }

    platform::process_result git(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
        platform::process_request r;
        r.argv = {"git", "-C", m_toplevel};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        r.env_overrides = {{"LC_ALL", "C"}};
        for (auto& e : env) r.env_overrides.push_back(std::move(e));
        r.timeout_s = 60;
        return m_runner.run(r);
    }

    // A failed step: the record says which and why (and what was repaired on the way).
    git_record failed(const std::string& step, const platform::process_result& r) {
        if (m_claim && (r.term_signal != 0 || r.timed_out)) {
            const auto note = m_claim->after_killed_git();
            if (!note.empty()) m_recovered += (m_recovered.empty() ? "" : "; ") + note;
        }
        git_record g;
        g.in_repo = true;
        g.note = step + " failed (" + r.describe() + "): " + git_error_line(r.stderr_text + r.stdout_text);
        g.repair = m_recovered;
        return g;
    }

    git_record committed(const std::string& message) {
        git_record g;
        g.in_repo = true;
        g.committed = true;
        g.commit = first_line(git({"rev-parse", "HEAD"}).stdout_text);
        g.note = message;
        g.repair = m_recovered;
        return g;
    }

private:
    platform::command_runner_base& m_runner;
    std::string m_toplevel, m_rel, m_git_dir, m_recovered;
    std::optional<index_claim> m_claim;
};

git_record not_in_repo() {
    git_record g;
    g.note = "the candidate is not in a git repository with a commit; nothing committed";
    return g;
}

}  // namespace

git_record commit_candidate(const fs::path& candidate, const std::string& message, platform::command_runner_base& runner,
                            const std::vector<fs::path>& local_files) {
    commit_session s(candidate, runner);
    if (!s.in_repo()) return not_in_repo();
    std::vector<std::string> paths = {s.rel()};
    for (const auto& f : local_files) paths.push_back(s.rel_of(f));
    std::vector<std::string> add = {"add", "--"};
    add.insert(add.end(), paths.begin(), paths.end());
    if (auto r = s.git(add); !r.succeeded()) return s.failed("git add", r);
    std::vector<std::string> commit = {"commit", "--allow-empty", "-q", "-m", message, "--"};
    commit.insert(commit.end(), paths.begin(), paths.end());
    if (auto r = s.git(commit); !r.succeeded()) return s.failed("git commit", r);
    return s.committed(message);
}

git_record commit_snapshot(const fs::path& candidate, const fs::path& snapshot, const std::string& message,
                           platform::command_runner_base& runner, const std::vector<std::string>& local_files) {
    commit_session s(candidate, runner);
    if (!s.in_repo()) return not_in_repo();
    // One index entry per file: the snapshot's bytes at the repository path of its original.
    std::vector<std::string> entries;
    const auto add_entry = [&](const fs::path& original, const fs::path& copy) -> std::optional<git_record> {
        auto blob = s.git({"hash-object", "-w", "--", fs::absolute(copy).string()});
        if (!blob.succeeded()) return s.failed("git hash-object", blob);
        std::error_code perm_ec;
        const auto perms = fs::status(original, perm_ec).permissions();
        const bool exec = !perm_ec && perms != fs::perms::unknown && (perms & fs::perms::owner_exec) != fs::perms::none;
        entries.push_back(std::string(exec ? "100755" : "100644") + "," + first_line(blob.stdout_text) + "," +
                          s.rel_of(original));
        return std::nullopt;
    };
    if (auto failed = add_entry(candidate, snapshot)) return *failed;
    for (const auto& f : local_files)
        if (auto failed = add_entry(candidate.parent_path() / f, snapshot.parent_path() / f)) return *failed;
    auto head = s.git({"rev-parse", "--verify", "HEAD"});
    if (!head.succeeded()) return s.failed("git rev-parse HEAD", head);
    const std::string old_head = first_line(head.stdout_text);
    // A private index built from HEAD: what the user staged stays out of this commit.
    const std::string index = s.git_dir() + "/kloop-snapshot-index";
    const std::vector<std::pair<std::string, std::string>> private_index = {{"GIT_INDEX_FILE", index}};
    std::error_code ec;
    fs::remove(index, ec);
    const auto done = [&](git_record g) {
        fs::remove(index, ec);
        return g;
    };
    if (auto r = s.git({"read-tree", old_head}, private_index); !r.succeeded()) return done(s.failed("git read-tree", r));
    for (const auto& entry : entries)
        if (auto r = s.git({"update-index", "--add", "--cacheinfo", entry}, private_index); !r.succeeded())
            return done(s.failed("git update-index", r));
    auto tree = s.git({"write-tree"}, private_index);
    if (!tree.succeeded()) return done(s.failed("git write-tree", tree));
    auto commit = s.git({"commit-tree", first_line(tree.stdout_text), "-p", old_head, "-m", message});
    if (!commit.succeeded()) return done(s.failed("git commit-tree", commit));
    if (auto r = s.git({"update-ref", "-m", "kloop: " + message, "HEAD", first_line(commit.stdout_text), old_head}); !r.succeeded())
        return done(s.failed("git update-ref", r));
    // The user's index follows HEAD for these files; the working tree is not touched.
    for (const auto& entry : entries)
        if (auto r = s.git({"update-index", "--add", "--cacheinfo", entry}); !r.succeeded())
            return done(s.failed("git update-index", r));
    return done(s.committed(message));
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
