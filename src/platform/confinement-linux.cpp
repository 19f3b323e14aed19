// kloop platform: seccomp-bpf and Landlock confinement of the candidate host (Linux, x86-64).
#include "platform/confinement.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <system_error>

namespace kloop::platform {

namespace {

// Landlock's user-space ABI (include/uapi/linux/landlock.h of Linux 6.12). Debian 12's kernel
// headers stop at ABI 2, so the later access rights and the scope field are spelled out here;
// the kernel takes the struct's size as given and reports the ABI it speaks.
struct landlock_ruleset_attr_v6 {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};
struct landlock_path_beneath_attr_packed {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
} __attribute__((packed));

constexpr std::uint64_t ll_execute = 1ULL << 0;
constexpr std::uint64_t ll_write_file = 1ULL << 1;
constexpr std::uint64_t ll_read_file = 1ULL << 2;
constexpr std::uint64_t ll_read_dir = 1ULL << 3;
constexpr std::uint64_t ll_remove_dir = 1ULL << 4;
constexpr std::uint64_t ll_remove_file = 1ULL << 5;
constexpr std::uint64_t ll_make_char = 1ULL << 6;
constexpr std::uint64_t ll_make_dir = 1ULL << 7;
constexpr std::uint64_t ll_make_reg = 1ULL << 8;
constexpr std::uint64_t ll_make_sock = 1ULL << 9;
constexpr std::uint64_t ll_make_fifo = 1ULL << 10;
constexpr std::uint64_t ll_make_block = 1ULL << 11;
constexpr std::uint64_t ll_make_sym = 1ULL << 12;
constexpr std::uint64_t ll_refer = 1ULL << 13;       // ABI 2
constexpr std::uint64_t ll_truncate = 1ULL << 14;    // ABI 3
constexpr std::uint64_t ll_ioctl_dev = 1ULL << 15;   // ABI 5
constexpr std::uint64_t ll_scope_abstract_unix = 1ULL << 0;  // ABI 6
constexpr std::uint64_t ll_scope_signal = 1ULL << 1;         // ABI 6
constexpr unsigned ll_create_ruleset_version = 1U << 0;
constexpr int ll_rule_path_beneath = 1;

long landlock_abi() {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, ll_create_ruleset_version);
    return abi < 0 ? 0 : abi;
}

std::uint64_t fs_rights_for(long abi) {
    std::uint64_t r = ll_execute | ll_write_file | ll_read_file | ll_read_dir | ll_remove_dir | ll_remove_file |
                      ll_make_char | ll_make_dir | ll_make_reg | ll_make_sock | ll_make_fifo | ll_make_block |
                      ll_make_sym;
    if (abi >= 2) r |= ll_refer;
    if (abi >= 3) r |= ll_truncate;
    if (abi >= 5) r |= ll_ioctl_dev;
    return r;
}

// Adds one path-beneath rule; a path that does not exist is skipped (returns true).
bool add_rule(int ruleset, const std::filesystem::path& p, std::uint64_t rights, std::string& detail) {
    const int fd = ::open(p.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return true;
    landlock_path_beneath_attr_packed attr{rights, fd};
    // A regular file takes only file rights.
    struct stat st {};
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        attr.allowed_access &= ll_execute | ll_write_file | ll_read_file | ll_truncate | ll_ioctl_dev;
    const long rc = ::syscall(SYS_landlock_add_rule, ruleset, ll_rule_path_beneath, &attr, 0);
    const int err = errno;
    ::close(fd);
    if (rc != 0) {
        detail += "landlock rule for '" + p.string() + "' failed: " + std::strerror(err) + "; ";
        return false;
    }
    return true;
}

int apply_landlock(const confinement_policy& policy, std::string& detail) {
    const long abi = landlock_abi();
    if (abi <= 0) {
        detail += "Landlock: not offered by this kernel; ";
        return 0;
    }
    const std::uint64_t all = fs_rights_for(abi);
    landlock_ruleset_attr_v6 attr{};
    attr.handled_access_fs = all;
    std::size_t attr_size = sizeof(std::uint64_t);  // ABI 1-3: handled_access_fs only
    if (abi >= 4) attr_size = 2 * sizeof(std::uint64_t);
    if (abi >= 6) {
        attr.scoped = ll_scope_abstract_unix | ll_scope_signal;
        attr_size = sizeof(attr);
    }
    const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
    if (ruleset < 0) {
        detail += std::string("Landlock: create_ruleset failed: ") + std::strerror(errno) + "; ";
        return 0;
    }
    const std::uint64_t read = ll_execute | ll_read_file | ll_read_dir;
    const std::uint64_t device = read | ll_write_file | (abi >= 5 ? ll_ioctl_dev : 0);
    bool ok = true;
    for (const auto& d : policy.read_dirs) ok = add_rule(ruleset, d, read, detail) && ok;
    for (const auto& d : policy.device_paths) ok = add_rule(ruleset, d, device, detail) && ok;
    for (const auto& d : policy.write_dirs) ok = add_rule(ruleset, d, all, detail) && ok;
    // /dev/null is written by libraries that redirect output.
    ok = add_rule(ruleset, "/dev/null", read | ll_write_file, detail) && ok;
    if (!ok || ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        if (ok) detail += std::string("Landlock: restrict_self failed: ") + std::strerror(errno) + "; ";
        ::close(ruleset);
        return 0;
    }
    ::close(ruleset);
    return static_cast<int>(abi);
}

// ---- seccomp-bpf ----------------------------------------------------------------------------

struct bpf_program_builder {
    std::vector<sock_filter> code;

    void stmt(std::uint16_t c, std::uint32_t k) { code.push_back(BPF_STMT(c, k)); }
    void jump(std::uint16_t c, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
        code.push_back(BPF_JUMP(c, k, jt, jf));
    }
    void load_nr() { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
    void load_arg_lo(int i) { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + 8 * i); }
    void ret(std::uint32_t v) { stmt(BPF_RET | BPF_K, v); }
};

constexpr std::uint32_t kill_process = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t allow = SECCOMP_RET_ALLOW;
std::uint32_t fail_with(int err) { return SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(err) & SECCOMP_RET_DATA); }

// Each rule is a self-contained block that starts with the syscall number in the accumulator
// and either returns or falls through to the next block with the number reloaded.
void deny(bpf_program_builder& b, long nr, std::uint32_t action) {
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 1);
    b.ret(action);
}

