"""The candidate host: the process that runs a Python candidate's code, and nothing that judges it.

The worker (the checker) forks one host per library it times — the candidate; in an A/B, also
the base — before it reads the job and before it touches CUDA (remote_side.py). A host never
receives the job, the events file or a seed; it gets, over its socket (host_link.py):

* ``setup``: the tensor facts (environment.resolve's) and the TF32 setting; it makes its own
  backend, timer and numeric flags — its own CUDA context on a GPU;
* ``time`` of call -1 (kloop's null entry) and ``flush``: the timer calibration, before any
  candidate code is imported; ``describe``: its timer's device facts;
* ``confine``: the checker's policy, applied to itself before any candidate code is imported
  (confinement.py: seccomp, Landlock, no_new_privs);
* ``load``: the library manifest and the call plans stripped to what binding needs (entry names,
  dims, params, the tensors' names, dtypes and shapes); it imports the snapshot and binds each
  call (candidate.bind_candidate);
* ``map`` / ``args``: the checker's buffers (memfds, or CUDA IPC) and argument sets described as
  (buffer id, byte offset, dtype, shape) per tensor; ``drop`` (in any request) forgets buffers;
* ``invoke`` (a checked call, synchronised) and ``time`` (one timed sample with timing.py, caches
  flushed by the preceding ``flush``);
* ``op_times``: its own op-times totals, a diagnostic (op_times.py).

Every reply is a claim — return code, exception, numeric-flag changes, census, sample, sample
info — that the checker holds against what it reads itself (the shared buffers, its own clock).

After every reply, its first (the hello) included, the host stops itself with SIGSTOP, which
stops every thread of the process; the checker waits for that stop before it touches the
buffers, asks another host anything or ends a timed window, and sends SIGCONT just before the
next request. The host leaves with os._exit when the checker closes the socket: no atexit
handler or finaliser of the candidate's runs after the last call.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from typing import Any, Dict, List

from . import host_link, op_times
from .calls import LocalCalls
from .candidate import LoadError, bind_candidate, import_library, use_caches
from .confinement import set_dumpable

NULL_CALL = -1
_PR_SET_PDEATHSIG = 1


class _NullEntry:
    """kloop's own empty entry point, bound like a candidate's function (candidate.Callee's
    interface): what the timer calibration times, through the same path as a candidate call."""

    manifest = {"source": "kloop-null-entry"}
    files: List[str] = []

    @staticmethod
    def kwargs(bufs):
        return {}

    @staticmethod
    def invoke(kwargs):
        return None

    @staticmethod
    def finish(ret, bufs) -> int:
        return 0


def stop_until_asked() -> None:
    """Stops this process (every thread) until the checker's SIGCONT."""
    os.kill(os.getpid(), signal.SIGSTOP)


