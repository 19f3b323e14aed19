"""Confining a Python candidate host (Linux, no root needed): the Python counterpart of the native
host's src/platform/confinement-linux.cpp, shaped by what an interpreter running Triton needs.

The checker (remote_side.py) decides the policy — what the host may read, where it may write —
and sends it in a ``confine`` request after the host has set up its device and been calibrated,
before any candidate code is imported. The host then applies, to itself and to every process it
will start:

* no_new_privs;
* a seccomp-bpf filter on every thread (TSYNC): no signal to any process but itself or its own
  process group (which it leads: candidate_host.detach_from_checker), no setpgid or setsid (so
  everything it starts stays in its group, which the checker stops after every reply and kills
  at the end; joining another group would widen the signals it may send), no ptrace, process_vm_readv/writev, pidfd_getfd,
  pidfd_send_signal or kcmp, no namespaces (unshare, setns, clone with a CLONE_NEW* flag; clone3,
  whose flags a filter cannot read, answers ENOSYS and glibc falls back to clone), no mount,
  bpf, io_uring, userfaultfd, keys or kernel modules, no new sockets (a Unix socket could reach
  kloop's fork server). Unlike the native host it may fork and exec: Triton runs ptxas and a C
  compiler when it compiles a kernel. A child inherits the filter. A violation kills the process
  with SIGSYS; a refused socket, setpgid or setsid fails with EACCES / EPERM;
* Landlock (when the kernel offers it): the file system is unreadable outside the policy's read
  trees (the interpreter's prefixes and import path, the candidate's source and snapshot, the
  system's libraries, /proc, /sys, /dev), read-only outside its write trees (its own Triton and
  inductor caches, a private temporary directory), and no read tree may hold the job or the
  events file; with ABI >= 6 signals and abstract Unix sockets are scoped to the sandbox too.

Each layer that could not be applied is reported, never silently skipped; the checker marks the
run unconfined unless every layer holds (docs/security.md).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct
import sys
from typing import Any, Dict, Iterable, List, Tuple

# ---- system call numbers and constants (x86-64) --------------------------------------------------

_SYS = {
    "kill": 62, "tgkill": 234, "tkill": 200, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
    "setpgid": 109, "setsid": 112, "clone": 56, "clone3": 435, "socket": 41, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "pidfd_send_signal": 424,
    "kcmp": 312, "setns": 308, "unshare": 272, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "bpf": 321, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249, "kexec_load": 246,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "open_by_handle_at": 304,
    "fanotify_init": 300, "seccomp": 317, "landlock_create_ruleset": 444, "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
}
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "pidfd_send_signal", "kcmp",
          "setns", "unshare", "mount", "umount2", "pivot_root", "chroot", "bpf", "io_uring_setup",
          "io_uring_enter", "io_uring_register", "userfaultfd", "keyctl", "add_key", "request_key",
          "kexec_load", "init_module", "finit_module", "delete_module", "open_by_handle_at", "fanotify_init")
SIGNALLING = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_AUDIT_ARCH_X86_64 = 0xC000003E
RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

_BPF_LD_W_ABS = 0x00 | 0x00 | 0x20
_BPF_JEQ_K = 0x05 | 0x10 | 0x00
_BPF_JGE_K = 0x05 | 0x30 | 0x00
_BPF_JSET_K = 0x05 | 0x40 | 0x00
_BPF_RET_K = 0x06 | 0x00
_OFF_NR, _OFF_ARCH, _OFF_ARGS = 0, 4, 16


def ret_errno(err: int) -> int:
    return _RET_ERRNO | (err & 0xFFFF)


class FilterBuilder:
    """A seccomp-bpf program as (code, jt, jf, k) instructions. Each rule is a block that starts
    with the system call number in the accumulator and either returns or falls through to the
    next rule with the number reloaded."""

    def __init__(self):
        self.code: List[tuple] = []

    def stmt(self, code: int, k: int) -> None:
        self.code.append((code, 0, 0, k & 0xFFFFFFFF))

    def jump(self, code: int, k: int, jt: int, jf: int) -> None:
        self.code.append((code, jt, jf, k & 0xFFFFFFFF))

    def load_nr(self) -> None:
        self.stmt(_BPF_LD_W_ABS, _OFF_NR)

    def load_arg_lo(self, i: int) -> None:
        self.stmt(_BPF_LD_W_ABS, _OFF_ARGS + 8 * i)

    def ret(self, v: int) -> None:
        self.stmt(_BPF_RET_K, v)

    def deny(self, nr: int, action: int) -> None:
        self.jump(_BPF_JEQ_K, nr, 0, 1)
        self.ret(action)
        self.load_nr()

    def forbid_any_bit(self, nr: int, arg: int, mask: int, action: int) -> None:
        """nr: action when (arg & mask) != 0; else allowed."""
        self.jump(_BPF_JEQ_K, nr, 0, 4)
        self.load_arg_lo(arg)
        self.jump(_BPF_JSET_K, mask, 0, 1)
        self.ret(action)
        self.ret(RET_ALLOW)

    def only_self(self, nr: int, arg: int, self_pid: int, action: int) -> None:
        """nr: allowed when arg (a pid) is ``self_pid`` or 0 (the caller's own process group);
        else action."""
        self.jump(_BPF_JEQ_K, nr, 0, 5)
        self.load_arg_lo(arg)
        self.jump(_BPF_JEQ_K, self_pid, 1, 0)
        self.jump(_BPF_JEQ_K, 0, 0, 1)
        self.ret(RET_ALLOW)
        self.ret(action)

    def packed(self) -> bytes:
        return b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in self.code)


def host_filter(self_pid: int, allow_sockets: bool = False) -> FilterBuilder:
    """The Python host's filter (see the module's text)."""
    b = FilterBuilder()
    b.stmt(_BPF_LD_W_ABS, _OFF_ARCH)
    b.jump(_BPF_JEQ_K, _AUDIT_ARCH_X86_64, 1, 0)
    b.ret(RET_KILL_PROCESS)
    b.load_nr()
    b.jump(_BPF_JGE_K, 0x40000000, 0, 1)  # x32 system calls would bypass the numbers below
    b.ret(RET_KILL_PROCESS)
    b.load_nr()
    for name in DENIED:
        b.deny(_SYS[name], RET_KILL_PROCESS)
    b.deny(_SYS["clone3"], ret_errno(errno.ENOSYS))
    b.deny(_SYS["setpgid"], ret_errno(errno.EPERM))
    b.deny(_SYS["setsid"], ret_errno(errno.EPERM))
    b.deny(_SYS["tkill"], ret_errno(errno.EPERM))
    if not allow_sockets:
        b.deny(_SYS["socket"], ret_errno(errno.EACCES))
    b.forbid_any_bit(_SYS["clone"], 0, CLONE_NEW_FLAGS, RET_KILL_PROCESS)
    b.load_nr()
    for name in SIGNALLING:
        b.only_self(_SYS[name], 0, self_pid, RET_KILL_PROCESS)
        b.load_nr()
    b.ret(RET_ALLOW)
    return b


# ---- Landlock ------------------------------------------------------------------------------------

LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
LL_REFER, LL_TRUNCATE, LL_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
LL_SCOPE_ABSTRACT_UNIX, LL_SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS_MASK = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV


def fs_rights_for(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM (ABI 1)
    if abi >= 2:
        rights |= LL_REFER
    if abi >= 3:
        rights |= LL_TRUNCATE
    if abi >= 5:
        rights |= LL_IOCTL_DEV
    return rights


@functools.lru_cache(maxsize=1)
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def landlock_abi() -> int:
    try:
        abi = _libc().syscall(ctypes.c_long(_SYS["landlock_create_ruleset"]), None, ctypes.c_size_t(0),
                              ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return int(abi) if abi > 0 else 0


def _add_rule(libc, ruleset: int, path: str, rights: int) -> str:
    """One path-beneath rule; a path that does not exist is skipped. Returns what failed, or ""."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS_MASK
        attr = struct.pack("=Qi", rights, fd)
        buf = ctypes.create_string_buffer(attr, len(attr))
        rc = libc.syscall(ctypes.c_long(_SYS["landlock_add_rule"]), ctypes.c_int(ruleset), ctypes.c_int(1), buf,
                          ctypes.c_uint32(0))
        if rc != 0:
            return "landlock rule for '%s' failed: %s; " % (path, os.strerror(ctypes.get_errno()))
        return ""
    finally:
        os.close(fd)