// nr: allowed only when (arg & mask) != 0 (e.g. clone with CLONE_THREAD); else action.
void require_bits(bpf_program_builder& b, long nr, int arg, std::uint32_t mask, std::uint32_t action) {
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 4);
    b.load_arg_lo(arg);
    b.jump(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0);
    b.ret(action);
    b.ret(allow);
}

// nr: action when (arg & mask) == mask (all bits of mask set); else allowed.
void forbid_bits(bpf_program_builder& b, long nr, int arg, std::uint32_t mask, std::uint32_t action) {
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 5);
    b.load_arg_lo(arg);
    b.stmt(BPF_ALU | BPF_AND | BPF_K, mask);
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, mask, 0, 1);
    b.ret(action);
    b.ret(allow);
}

// nr: allowed only when arg (a pid, an int: only its low 32 bits are meaningful) is `self` or
// 0 (the caller's own process group, which a process that cannot fork leads alone); else action.
// -1 (every process) and negative groups differ from both.
void only_self(bpf_program_builder& b, long nr, int arg, std::uint32_t self, std::uint32_t action) {
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 5);  // not nr: next block
    b.load_arg_lo(arg);
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0);  // itself: allow
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);     // 0, its own group: allow; else action
    b.ret(allow);
    b.ret(action);
}

