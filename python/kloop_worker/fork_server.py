"""kloop's fork server: one warm interpreter that forks a fresh process for every worker.

    <python> -m kloop_worker.fork_server [--preload torch] [--listen-fd 3]

Every kloop Python process — a build probe, a gate, a bench, an A/B — used to be a new
interpreter that imported numpy and torch (3.5 s on the H200 host, docs/perf.md) before doing
anything. kloop now starts this server once per interpreter and environment; it imports numpy,
kloop's worker modules and, with ``--preload torch``, torch, torch.profiler, triton and what torch
loads lazily on a first Triton launch (_TORCH_MODULES), and then
forks one child per request. A child is still a process of its own — its own CUDA context
(the server never initialises CUDA, so a forked child can), its own Triton cache, its own
crash — it just does not pay for the imports.

kloop creates the listening socket (in a directory only its user can enter) and hands it over
as fd 3, so clients can connect while the imports run. A request (fork_client.py) carries the
client's standard streams, environment, working directory and the worker's command line. The
server refuses (``{"fallback": why}``) a request whose interpreter or environment differs from
its own in anything but the per-process variables (a variable read at import time would be
wrong in the child); the client then starts a fresh interpreter. Otherwise it forks; the child
takes the streams, the environment and the directory and runs ``kloop_worker.main``; the
server answers ``{"pid": N}``, and ``{"status": S}`` (the raw wait status) when the child ends.
When a client's connection closes first (kloop killed it: a timeout, Ctrl-C), the server kills
the child's process group. When its stdin reaches end-of-file (kloop is done, or gone), it kills
every child it still has and exits.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import socket
import sys
import time
import traceback
from typing import Dict, List, Optional

from .fork_client import recv_message, send_message

# Read by the worker after it starts, so a child may differ from the server in them.
PER_PROCESS = frozenset({"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"})

_WORKER_MODULES = ("main", "environment", "worker", "candidate", "calls", "candidate_host", "census", "dims", "host_link",
                   "inits", "metrics", "nvml", "remote_side", "shared_buffers",
                   "protocol", "screen", "stopping", "tensors", "timing")
# What a gate or an A/B imports besides the worker: torch; the census's profiler; triton; and the
# chain torch loads lazily on a worker's first Triton launch or profiled call (torch._dynamo
# through triton_kernel_wrap, sympy: 838 modules, 3.5-5 s of each H200 gate before they were here).
_TORCH_MODULES = ("torch", "torch.profiler", "triton", "triton.language", "torch._dynamo",
                  "torch._higher_order_ops.triton_kernel_wrap")


def preload(extra: List[str]) -> Dict[str, object]:
    """Imports what every worker imports; a module that is missing is left to the children."""
    names = ["numpy"] + ["kloop_worker." + m for m in _WORKER_MODULES]
    if "torch" in extra:
        names += list(_TORCH_MODULES)
    report: Dict[str, object] = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            importlib.import_module(name)
            report[name] = round(time.perf_counter() - t0, 3)
        except Exception as e:  # noqa: BLE001 - an import may fail in any way; the child reports it
            report[name] = "%s: %s" % (type(e).__name__, e)
    return report


def refusal(request: dict, startup_env: Dict[str, str]) -> Optional[str]:
    """Why this server cannot run the request as a fresh interpreter would; None when it can."""
    argv = request.get("argv")
    if not isinstance(argv, list) or len(argv) < 3 or argv[1:3] != ["-m", "kloop_worker"]:
        return "not a kloop_worker command line"
    if request.get("executable") != sys.executable:
        return "another interpreter (%s, not %s)" % (request.get("executable"), sys.executable)
    env = request.get("env")
    if not isinstance(env, dict):
        return "no environment"
    for name in sorted(set(env) | set(startup_env)):
        if name not in PER_PROCESS and env.get(name) != startup_env.get(name):
            return "the environment differs in %s" % name
    if not isinstance(request.get("cwd"), str) or not os.path.isdir(request["cwd"]):
        return "no working directory"
    return None


def _run_child(request: dict, fds: List[int], inherited: List[int]) -> None:
    """In the forked child: become the worker process the request describes. Never returns."""
    rc = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in inherited:
            try:
                os.close(fd)
            except OSError:
                pass
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # what `python -m` puts first
        args = request["argv"][3:]
        from . import main as main_mod

        main_mod.FORKED = True
        sys.argv = [os.path.join(os.path.dirname(main_mod.__file__), "__main__.py")] + args
        rc = main_mod.main(args)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            sys.stderr.write("%s\n" % e.code)
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc if isinstance(rc, int) else 1)


class Server:
    def __init__(self, listener: socket.socket, startup_env: Dict[str, str]):
        self.listener = listener
        self.startup_env = startup_env
        self.children: Dict[int, Optional[socket.socket]] = {}  # pid -> its client's connection
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def serve(self) -> None:
        while True:
            conns = {c.fileno(): (pid, c) for pid, c in self.children.items() if c is not None}
            try:
                ready = select.select([self.listener.fileno(), 0, self.wake_r] + list(conns), [], [])[0]
            except InterruptedError:
                continue
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            self.reap()
            if 0 in ready and not os.read(0, 4096):
                return self.shutdown()
            for fd in ready:
                if fd in conns:
                    pid, conn = conns[fd]
                    if self.children.get(pid) is conn and not self._alive(conn):
                        self._kill(pid)
                        conn.close()
                        self.children[pid] = None
            if self.listener.fileno() in ready:
                self.accept()

    @staticmethod
    def _alive(conn: socket.socket) -> bool:
        try:
            return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    @staticmethod
    def _kill(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self._kill(pid)  # what the worker left running in its group
            if conn is not None:
                try:
                    send_message(conn, {"status": status})
                except OSError:
                    pass
                conn.close()

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: List[int] = []
        try:
            conn.settimeout(10)
            request, fds = recv_message(conn, max_fds=3)
            if request is None or len(fds) != 3:
                raise ValueError("an incomplete request")
            why = refusal(request, self.startup_env)
            if why is not None:
                send_message(conn, {"fallback": why})
                raise ValueError(why)
        except (OSError, EOFError, ValueError):
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        sys.stdout.flush()
        sys.stderr.flush()
        inherited = [self.listener.fileno(), self.wake_r, self.wake_w, conn.fileno()]
        inherited += [c.fileno() for c in self.children.values() if c is not None]
        pid = os.fork()
        if pid == 0:
            _run_child(request, fds, inherited)
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        try:
            conn.settimeout(None)
            send_message(conn, {"pid": pid})
        except OSError:
            self._kill(pid)
            conn.close()
            self.children[pid] = None

    def shutdown(self) -> None:
        for pid in list(self.children):
            self._kill(pid)
        deadline = time.monotonic() + 2.0
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.01)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kloop_worker.fork_server")
    p.add_argument("--preload", default="", help="comma-separated: torch (torch, torch.profiler, triton)")
    p.add_argument("--listen-fd", type=int, default=3, help="the listening socket's descriptor")
    args = p.parse_args(argv)
    try:
        listener = socket.socket(fileno=args.listen_fd)
    except OSError as e:
        sys.stderr.write("kloop fork server: no listening socket on fd %d: %s\n" % (args.listen_fd, e))
        return 2
    os.set_inheritable(listener.fileno(), False)
    # Every worker is forked from here: a candidate must not be able to write into this process.
    from .confinement import set_dumpable

    set_dumpable(False)
    startup_env = dict(os.environ)
    t0 = time.perf_counter()
    report = preload([m for m in args.preload.split(",") if m])
    sys.stderr.write("kloop fork server %d: %s ready after %.2f s (%s)\n" % (
        os.getpid(), sys.executable, time.perf_counter() - t0,
        ", ".join("%s %s" % (k, v) for k, v in report.items() if not k.startswith("kloop_worker."))))
    Server(listener, startup_env).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