def apply_landlock(read_dirs: Iterable[str], write_dirs: Iterable[str], device_paths: Iterable[str]) -> Tuple[int, str]:
    libc = _libc()
    abi = landlock_abi()
    if abi <= 0:
        return 0, "Landlock: not offered by this kernel; "
    handled = fs_rights_for(abi)
    if abi >= 6:
        attr = struct.pack("=QQQ", handled, 0, LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled, 0)
    else:
        attr = struct.pack("=Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(ctypes.c_long(_SYS["landlock_create_ruleset"]), buf, ctypes.c_size_t(len(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return 0, "Landlock: create_ruleset failed: %s; " % os.strerror(ctypes.get_errno())
    try:
        read = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
        device = read | LL_WRITE_FILE | (LL_IOCTL_DEV if abi >= 5 else 0)
        failed = ""
        for d in read_dirs:
            failed += _add_rule(libc, ruleset, d, read)
        for d in device_paths:
            failed += _add_rule(libc, ruleset, d, device)
        for d in write_dirs:
            failed += _add_rule(libc, ruleset, d, handled)
        if failed:
            return 0, failed
        if libc.syscall(ctypes.c_long(_SYS["landlock_restrict_self"]), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return 0, "Landlock: restrict_self failed: %s; " % os.strerror(ctypes.get_errno())
        return abi, ""
    finally:
        os.close(ruleset)


# ---- the policy ----------------------------------------------------------------------------------

SYSTEM_READ_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev",
                    "/run/nvidia-persistenced")


def _is_within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def read_dirs_for(manifest: Dict[str, Any], hidden: List[str]) -> Tuple[List[str], List[str]]:
    """The trees a host may read: the system's, the interpreter's prefixes and import path, the
    user's site-packages, CUDA_HOME, the candidate's source directory and snapshot; and those
    withheld: a tree that holds a hidden path (the job, the events file) is left out, and so is
    the file system's root. A candidate whose source directory is withheld still imports its
    snapshot, but not the modules beside its source."""
    wanted: List[str] = list(SYSTEM_READ_DIRS)
    wanted += [sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix),
               getattr(sys, "base_exec_prefix", sys.exec_prefix)]
    wanted += [p for p in sys.path if p]
    try:
        import site

        wanted.append(site.getusersitepackages())
    except (ImportError, AttributeError):
        pass
    for var in ("CUDA_HOME", "CUDA_PATH", "TRITON_HOME"):
        if os.environ.get(var):
            wanted.append(os.environ[var])
    home = os.path.expanduser("~")
    wanted.append(os.path.join(home, ".triton"))
    for key in ("source", "snapshot"):
        if manifest.get(key):
            wanted.append(os.path.dirname(os.path.abspath(manifest[key])))
    hidden_real = [os.path.realpath(h) for h in hidden if h]
    out: List[str] = []
    withheld: List[str] = []
    for w in wanted:
        real = os.path.realpath(w)
        if not os.path.exists(real) or real in out or real in withheld:
            continue
        if real == "/" or any(_is_within(h, real) for h in hidden_real):
            withheld.append(real)
        else:
            out.append(real)
    return out, withheld