bool apply_seccomp(bool allow_sockets, std::string& detail) {
#if defined(__x86_64__)
    bpf_program_builder b;
    b.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
    b.jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    b.ret(kill_process);
    b.load_nr();
    // x32 system calls (bit 30) would bypass the numbers below.
    b.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1);
    b.ret(kill_process);
    const auto self = static_cast<std::uint32_t>(::getpid());
    const long denied[] = {SYS_fork, SYS_vfork, SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv,
                           SYS_process_vm_writev, SYS_pidfd_getfd, SYS_pidfd_send_signal, SYS_kcmp, SYS_setns,
                           SYS_unshare, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_bpf,
                           SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_userfaultfd,
                           SYS_keyctl, SYS_add_key, SYS_request_key, SYS_kexec_load, SYS_init_module,
                           SYS_finit_module, SYS_delete_module, SYS_open_by_handle_at, SYS_fanotify_init};
    for (long nr : denied) {
        deny(b, nr, kill_process);
        b.load_nr();
    }
    // clone3 takes its flags in memory a filter cannot read: answer ENOSYS, and glibc falls back
    // to clone (for threads), whose flags are checked below.
    deny(b, SYS_clone3, fail_with(ENOSYS));
    b.load_nr();
    require_bits(b, SYS_clone, 0, CLONE_THREAD, kill_process);
    b.load_nr();
    forbid_bits(b, SYS_mprotect, 2, PROT_EXEC, kill_process);
    b.load_nr();
    forbid_bits(b, SYS_pkey_mprotect, 2, PROT_EXEC, kill_process);
    b.load_nr();
    forbid_bits(b, SYS_mmap, 2, PROT_EXEC | PROT_WRITE, kill_process);
    b.load_nr();
    only_self(b, SYS_kill, 0, self, kill_process);
    b.load_nr();
    only_self(b, SYS_tgkill, 0, self, kill_process);
    b.load_nr();
    only_self(b, SYS_rt_sigqueueinfo, 0, self, kill_process);
    b.load_nr();
    only_self(b, SYS_rt_tgsigqueueinfo, 0, self, kill_process);
    b.load_nr();
    // tkill takes a thread id: the process's own threads have ids a filter cannot list. glibc
    // uses tgkill; refuse tkill quietly.
    deny(b, SYS_tkill, fail_with(EPERM));
    b.load_nr();
    if (!allow_sockets) deny(b, SYS_socket, fail_with(EACCES));
    b.ret(allow);

    sock_fprog prog{static_cast<unsigned short>(b.code.size()), b.code.data()};
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
        detail += std::string("seccomp: ") + std::strerror(errno) + "; ";
        return false;
    }
    return true;
#else
    detail += "seccomp: kloop's filter is written for x86-64 only; ";
    return false;
#endif
}

}  // namespace

confinement_support probe_confinement() {
    confinement_support s;
    s.landlock_abi = static_cast<int>(landlock_abi());
    s.seccomp = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
#if !defined(__x86_64__)
    s.seccomp = false;
    s.detail = "seccomp filter written for x86-64 only; ";
#endif
    if (s.landlock_abi == 0) s.detail += "Landlock not offered by this kernel; ";
    return s;
}

confinement_report confine_self(const confinement_policy& policy) {
    confinement_report r;
    r.no_new_privs = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
    if (!r.no_new_privs) {
        r.detail = std::string("no_new_privs: ") + std::strerror(errno) + "; ";
        return r;
    }
    r.landlock_abi = apply_landlock(policy, r.detail);
    r.seccomp = apply_seccomp(policy.allow_sockets, r.detail);
    return r;
}

bool make_undumpable() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

std::vector<std::filesystem::path> default_read_dirs() {
    std::vector<std::filesystem::path> dirs;
    for (const char* d : {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys",
                          "/dev", "/run/nvidia-persistenced"}) {
        std::error_code ec;
        if (std::filesystem::exists(d, ec)) dirs.emplace_back(d);
    }
    return dirs;
}

}  // namespace kloop::platform
