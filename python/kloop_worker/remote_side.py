"""The checker's side of the candidate hosts: forking them, asking them, and holding their claims
against what the checker sees itself.

The worker forks its hosts (candidate_host.py) with ``fork_hosts`` before it reads the job and
before it touches CUDA (a process forked after CUDA initialisation cannot use CUDA; forking after
``import torch`` is what the fork server already does), so a host is the worker's child, shares
its imports copy-on-write, and never held the job, the events file or a seed. One host per
library timed: hosts[0] the candidate, hosts[1] the base of an A/B; a job that needs one dismisses
the other at once.

Per request (``CandidateHostLink.request`` / ``timed_request``): SIGCONT, the request, the reply,
then ``os.waitpid(pid, WUNTRACED)`` until the host has stopped itself again. Only then does the
checker read or write a shared buffer, ask another host anything, or end a timed window. The
window of a timed request runs from just before the SIGCONT to the observed stop, on the
checker's clock (time.perf_counter_ns): whatever any thread of the candidate does for the call,
before or after the reply, is inside it. ``calibrate`` times kloop's null entry 48 times exactly
as a candidate call is timed, before the candidate is imported: what the window adds to an
honest sample (the C++ timer_cross_check holds each sample against its window with it).

A host that dies or breaks the protocol (a reply that is not JSON, a wrong sequence number) ends
the call with ``HostDied``, whose text names the signal or the exit status; the worker reports it
as the candidate's failure.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from collections import deque
from typing import Any, Dict, List, Optional, Tuple

from . import host_link, op_times
from .calls import Outcome, sample_seconds
from .protocol import CallPlan, TensorPlan

# shared_buffers (numpy) is imported where it is used: the hosts are forked before the worker
# knows whether numpy imports at all, which it reports through the events.

CALIBRATION_CALLS = 48
# The timer cross-check's constant allowance for these hosts (the native hosts' is 100 µs;
# src/measure/timer_agreement.hpp). A Python request does interpreter work outside the sample
# (arguments, flags, the reply) whose cost grows after a sample's cache flush evicted the
# interpreter's working set — more than the calibration, with its empty flush, sees: honest
# candidates on a loaded 2-core host were 3–70 µs over the 100 µs allowance.
TIMER_SLACK_S = 400e-6
NULL_CALL = -1
UNCONFINED_DETAIL = "the Python candidate host was not confined"


class HostDied(Exception):
    """The host died, stopped answering, or broke the protocol."""


class HostRefused(Exception):
    """The host answered a request with an error (a load error, kloop's own failure there)."""

    def __init__(self, message: str, load_error: bool = False):
        super().__init__(message)
        self.load_error = load_error


def describe_status(status: int) -> str:
    if os.WIFEXITED(status):
        return "exited with status %d" % os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return "killed by %s (signal %d)" % (name, sig)
    return "wait status %d" % status


def percentile(sorted_values: List[float], p: float) -> float:
    """measure::percentile_sorted: linear interpolation between closest ranks."""
    h = (len(sorted_values) - 1) * p
    lo = int(math.floor(h))
    if lo + 1 >= len(sorted_values):
        return sorted_values[-1]
    return sorted_values[lo] + (h - lo) * (sorted_values[lo + 1] - sorted_values[lo])


def stripped_plan(plan: CallPlan) -> CallPlan:
    """What a host needs of a call plan to bind the candidate: no initialisers, no tolerances,
    no reference entry."""
    def strip(t: TensorPlan) -> TensorPlan:
        return TensorPlan(name=t.name, dtype=t.dtype, shape=list(t.shape), inout=t.inout)

    return CallPlan(mode=plan.mode, shape=plan.shape, entry=plan.entry, reference_entry="", dims=dict(plan.dims),
                    inputs=[strip(t) for t in plan.inputs], outputs=[strip(t) for t in plan.outputs],
                    params=list(plan.params))


class CandidateHostLink:
    """One forked host, seen from the checker."""

    def __init__(self, index: int):
        self.index = index
        self.pid = -1
        self.sock = None
        self.death = ""
        self.seq = 0
        self.allocator = None  # shared_buffers.SharedAllocator, once the backend exists
        self.mapped: set = set()
        self.arg_sets: Dict[Tuple, int] = {}
        self.next_set = 1
        self.pending_drop: List[int] = []
        self.calibration: Dict[str, Any] = {}
        self.confinement = {"confined": False, "detail": UNCONFINED_DETAIL}
        self.tmp_dir = ""  # the host's private temporary directory, once confined
        self._enqueue: deque = deque(maxlen=16)  # the enqueue times the host reported (claims)

    # -- life ------------------------------------------------------------------------------------

    def fork(self) -> None:
        checker, host = host_link.make_pair()
        sys.stdout.flush()
        sys.stderr.flush()
        checker_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # the host: never returns into the worker's code
            code = 70
            try:
                checker.close()
                from . import candidate_host

                code = candidate_host.run_forked(host, checker_pid)
            except BaseException:  # noqa: BLE001
                import traceback

                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        host.close()
        self.pid = pid
        self.sock = checker
        try:
            hello = host_link.receive_reply(self.sock)
        except (host_link.LinkClosed, OSError) as e:
            self._lost(str(e))
        self._await_stop()
        if not hello.get("ok"):
            raise HostDied("the candidate host did not start")

    def _signal_group(self, sig: int) -> None:
        """Signals the host's process group: the host leads it, and under its confinement nothing
        it starts can leave it (setsid and setpgid are refused), so the group is the host and
        every process it started."""
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        if op_times.enabled() and self.sock is not None and self.pid > 0 and not self.death:
            try:  # the host's own totals, before the socket closes (op_times.py)
                op_times.merge("in-host%d:" % self.index, self.request({"op": "op_times"}).get("ops"))
            except (HostDied, HostRefused):
                pass
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.pid > 0:
            self._signal_group(signal.SIGKILL)  # the host and whatever it started
            self._reap(0)
            self.pid = -1
        if self.tmp_dir:
            import shutil

            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            self.tmp_dir = ""

    def _reap(self, flags: int) -> Optional[int]:
        while True:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:
                return None
            if pid == 0:
                return None
            if os.WIFSTOPPED(status) and not (flags & os.WUNTRACED):
                continue
            return status

    def _await_stop(self) -> None:
        """Waits until the host has stopped itself after its reply, or died."""
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WUNTRACED)
            except ChildProcessError:
                self.death = "vanished"
                self.pid = -1
                return
            if pid != self.pid:
                continue
            if os.WIFSTOPPED(status):
                # The rest of its group too: what the host started runs only while it does.
                self._signal_group(signal.SIGSTOP)
                return
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                self.death = describe_status(status)  # after its reply: the next request says so
                self.pid = -1
                return

    def _lost(self, what: str, broke_protocol: bool = False) -> None:
        """The link broke. A host that closed it is dying or dead: give it a moment, then make
        sure. One that sent something that is not a reply is killed at once."""
        why = what
        if self.pid > 0:
            status = None
            if broke_protocol:
                self._signal_group(signal.SIGKILL)
                status = self._reap(0)
                why = "broke the protocol (%s)" % what
            else:
                self._signal_group(signal.SIGCONT)
                for _ in range(200):
                    try:
                        pid, st = os.waitpid(self.pid, os.WNOHANG)
                    except ChildProcessError:
                        pid, st = self.pid, 0
                    if pid == self.pid and not os.WIFSTOPPED(st):
                        status = st
                        break
                    time.sleep(0.005)
                if status is None:
                    self._signal_group(signal.SIGKILL)
                    self._reap(0)
                    why = "stopped answering (%s)" % what
                else:
                    why = describe_status(status)
            self.pid = -1
        self.death = why
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        raise HostDied("the candidate host " + why)

    # -- requests ----------------------------------------------------------------------------------

    def _exchange(self, req: Dict[str, Any], fds: Optional[List[int]] = None) -> Tuple[Dict[str, Any], float]:
        if self.pid <= 0 or self.sock is None:
            raise HostDied("the candidate host is gone (%s)" % (self.death or "closed"))
        self._collect_dropped()
        self.seq += 1
        req["seq"] = self.seq
        if self.pending_drop:
            req["drop"], self.pending_drop = self.pending_drop, []
        host_link.drain(self.sock)
        if self.allocator is not None and getattr(self.allocator, "is_cuda", False):
            self.allocator.synchronize()  # the checker's writes are done before the host runs
        t0 = time.perf_counter_ns()
        self._signal_group(signal.SIGCONT)
        try:
            host_link.send_request(self.sock, req, fds)
            reply = host_link.receive_reply(self.sock)
        except host_link.ProtocolBroken as e:
            self._lost(str(e), broke_protocol=True)
        except (host_link.LinkClosed, OSError) as e:
            self._lost(str(e))
        self._await_stop()
        window_s = (time.perf_counter_ns() - t0) * 1e-9
        op_times.add("host:" + str(req.get("op")), window_s)
        if reply.get("seq") != self.seq:
            self._lost("a reply out of sequence", broke_protocol=True)
        if not reply.get("ok", False):
            raise HostRefused(str(reply.get("error", "refused")), bool(reply.get("load_error", False)))
        return reply, window_s

    def request(self, req: Dict[str, Any], fds: Optional[List[int]] = None) -> Dict[str, Any]:
        return self._exchange(req, fds)[0]

    def timed_request(self, req: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        """A ``time`` request: (reply, the checker's window less the hold it named). On a GPU the
        checker names the host's hold (timing.py): from the enqueue times the host reported, at
        most HOLD_CREDIT_MAX_S. The hold is GPU time outside the sample by design, so the window
        the timer cross-check holds against the sample is credited with it; a host that skips
        its hold gains no more than that."""
        hold = self.next_hold_s()
        if hold is not None:
            req = dict(req, hold_s=hold)
        reply, window = self._exchange(req)
        if hold is not None:
            window = max(0.0, window - hold)
            info = reply.get("info")
            enqueue = info.get("enqueue_s") if isinstance(info, dict) else None
            if isinstance(enqueue, (int, float)) and not isinstance(enqueue, bool) and math.isfinite(enqueue):
                self._enqueue.append(min(max(float(enqueue), 0.0), 1.0))
        return reply, window

    def next_hold_s(self) -> Optional[float]:
        """The hold to name in the next ``time`` request; None for a host without a GPU."""
        if self.allocator is None or not getattr(self.allocator, "is_cuda", False):
            return None
        from .timing import HOLD_CREDIT_MAX_S, next_hold_s

        return min(HOLD_CREDIT_MAX_S, next_hold_s(self._enqueue))

    def _collect_dropped(self) -> None:
        if self.allocator is None:
            return
        gone = self._dropped_feed()
        if not gone:
            return
        gone_set = set(gone)
        self.pending_drop.extend(i for i in gone if i in self.mapped)
        self.mapped -= gone_set
        for key in [k for k in self.arg_sets if gone_set.intersection(k[1])]:
            del self.arg_sets[key]

    def _dropped_feed(self) -> List[int]:  # replaced by HostSet.attach: one allocator, several hosts
        return self.allocator.take_dropped() if self.allocator is not None else []

    # -- set-up ------------------------------------------------------------------------------------

    def setup(self, facts: Dict[str, Any], allow_tf32: bool) -> None:
        self.request({"op": "setup", "facts": facts, "allow_tf32": allow_tf32})

    def calibrate(self, calls: int = CALIBRATION_CALLS) -> None:
        """kloop's null entry timed as a candidate call is — a flush request, then the timed
        request through the host's call path; on a GPU after device work of the checker's own, as
        a sample follows a preparation — before any candidate code is imported. The flush is of
        no bytes, as the native runner's calibration: on a GPU the host's timer still reads its
        minimum (2 x L2); on the CPU a sample's larger flush leaves the host's caches colder than
        here, which the rule's allowance above the calibration's p90 absorbs (docs/python.md)."""
        scratch = None
        if self.allocator is not None and getattr(self.allocator, "is_cuda", False):
            scratch = self.allocator.wrapped.empty_u8(1 << 20)
        overhead: List[float] = []
        for _ in range(calls):
            if scratch is not None:
                scratch.fill_(0xFF)
            self.request({"op": "flush", "bytes": 0})
            reply, window = self.timed_request({"op": "time", "call": NULL_CALL})
            sample = sample_seconds(reply.get("sample_s")) or 0.0
            overhead.append(max(0.0, window - sample))
        v = sorted(overhead)
        self.calibration = {"calls": len(v), "overhead_median_s": percentile(v, 0.5),
                            "overhead_p90_s": percentile(v, 0.9), "overhead_max_s": v[-1],
                            "slack_s": TIMER_SLACK_S}

    def describe(self) -> Dict[str, Any]:
        result = self.request({"op": "describe"}).get("result")
        return dict(result) if isinstance(result, dict) else {}

    def confine(self, manifest: Dict[str, Any], hidden: List[str]) -> None:
        """Has the host lock itself down for the library of ``manifest`` (confinement.py): it may
        read the system's and the interpreter's trees and the library's source and snapshot, write
        the library's own caches and a private temporary directory, and read nothing that holds
        ``hidden`` (the job, the events file). KLOOP_UNCONFINED=1 asks for nothing (diagnostics).
        The host's report becomes its ``confinement`` fact."""
        from . import confinement

        if os.environ.get("KLOOP_UNCONFINED") == "1":
            reply = self.request({"op": "confine", "none": True})
        else:
            import tempfile

            self.tmp_dir = tempfile.mkdtemp(prefix="kloop-host-")
            write_dirs = [self.tmp_dir]
            for key in ("triton_cache_dir", "inductor_cache_dir"):
                d = manifest.get(key)
                if d:
                    os.makedirs(d, exist_ok=True)
                    write_dirs.append(d)
            readable, withheld = confinement.read_dirs_for(manifest, hidden)
            policy = {"read_dirs": readable, "write_dirs": write_dirs, "device_paths": confinement.device_paths(),
                      "tmp_dir": self.tmp_dir}
            reply = self.request({"op": "confine", "policy": policy})
            reply["withheld"] = withheld
        self.confinement = {k: reply[k] for k in ("confined", "no_new_privs", "seccomp", "landlock_abi", "detail",
                                                  "withheld") if k in reply}
        self.confinement["confined"] = bool(self.confinement.get("confined", False))

    def load(self, manifest: Dict[str, Any], plans: List[CallPlan], modes: List[str]) -> None:
        self.request({"op": "load", "manifest": manifest, "calls": [stripped_plan(p) for p in plans], "modes": modes})

    # -- calls -------------------------------------------------------------------------------------

    def _argument_set(self, bufs) -> int:
        from .shared_buffers import describe_arguments

        ins, outs, ids = describe_arguments(self.allocator, bufs)
        key = (tuple((t[0], t[1]) for t in ins + outs), frozenset(ids))
        set_id = self.arg_sets.get(key)
        if set_id is not None:
            return set_id
        for buf_id in ids:
            if buf_id not in self.mapped:
                req, fds = self.allocator.map_request(buf_id)
                self.request(req, fds)
                self.mapped.add(buf_id)
        set_id = self.next_set
        self.next_set += 1
        self.request({"op": "args", "set": set_id, "inputs": ins, "outputs": outs, "ids": ids})
        self.arg_sets[key] = set_id
        return set_id

    def invoke(self, call: int, bufs, census: bool) -> Outcome:
        """A checked call: the host's claims, or the host's death as the call's failure."""
        try:
            set_id = self._argument_set(bufs)
            reply = self.request({"op": "invoke", "call": call, "set": set_id, "census": census})
            return Outcome.from_claim(reply.get("outcome"))
        except HostDied as e:
            return Outcome(return_code=1, device_error=str(e), sticky=True, host_died=True)
        except HostRefused as e:
            return Outcome(return_code=1, device_error="the candidate host refused the call: %s" % e)

    def time(self, call: int, bufs) -> Tuple[float, Outcome, Dict[str, Any]]:
        """One timed sample: (the host's claimed seconds, its claimed outcome, its sample info
        with the checker's ``window_s``)."""
        try:
            set_id = self._argument_set(bufs)
            reply, window = self.timed_request({"op": "time", "call": call, "set": set_id})
        except HostDied as e:
            return 0.0, Outcome(return_code=1, device_error=str(e), sticky=True, host_died=True), {}
        except HostRefused as e:
            return 0.0, Outcome(return_code=1, device_error="the candidate host refused the call: %s" % e), {}
        info = reply.get("info")
        info = dict(info) if isinstance(info, dict) else {}
        info["window_s"] = window
        sample = sample_seconds(reply.get("sample_s"))
        if sample is None:
            return 0.0, Outcome(return_code=1, device_error="the candidate host claimed a sample that is not a "
                                                            "number of seconds"), info
        return sample, Outcome.from_claim(reply.get("outcome")), info

    def flush(self, nbytes: int) -> None:
        """The host's cache flush before a sample. A host that cannot flush is found out by the
        timed request that follows."""
        try:
            self.request({"op": "flush", "bytes": int(nbytes)})
        except (HostDied, HostRefused):
            pass


class HostSet:
    """The hosts of one worker: forked together, closed together."""

    def __init__(self, hosts: List[CandidateHostLink]):
        self.hosts = hosts

    def __getitem__(self, i: int) -> CandidateHostLink:
        return self.hosts[i]

    def __len__(self) -> int:
        return len(self.hosts)

    def keep(self, n: int) -> None:
        """Dismisses the hosts this job does not need."""
        for h in self.hosts[n:]:
            h.close()
        self.hosts = self.hosts[:n]

    def attach(self, allocator) -> None:
        """One allocator for every host: a dropped buffer is told to each host that mapped it."""
        backlog: Dict[int, List[int]] = {h.index: [] for h in self.hosts}

        def feed_for(host: CandidateHostLink):
            def feed() -> List[int]:
                fresh = allocator.take_dropped()
                for k in backlog:
                    backlog[k].extend(fresh)
                out, backlog[host.index] = backlog[host.index], []
                return out
            return feed

        for h in self.hosts:
            h.allocator = allocator
            h._dropped_feed = feed_for(h)

    def isolation_facts(self) -> Dict[str, Any]:
        confined = bool(self.hosts) and all(h.confinement.get("confined", False) for h in self.hosts)
        details = sorted({str(h.confinement.get("detail", "")) for h in self.hosts} - {""})
        facts: Dict[str, Any] = {
            "process": "separate",
            "confined": confined,
            "detail": "; ".join(details) if details or not confined else "",
            "hosts": [{"pid": h.pid, "confinement": dict(h.confinement), "timer_calibration": dict(h.calibration)}
                      for h in self.hosts],
        }
        if self.hosts and self.hosts[0].allocator is not None and getattr(self.hosts[0].allocator, "is_cuda", False):
            facts["device_buffers"] = "the checker's, shared with the candidate by CUDA IPC"
        return facts

    def close(self) -> None:
        for h in self.hosts:
            h.close()
        self.hosts = []


def protect_checker() -> bool:
    """Makes this process (the checker) non-dumpable once its hosts are forked: another process
    of the user — a host, or anything it starts — can then neither ptrace it nor open its
    /proc/<pid>/mem or /proc/<pid>/fd/* (the events file's descriptor). Not done when torch's
    allocator uses expandable segments, whose CUDA IPC opens the checker's descriptors with
    pidfd_getfd (a ptrace-mode access). Returns whether it was done."""
    from .confinement import set_dumpable

    if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").replace(" ", ""):
        set_dumpable(True)  # a worker forked by the fork server starts not dumpable
        return False
    return set_dumpable(False)


def fork_hosts(n: int = 2) -> HostSet:
    """Forks ``n`` hosts, each stopped after its hello."""
    hosts: List[CandidateHostLink] = []
    try:
        for i in range(n):
            h = CandidateHostLink(i)
            hosts.append(h)
            h.fork()
    except BaseException:
        for h in hosts:
            h.close()
        raise
    return HostSet(hosts)


def cool_down(call_again, rest_s: float = 0.2, busy_s: float = 0.02) -> None:
    """After a discarded (throttled) sample of a host: rest, then ~20 ms of back-to-back calls,
    each made by ``call_again()`` (prepared and verified by the worker, synchronised by the host)."""
    time.sleep(rest_s)
    t0 = time.perf_counter()
    for _ in range(100000):
        call_again()
        if time.perf_counter() - t0 > busy_s:
            break
