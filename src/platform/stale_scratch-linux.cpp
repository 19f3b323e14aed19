// kloop platform: claims on scratch directories and the sweep of dead ones (see stale_scratch.hpp).
#include "platform/stale_scratch.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <unistd.h>
#include <vector>

#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {

namespace fs = std::filesystem;
using detail::unique_fd;

namespace {

constexpr const char* owner_suffix = ".owner";

fs::path owner_file(const fs::path& dir) { return fs::path(dir.string() + owner_suffix); }

fs::path default_temp_root() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    return ec ? fs::path("/tmp") : base;
}

// The kloop-runner processes (checkers, candidate hosts) whose working directory lies in `dir`.
std::vector<pid_t> runners_working_in(const fs::path& dir) {
    std::vector<pid_t> found;
    const std::string prefix = dir.string();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::error_code ec2;
        const fs::path cwd = fs::read_symlink(e.path() / "cwd", ec2);
        if (ec2) continue;  // another user's, or gone
        const std::string c = cwd.string();
        if (c != prefix && c.rfind(prefix + "/", 0) != 0) continue;
        const fs::path exe = fs::read_symlink(e.path() / "exe", ec2);
        if (ec2 || exe.filename().string().rfind("kloop-runner", 0) != 0) continue;
        found.push_back(static_cast<pid_t>(std::atol(name.c_str())));
    }
    return found;
}

}  // namespace

int claim_scratch_dir(const fs::path& dir) {
    // Locked under a private name first, then renamed: a sweep only looks at "*.owner".
    const fs::path pending = fs::path(dir.string() + ".claiming");
    unique_fd fd(::open(pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.is_open()) return -1;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 || ::rename(pending.c_str(), owner_file(dir).c_str()) != 0) {
        ::unlink(pending.c_str());
        return -1;
    }
    return fd.release();
}

void release_scratch_claim(const fs::path& dir, int fd) {
    if (fd < 0) return;
    ::unlink(owner_file(dir).c_str());
    ::close(fd);
}

sweep_result sweep_stale_scratch_dirs(const fs::path& temp_root) {
    sweep_result res;
    const fs::path root = temp_root.empty() ? default_temp_root() : temp_root;
    std::vector<fs::path> owners;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("kloop", 0) == 0 && name.size() > 6 && name.ends_with(owner_suffix)) owners.push_back(e.path());
    }
    for (const auto& owner : owners) {
        unique_fd fd(::open(owner.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!fd.is_open() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its kloop lives
        const std::string o = owner.string();
        const fs::path dir = o.substr(0, o.size() - std::string(owner_suffix).size());
        std::error_code ec2;
        if (fs::is_directory(fs::symlink_status(dir, ec2))) {
            for (pid_t pid : runners_working_in(dir))
                if (::kill(pid, SIGKILL) == 0) ++res.processes_killed;
            if (fs::remove_all(dir, ec2) > 0) ++res.directories_removed;
        }
        ::unlink(owner.c_str());
    }
    return res;
}

}  // namespace kloop::platform