def detach_from_checker(sock_fd: int, checker_pid: int) -> None:
    """What a freshly forked host keeps of the worker: its standard output and error (the runner
    log, never read for results) and its socket. Stdin becomes /dev/null; every other descriptor
    is closed; the host leads its own process group (a kill(0, ...) reaches nobody else), dies
    with the checker (PR_SET_PDEATHSIG) and is not dumpable (the other host of an A/B cannot
    ptrace it or write its memory through /proc)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass
    set_dumpable(False)
    if os.getppid() != checker_pid:
        os._exit(0)
    keep = {0, 1, 2, sock_fd}
    try:
        open_fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)
    sys.argv = sys.argv[:1]


class CandidateHost:
    def __init__(self, sock):
        self.sock = sock
        self.backend = None
        self.timer = None
        self.flags = None
        self.calls = None
        self.buffers = None
        self.callees: List[Any] = []
        self.arg_sets: Dict[int, Any] = {}  # shared_buffers.ArgumentViews by set id

    # -- the loop ------------------------------------------------------------------------------------

    def serve(self) -> int:
        host_link.send_reply(self.sock, {"ok": True, "pid": os.getpid()})
        stop_until_asked()
        while True:
            try:
                req, fds = host_link.receive_request(self.sock)
            except (host_link.LinkClosed, OSError, EOFError):
                return 0
            try:
                with op_times.scope("serve:" + str(req.get("op") if isinstance(req, dict) else "?")):
                    reply = self.handle(req, fds)
            except Exception as e:  # noqa: BLE001 - kloop's own failure in the host, said in the reply
                traceback.print_exc()
                reply = {"ok": False, "error": "candidate host error: %s: %s" % (type(e).__name__, e)}
            reply["seq"] = req.get("seq") if isinstance(req, dict) else None
            try:
                host_link.send_reply(self.sock, reply)
            except OSError:
                return 0
            sys.stdout.flush()
            sys.stderr.flush()
            stop_until_asked()

    def handle(self, req: Dict[str, Any], fds: List[int]) -> Dict[str, Any]:
        dropped = req.get("drop") or []
        if dropped and self.buffers is not None:
            self.buffers.drop(dropped)
            for k in [k for k, a in self.arg_sets.items() if a.buffer_ids & set(dropped)]:
                del self.arg_sets[k]
        op = req.get("op")
        handler = getattr(self, "op_" + str(op), None)
        if handler is None:
            for fd in fds:
                os.close(fd)
            return {"ok": False, "error": "unknown request '%s'" % op}
        return handler(req, fds)

    # -- requests ------------------------------------------------------------------------------------

    def op_setup(self, req, fds):
        from . import environment
        from .shared_buffers import HostBuffers
        from .worker import make_flags, make_timer

        facts = req["facts"]
        if facts.get("triton_interpret"):
            os.environ["TRITON_INTERPRET"] = "1"
        self.backend = environment.make_backend(facts)
        self.timer = make_timer(self.backend)
        self.flags = make_flags(self.backend, bool(req.get("allow_tf32", False)))
        self.calls = LocalCalls(self.backend, self.timer, self.flags)
        self.buffers = HostBuffers(self.backend)
        return {"ok": True}

    def op_op_times(self, req, fds):
        """This host's own op-times totals (op_times.py), asked for before the checker closes it
        when KLOOP_OP_TIMES is set."""
        return {"ok": True, "ops": op_times.snapshot()}

    def op_describe(self, req, fds):
        return {"ok": True, "result": self.timer.describe()}

    def op_flush(self, req, fds):
        self.timer.flush_caches(int(req.get("bytes", 0)))
        return {"ok": True}

    def op_confine(self, req, fds):
        """Locks this host down before any candidate code is imported (confinement.py). With
        ``none`` (KLOOP_UNCONFINED=1, diagnostics) nothing is applied, and the reply says so."""
        if req.get("none"):
            return {"ok": True, "confined": False, "detail": "not confined: KLOOP_UNCONFINED=1 (diagnostics)"}
        from .confinement import confine_self

        report = confine_self(req.get("policy") or {})
        report["ok"] = True
        return report

    def op_load(self, req, fds):
        manifest = req["manifest"]
        try:
            module = import_library(manifest)
            self.callees = []
            for plan in req["calls"]:
                use_caches(manifest)
                self.callees.append(bind_candidate(module, manifest, plan, self.backend, req["modes"]))
        except LoadError as e:
            return {"ok": False, "error": str(e), "load_error": True}
        return {"ok": True}

    def op_map(self, req, fds):
        self.buffers.map(req, fds)
        return {"ok": True}

    def op_args(self, req, fds):
        from .shared_buffers import ArgumentViews

        self.arg_sets[int(req["set"])] = ArgumentViews(self.buffers, req["inputs"], req["outputs"], req["ids"])
        return {"ok": True}

    def op_invoke(self, req, fds):
        callee = self.callees[int(req["call"])]
        out = self.calls.invoke(callee, self.arg_sets[int(req["set"])], bool(req.get("census", False)))
        return {"ok": True, "outcome": out.to_json()}

    def op_time(self, req, fds):
        call = int(req["call"])
        hold = req.get("hold_s")
        hold = float(hold) if hold is not None else None
        if call == NULL_CALL:
            dt, out, info = self.calls.time_call(_NullEntry, None, hold)
        else:
            dt, out, info = self.calls.time_call(self.callees[call], self.arg_sets[int(req["set"])], hold)
        return {"ok": True, "sample_s": dt, "info": info, "outcome": out.to_json()}


def run_forked(sock, checker_pid: int) -> int:
    """The body of a forked host; its return value is the host's exit status."""
    detach_from_checker(sock.fileno(), checker_pid)
    return CandidateHost(sock).serve()
