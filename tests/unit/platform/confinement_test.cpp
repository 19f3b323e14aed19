// Unit under test: platform/confinement — each layer, applied in a forked child, stops what it
// must stop (a process, a signal to another process, a write outside the scratch directory, a
// read outside the readable trees, an executable mapping) and leaves what a candidate needs.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "platform/confinement.hpp"

namespace fs = std::filesystem;

namespace {

struct child_end {
    bool exited = false;
    int code = -1;
    int signal = 0;
};

// Forks, confines the child with `policy`, runs `body` there and exits with its return value.
child_end run_confined(const kloop::platform::confinement_policy& policy, const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const auto r = kloop::platform::confine_self(policy);
        if (!r.seccomp) ::_exit(90);
        ::_exit(body());
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    child_end e;
    e.exited = WIFEXITED(st);
    if (e.exited) e.code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) e.signal = WTERMSIG(st);
    return e;
}

class ConfinementTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto support = kloop::platform::probe_confinement();
        if (!support.seccomp) GTEST_SKIP() << "no seccomp here: " << support.detail;
        m_landlock = support.landlock_abi > 0;
        m_dir = fs::temp_directory_path() / ("kloop-confine-" + std::to_string(::getpid()));
        fs::create_directories(m_dir / "scratch");
        fs::create_directories(m_dir / "secret");
        std::ofstream(m_dir / "secret" / "job.json") << "{\"seed\": 42}";
        m_policy.read_dirs = kloop::platform::default_read_dirs();
        m_policy.write_dirs = {m_dir / "scratch"};
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    fs::path m_dir;
    bool m_landlock = false;
    kloop::platform::confinement_policy m_policy;
};

}  // namespace

TEST_F(ConfinementTest, OrdinaryWorkAndThreadsStillRun) {
    const auto e = run_confined(m_policy, [&] {
        int v = 0;
        std::thread t([&] { v = 7; });  // clone with CLONE_THREAD (clone3 answers ENOSYS first)
        t.join();
        std::ofstream((m_dir / "scratch" / "note.txt").string()) << "ok";
        return v == 7 && fs::exists(m_dir / "scratch" / "note.txt") ? 0 : 1;
    });
    EXPECT_TRUE(e.exited) << "signal " << e.signal;
    EXPECT_EQ(e.code, 0);
}

TEST_F(ConfinementTest, ForkIsKilled) {
    const auto e = run_confined(m_policy, [] { return static_cast<int>(::syscall(SYS_fork)) >= 0 ? 0 : 1; });
    EXPECT_EQ(e.signal, SIGSYS);
}

TEST_F(ConfinementTest, CloneOfAProcessIsKilled) {
    // A raw clone without CLONE_THREAD is a new process, whatever glibc wrapper would say.
    const auto e = run_confined(m_policy, [] { return static_cast<int>(::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)) >= 0 ? 0 : 1; });
    EXPECT_EQ(e.signal, SIGSYS);
}

TEST_F(ConfinementTest, SignalToTheParentIsKilled) {
    const auto e = run_confined(m_policy, [] { return ::kill(::getppid(), SIGKILL) == 0 ? 0 : 1; });
    EXPECT_EQ(e.signal, SIGSYS);
    const auto all = run_confined(m_policy, [] { return ::kill(-1, SIGTERM) == 0 ? 0 : 1; });
    EXPECT_EQ(all.signal, SIGSYS);
}

TEST_F(ConfinementTest, SignalToItselfIsAllowed) {
    const auto e = run_confined(m_policy, [] {
        ::signal(SIGUSR1, SIG_IGN);
        return ::kill(::getpid(), SIGUSR1) == 0 && ::raise(SIGUSR1) == 0 ? 0 : 1;
    });
    EXPECT_TRUE(e.exited);
    EXPECT_EQ(e.code, 0);
}

TEST_F(ConfinementTest, ExecAndPtraceAreKilled) {
    EXPECT_EQ(run_confined(m_policy, [] {
                  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
                  ::execv("/bin/true", argv);
                  return 1;
              }).signal,
              SIGSYS);
    EXPECT_EQ(run_confined(m_policy, [] { return static_cast<int>(::syscall(SYS_ptrace, 0, 0, 0, 0)); }).signal, SIGSYS);
}

TEST_F(ConfinementTest, MakingMemoryExecutableIsKilled) {
    const auto e = run_confined(m_policy, [] {
        void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return ::mprotect(p, 4096, PROT_READ | PROT_EXEC);
    });
    EXPECT_EQ(e.signal, SIGSYS);
    const auto wx = run_confined(m_policy, [] {
        return ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED;
    });
    EXPECT_EQ(wx.signal, SIGSYS);
}

TEST_F(ConfinementTest, NewSocketsAreRefused) {
    const auto e = run_confined(m_policy, [] {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        return fd < 0 && errno == EACCES ? 0 : 1;
    });
    EXPECT_TRUE(e.exited);
    EXPECT_EQ(e.code, 0);
}

TEST_F(ConfinementTest, FilesOutsideTheScratchDirectoryCannotBeWrittenOrRead) {
    if (!m_landlock) GTEST_SKIP() << "no Landlock on this kernel";
    const auto e = run_confined(m_policy, [&] {
        // Writing next to the job, reading the job, writing /proc/self/mem: all refused.
        const int w = ::open((m_dir / "secret" / "forged.jsonl").c_str(), O_WRONLY | O_CREAT, 0644);
        if (w >= 0 || errno != EACCES) return 1;
        const int r = ::open((m_dir / "secret" / "job.json").c_str(), O_RDONLY);
        if (r >= 0 || errno != EACCES) return 2;
        const int mem = ::open("/proc/self/mem", O_RDWR);
        if (mem >= 0) return 3;
        const int lib = ::open("/usr/lib/os-release", O_RDONLY);  // a system tree stays readable
        if (lib < 0 && fs::exists("/usr/lib/os-release")) return 4;
        return 0;
    });
    EXPECT_TRUE(e.exited) << "signal " << e.signal;
    EXPECT_EQ(e.code, 0);
    EXPECT_FALSE(fs::exists(m_dir / "secret" / "forged.jsonl"));
}