def device_paths() -> List[str]:
    found = ["/dev/null", "/dev/zero", "/dev/full"]
    try:
        found += ["/dev/" + n for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")]
    except OSError:
        pass
    return found


def set_dumpable(on: bool) -> bool:
    """PR_SET_DUMPABLE for this process. Not dumpable, another process of the user can neither
    ptrace it nor open its /proc/<pid>/mem, fd/ or environ. Returns whether it held."""
    try:
        return _libc().prctl(4, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def confine_self(policy: Dict[str, Any]) -> Dict[str, Any]:
    """Applies the policy to this process (see the module's text). Returns the report the checker
    reads: no_new_privs, seccomp, landlock_abi, confined, detail."""
    report: Dict[str, Any] = {"no_new_privs": False, "seccomp": False, "landlock_abi": 0, "confined": False,
                              "detail": ""}
    if platform.machine() != "x86_64" or not sys.platform.startswith("linux"):
        report["detail"] = "kloop's Python host confinement is written for Linux on x86-64 only"
        return report
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        report["detail"] = "no_new_privs: %s" % os.strerror(ctypes.get_errno())
        return report
    report["no_new_privs"] = True
    tmp = policy.get("tmp_dir")
    if tmp:
        # Triton's compiler and the C compiler it runs write their temporary files here.
        os.environ["TMPDIR"] = tmp
        import tempfile

        tempfile.tempdir = tmp
    abi, detail = apply_landlock(policy.get("read_dirs", []), policy.get("write_dirs", []),
                                 policy.get("device_paths", []))
    report["landlock_abi"] = abi
    report["detail"] += detail
    prog = host_filter(os.getpid(), bool(policy.get("allow_sockets", False))).packed()
    filt = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(filt, ctypes.c_void_p))
    rc = libc.syscall(ctypes.c_long(_SYS["seccomp"]), ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                      ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if rc != 0:
        report["detail"] += "seccomp: %s; " % os.strerror(ctypes.get_errno())
    else:
        report["seccomp"] = True
    report["confined"] = report["no_new_privs"] and report["seccomp"] and abi > 0
    report["detail"] = report["detail"].strip().rstrip(";")
    return report
