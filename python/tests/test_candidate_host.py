"""Unit under test: the process split of the Python worker (kloop_worker.remote_side,
candidate_host, shared_buffers, host_link, and the worker's seam): the candidate runs in a
candidate host forked from the worker, never holds the job or the events file, cannot patch the
reference or the checker's clock, cannot forge the results channel, cannot leave its work to a
thread, and its crash is its own failure. Whole jobs run through ``python -m kloop_worker`` (as
kloop starts it) or in this process (``run_job``), on tests/fixtures/python_numpy (numpy only).
The torch paths are skipped without torch (CPU memfds) or without a CUDA device (CUDA IPC)."""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

from kloop_worker import confinement, host_link
from kloop_worker.main import run_job
from kloop_worker.protocol import EventWriter, parse_job

from .test_timed_call_protocol import FIXTURE, bench_item, failed, failures, fwd_call, manifest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = [{"id": 0, "call": 0, "trial": 0, "seed": 5}, {"id": 1, "call": 0, "trial": 1, "seed": 6}]

try:
    import torch

    HAVE_TORCH = True
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:
    HAVE_TORCH = HAVE_CUDA = False


def job_dict(tmp, phase, candidate, base=None, gate=(), **item):
    cand_lib, _ = manifest(tmp, candidate if os.path.isabs(candidate) else os.path.join(FIXTURE, candidate))
    ref_lib, _ = manifest(tmp, os.path.join(FIXTURE, "ref.py"))
    base_lib = manifest(tmp, os.path.join(FIXTURE, base))[0] if base else ""
    return {
        "schema_version": 1, "phase": phase, "candidate_lib": cand_lib, "reference_lib": ref_lib,
        "base_lib": base_lib, "candidate_device": "python", "reference_device": "python", "evict_bytes": 0,
        "calls": [fwd_call()], "gate": list(gate), "bench": [] if phase == "gate" else [bench_item(**item)],
    }


def write_candidate(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return path


class WorkerRun:
    """``python -m kloop_worker --job --events`` as kloop runs it, in a scratch directory."""

    def __init__(self, phase, candidate, base=None, gate=(), env=None, timeout=120, **item):
        self.tmp = tempfile.mkdtemp(prefix="kloop-host-")
        self.job_path = os.path.join(self.tmp, "gate_job.json")
        self.events_path = os.path.join(self.tmp, "gate_events.jsonl")
        with open(self.job_path, "w", encoding="utf-8") as f:
            json.dump(job_dict(self.tmp, phase, candidate, base, gate, **item), f)
        e = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONUNBUFFERED="1", KLOOP_TEST_DIR=self.tmp)
        e.update(env or {})
        p = subprocess.run([sys.executable, "-m", "kloop_worker", "--job", self.job_path, "--events", self.events_path],
                           cwd=self.tmp, env=e, capture_output=True, text=True, timeout=timeout)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        with open(self.events_path, encoding="utf-8") as f:
            self.lines = f.read().splitlines()
        self.events = [json.loads(line) for line in self.lines]

    def all(self, name):
        return [e for e in self.events if e.get("event") == name]

    def one(self, name):
        found = self.all(name)
        assert len(found) == 1, (name, self.events, self.err[-3000:])
        return found[0]

    def isolation(self):
        return self.one("start")["candidate_device"].get("isolation")

    def read(self, name):
        with open(os.path.join(self.tmp, name), encoding="utf-8") as f:
            return json.load(f)


class InProcessRun:
    """run_job in this process (the hosts are forked from it)."""

    def __init__(self, phase, candidate, base=None, gate=(), split=None, **item):
        self.tmp = tempfile.mkdtemp(prefix="kloop-host-")
        job = parse_job(job_dict(self.tmp, phase, candidate, base, gate, **item))
        path = os.path.join(self.tmp, "events.jsonl")
        events = EventWriter(path)
        cwd = os.getcwd()
        os.chdir(self.tmp)
        try:
            self.rc = run_job(job, events, split=split)
        finally:
            os.chdir(cwd)
            events.close()
        with open(path, encoding="utf-8") as f:
            self.events = [json.loads(line) for line in f]

    def one(self, name):
        found = [e for e in self.events if e.get("event") == name]
        assert len(found) == 1, (name, self.events)
        return found[0]


PROBE = """
    import json, os
    from _good import bwd as rmsnorm_bwd
    from _good import fwd

    def _record():
        fds = {}
        for n in os.listdir("/proc/self/fd"):
            try:
                fds[n] = os.readlink("/proc/self/fd/" + n)
            except OSError:
                pass
        kinds = set()
        import gc
        for o in gc.get_objects():
            kinds.add(type(o).__name__)
        facts = {"pid": os.getpid(), "ppid": os.getppid(), "fds": fds,
                 "has_job_objects": sorted(kinds & {"Job", "GateCase", "BenchItem", "EventWriter", "CheckDraw"})}
        print("KLOOP-PROBE " + json.dumps(facts), flush=True)  # the host's stdout: the runner log

    def rmsnorm_fwd(x, w, y, rstd, eps):
        _record()
        fwd(x, w, y, rstd, eps)
"""


def probe_records(run):
    """What probes printed (a confined host cannot write the run's directory)."""
    return [json.loads(line[len("KLOOP-PROBE "):]) for line in run.out.splitlines() if line.startswith("KLOOP-PROBE ")]


class SeparateProcessTest(unittest.TestCase):
    def probe_run(self, **kw):
        tmp = tempfile.mkdtemp(prefix="kloop-probe-")
        # The probe imports the fixture's _good.py: it lives next to it for the test's duration.
        cand = os.path.join(FIXTURE, "broken", "_probe_%d_%s.py" % (os.getpid(), os.path.basename(tmp)))
        with open(cand, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(PROBE))
        try:
            return WorkerRun("gate", cand, gate=GATE, **kw)
        finally:
            os.remove(cand)

    def test_candidate_runs_in_a_child_that_holds_neither_job_nor_events(self):
        r = self.probe_run()
        self.assertEqual(r.rc, 0, r.err)
        start = r.one("start")
        iso = r.isolation()
        self.assertEqual(iso["process"], "separate")
        self.assertEqual(iso["confined"], confinement.landlock_abi() > 0, iso)  # seccomp holds on x86-64 Linux
        self.assertTrue(iso["hosts"][0]["confinement"]["seccomp"], iso)
        self.assertEqual(len(iso["hosts"]), 1)
        cal = iso["hosts"][0]["timer_calibration"]
        self.assertEqual(cal["calls"], 48)
        self.assertGreater(cal["overhead_median_s"], 0)
        self.assertLessEqual(cal["overhead_median_s"], cal["overhead_p90_s"])
        self.assertLessEqual(cal["overhead_p90_s"], cal["overhead_max_s"])
        records = probe_records(r)
        self.assertGreater(len(records), 0)
        for rec in records:
            self.assertNotEqual(rec["pid"], start["pid"])  # not the checker
            self.assertEqual(rec["ppid"], start["pid"])  # its child
            self.assertEqual(rec["pid"], iso["hosts"][0]["pid"])
            targets = list(rec["fds"].values())
            self.assertFalse([t for t in targets if "events" in t or "job" in t], rec["fds"])
            # stdin, stdout, stderr, its socket, the shared buffers (Python's mmap keeps a
            # descriptor of each) and the probe's own listing: nothing else.
            others = {n: t for n, t in rec["fds"].items()
                      if n not in ("0", "1", "2") and not t.startswith("socket:") and "/memfd:kloop-buffer-" not in t}
            self.assertLessEqual(len(others), 1, rec["fds"])
            self.assertEqual(len([t for t in rec["fds"].values() if t.startswith("socket:")]), 1, rec["fds"])
            self.assertEqual(rec["has_job_objects"], [])
        for res in r.all("case_result"):
            self.assertFalse(failed(res), res)

    def test_single_process_when_switched_off(self):
        r = self.probe_run(env={"KLOOP_PYTHON_SPLIT": "0"})
        self.assertEqual(r.rc, 0, r.err)
        start = r.one("start")
        self.assertNotIn("isolation", start["candidate_device"])  # the orchestrator reads "shared"
        for rec in probe_records(r):
            self.assertEqual(rec["pid"], start["pid"])
            self.assertIn("Job", rec["has_job_objects"])


class HonestCandidateTest(unittest.TestCase):
    def test_gate_and_bench_pass_with_windows(self):
        r = WorkerRun("bench", "versions/v0_numpy.py")
        self.assertEqual(r.rc, 0, r.err)
        res = r.one("bench_result")
        self.assertNotIn("error", res)
        self.assertEqual(failures(res["checks"]), [])
        windows = [i["window_s"] for i in res["sample_info"]]
        self.assertEqual(len(windows), len(res["samples_s"]))
        # Every sample lies inside the checker's window around it.
        for s, w in zip(res["samples_s"], windows):
            self.assertLessEqual(s, w)
        g = WorkerRun("gate", "versions/v0_numpy.py", gate=GATE)
        self.assertEqual(g.rc, 0, g.err)
        self.assertFalse(any(failed(c) for c in g.all("case_result")))
        self.assertEqual(g.events[-1], {"event": "done"})

    def test_op_times_account_for_every_sample(self):
        tmp = tempfile.mkdtemp(prefix="kloop-op-times-")
        path = os.path.join(tmp, "ops.jsonl")
        r = WorkerRun("bench", "versions/v0_numpy.py", env={"KLOOP_OP_TIMES": path})
        self.assertEqual(r.rc, 0, r.err)
        res = r.one("bench_result")
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(len(lines), 1)  # the worker's; its forked hosts write nothing
        ops = lines[0]["ops"]
        self.assertEqual(lines[0]["runner"], "python")
        samples, warm = len(res["samples_s"]), res["warmup_calls"]
        # Every warm-up call, sample and the final check is one timed request to the host.
        self.assertEqual(ops["host:time"]["count"], warm + samples + 1 + 48)  # + the calibration
        self.assertEqual(ops["phase:prepare"]["count"], warm + samples + 1)
        self.assertEqual(ops["phase:checked_call"]["count"], len(res["checks"]))
        self.assertEqual(ops["phase:reference"]["count"], len(res["checks"]))
        self.assertEqual(ops["phase:bench_item"]["count"], 1)
        # The warm-up calls are inside phase:warmup; every op carries its longest single time.
        self.assertGreaterEqual(ops["phase:warmup"]["seconds"], ops["phase:warmup"]["max_s"])
        self.assertLessEqual(ops["host:time"]["max_s"], ops["host:time"]["seconds"])
        # The host's own totals come back under in-host0: one serve:time per timed request.
        self.assertEqual(ops["in-host0:serve:time"]["count"], ops["host:time"]["count"])
        self.assertEqual(ops["in-host0:serve:flush"]["count"], ops["host:flush"]["count"])
        self.assertLessEqual(ops["in-host0:serve:time"]["seconds"], ops["host:time"]["seconds"])
        self.assertNotIn("host:op_times", [k for k in ops if k.startswith("in-host")])
        # Phases contain what runs inside them.
        self.assertLessEqual(ops["phase:compare"]["seconds"], ops["phase:checked_call"]["seconds"])
        self.assertLessEqual(ops["phase:bench_item"]["seconds"], lines[0]["lifetime_s"])
        # Unset: nothing is written.
        WorkerRun("bench", "versions/v0_numpy.py", env={"KLOOP_OP_TIMES": ""})
        with open(path, encoding="utf-8") as f:
            self.assertEqual(len(f.readlines()), 1)

    def test_ab_uses_two_hosts(self):
        r = WorkerRun("ab", "versions/v0_numpy.py", base="versions/v1_seed_form.py")
        self.assertEqual(r.rc, 0, r.err)
        iso = r.isolation()
        pids = [h["pid"] for h in iso["hosts"]]
        self.assertEqual(len(pids), 2)
        self.assertEqual(len(set(pids + [r.one("start")["pid"]])), 3)
        for h in iso["hosts"]:
            self.assertEqual(h["timer_calibration"]["calls"], 48)
        res = r.one("ab_result")
        self.assertEqual(len(res["candidate_windows_s"]), len(res["candidate_samples_s"]))
        self.assertEqual(len(res["base_windows_s"]), len(res["base_samples_s"]))
        self.assertEqual(failures(res["base_checks"]) + failures(res["candidate_checks"]), [])

    def test_in_process_job_splits_too(self):
        r = InProcessRun("ab", "versions/v0_numpy.py", base="versions/v0_numpy.py")
        self.assertEqual(r.rc, 0)
        self.assertEqual(len(r.one("start")["candidate_device"]["isolation"]["hosts"]), 2)


def judge_timer(samples, windows, calibration):
    """measure::judge_timer (src/measure/timer_agreement.cpp) with its constants: True = pass."""
    for s, w in zip(samples, windows):
        if s > w * 1.01 + 5e-6:
            return False
    gaps = sorted(w - s for s, w in zip(samples, windows))
    low = gaps[0] if len(gaps) < 10 else gaps[int((len(gaps) - 1) * 0.1)]
    spread = max(0.0, calibration["overhead_p90_s"] - calibration["overhead_median_s"])
    rel = 0.25 if len(gaps) < 10 else 0.10
    allowed = (calibration["overhead_p90_s"] + 3 * spread + calibration.get("slack_s", 100e-6)
               + rel * statistics.median(samples))
    return low <= allowed


class HostileCandidateTest(unittest.TestCase):
    def test_patching_the_reference_does_not_change_the_verdict(self):
        r = WorkerRun("gate", "broken/patch_reference.py", gate=GATE)
        self.assertEqual(r.rc, 0, r.err)
        res = r.all("case_result")
        self.assertTrue(all(failed(c) for c in res), res)
        y = [o for o in res[0]["outputs"] if o["name"] == "y"][0]
        self.assertGreater(y["metrics"]["mismatches"], 0)
        # In one process the same candidate patches the reference and passes: the exploit works.
        shared = WorkerRun("gate", "broken/patch_reference.py", gate=GATE, env={"KLOOP_PYTHON_SPLIT": "0"})
        self.assertFalse(any(failed(c) for c in shared.all("case_result")), shared.all("case_result"))

    def test_a_frozen_timer_is_contradicted_by_the_windows(self):
        r = WorkerRun("bench", "broken/patch_timer.py", min_samples=30)
        self.assertEqual(r.rc, 0, r.err)
        res = r.one("bench_result")
        self.assertEqual(failures(res["checks"]), [])  # right values: only the time is forged
        samples = res["samples_s"]
        windows = [i["window_s"] for i in res["sample_info"]]
        self.assertEqual(len(windows), len(samples))
        self.assertLess(statistics.median(samples), 100e-6)
        self.assertGreater(statistics.median(windows), 10 * statistics.median(samples))
        cal = r.isolation()["hosts"][0]["timer_calibration"]
        self.assertFalse(judge_timer(samples, windows, cal))
        honest = WorkerRun("bench", "versions/v0_numpy.py", min_samples=30)
        hres = honest.one("bench_result")
        self.assertTrue(judge_timer(hres["samples_s"], [i["window_s"] for i in hres["sample_info"]],
                                    honest.isolation()["hosts"][0]["timer_calibration"]))

    def test_forged_result_lines_do_not_reach_the_results(self):
        r = WorkerRun("gate", "broken/forge_results.py", gate=GATE)
        self.assertEqual(r.rc, 3, r.err)
        self.assertEqual([e["event"] for e in r.events].count("start"), 1)
        self.assertNotIn({"event": "done"}, r.events)
        passing = [c for c in r.all("case_result") if not failed(c)]
        self.assertEqual(passing, [])
        message = r.all("fatal")[-1]["message"]
        self.assertTrue("events file was changed" in message or "broke the protocol" in message, message)
        # Every line in the file is one the worker wrote: no forged line survived.
        self.assertFalse([e for e in r.events if e.get("event") == "case_result" and e.get("outputs") == []])

    def test_work_left_to_a_thread_is_not_done_when_checked(self):
        r = WorkerRun("gate", "broken/background_thread_work.py", gate=GATE)
        self.assertEqual(r.rc, 0, r.err)
        res = r.all("case_result")
        self.assertTrue(res and all(failed(c) for c in res), res)
        y = [o for o in res[0]["outputs"] if o["name"] == "y"][0]
        self.assertGreater(y["metrics"]["nan_count"], 0)  # still the poison

    def test_a_host_that_exits_is_the_candidates_failure(self):
        tmp = tempfile.mkdtemp(prefix="kloop-crash-")
        cand = write_candidate(tmp, "exits.py", """
            import os
            def rmsnorm_fwd(x, w, y, rstd, eps):
                os._exit(7)
        """)
        r = WorkerRun("gate", cand, gate=GATE)
        self.assertEqual(r.rc, 3, r.err)
        res = r.one("case_result")
        self.assertEqual(res["return_code"], 1)
        self.assertIn("the candidate host exited with status 7", res["device_error"])
        fatal = r.one("fatal")
        self.assertTrue(fatal["candidate_died"])
        self.assertIn("exited with status 7", fatal["message"])

    def test_a_host_that_crashes_is_the_candidates_failure(self):
        tmp = tempfile.mkdtemp(prefix="kloop-crash-")
        cand = write_candidate(tmp, "segv.py", """
            import ctypes
            def rmsnorm_fwd(x, w, y, rstd, eps):
                ctypes.string_at(0)
        """)
        r = WorkerRun("bench", cand)
        self.assertEqual(r.rc, 3, r.err)
        res = r.one("bench_result")
        self.assertEqual(res["error"], "warmup")
        self.assertIn("killed by SIGSEGV (signal 11)", res["device_error"])
        self.assertTrue(r.one("fatal")["candidate_died"])

    def test_a_crash_at_import_is_a_fatal_load(self):
        tmp = tempfile.mkdtemp(prefix="kloop-crash-")
        cand = write_candidate(tmp, "dies_at_import.py", """
            import os, signal
            os.kill(os.getpid(), signal.SIGKILL)
            def rmsnorm_fwd(x, w, y, rstd, eps):
                pass
        """)
        r = WorkerRun("gate", cand, gate=GATE)
        self.assertEqual(r.rc, 3, r.err)
        fatal = r.one("fatal")
        self.assertIn("killed by SIGKILL", fatal["message"])
        self.assertIn("while loading the candidate", fatal["message"])

    def test_a_load_error_in_the_host_is_reported_as_before(self):
        tmp = tempfile.mkdtemp(prefix="kloop-load-")
        cand = write_candidate(tmp, "no_entry.py", "x = 1\n")
        r = WorkerRun("gate", cand, gate=GATE)
        self.assertEqual(r.rc, 3)
        self.assertIn("has no function 'rmsnorm_fwd'", r.one("fatal")["message"])


class EventsFileTest(unittest.TestCase):
    def test_a_file_changed_by_another_writer_is_noticed_and_restored(self):
        tmp = tempfile.mkdtemp(prefix="kloop-events-")
        path = os.path.join(tmp, "gate_events.jsonl")
        ev = EventWriter(path)
        ev.write({"event": "start"})
        self.assertTrue(ev.untouched())
        with open(path, "a", encoding="utf-8") as f:
            f.write('{"event":"done"}\n')
        self.assertFalse(ev.untouched())
        ev.restore()
        self.assertTrue(ev.untouched())
        os.replace(os.path.join(tmp, "gate_events.jsonl"), os.path.join(tmp, "moved"))
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"event":"start"}\n')
        self.assertFalse(ev.untouched())  # same bytes, another file at the path
        ev.restore()
        ev.write({"event": "done"})
        ev.close()
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), '{"event":"start"}\n{"event":"done"}\n')

    def test_the_device_setting_is_read_without_reading_the_job_here(self):
        from kloop_worker import main

        tmp = tempfile.mkdtemp(prefix="kloop-peek-")
        job = os.path.join(tmp, "job.json")
        with open(job, "w", encoding="utf-8") as f:
            json.dump(job_dict(tmp, "gate", "versions/v0_numpy.py"), f)
        self.assertEqual(main._device_setting_of(job), "cpu")
        self.assertEqual(main._device_setting_of(os.path.join(tmp, "missing.json")), "auto")


class LinkTest(unittest.TestCase):
    def test_a_reply_that_is_not_a_message_breaks_the_protocol(self):
        a, b = host_link.make_pair()
        b.send(b'{"event":"done"}')
        with self.assertRaises(host_link.ProtocolBroken):
            host_link.receive_reply(a)
        b.send(b'.[1, 2]')
        with self.assertRaises(host_link.ProtocolBroken):
            host_link.receive_reply(a)

    def test_large_messages_travel_in_chunks_and_descriptors_ride_along(self):
        a, b = host_link.make_pair()
        r, w = os.pipe()
        big = {"census": "k" * (5 * host_link.CHUNK)}
        sender = threading.Thread(target=host_link.send_request, args=(a, big, [w]))
        sender.start()
        got, fds = host_link.receive_request(b)
        sender.join()
        self.assertEqual(got, big)
        self.assertEqual(len(fds), 1)
        os.write(fds[0], b"x")
        self.assertEqual(os.read(r, 1), b"x")
        sender = threading.Thread(target=host_link.send_reply, args=(b, big))
        sender.start()
        self.assertEqual(host_link.receive_reply(a), big)
        sender.join()

    def test_descriptors_from_a_host_are_discarded(self):
        a, b = host_link.make_pair()
        r, w = os.pipe()
        b.sendmsg([b'.{"ok": true}'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__("array").array("i", [w]))))])
        before = set(os.listdir("/proc/self/fd"))
        self.assertEqual(host_link.receive_reply(a), {"ok": True})
        self.assertEqual(set(os.listdir("/proc/self/fd")) - before, set())


@unittest.skipUnless(HAVE_TORCH, "needs torch (CPU tensors in memfds)")
class TorchCpuSharingTest(unittest.TestCase):
    def test_a_host_sees_the_checkers_torch_cpu_buffers(self):
        from kloop_worker.shared_buffers import HostBuffers, SharedAllocator
        from kloop_worker.tensors import TorchBackend

        backend = TorchBackend(torch, "cpu")
        alloc = SharedAllocator(backend)
        block = alloc.empty_u8(4096)
        block.fill_(7)
        req, fds = alloc.map_request(alloc.id_of(block))
        host = HostBuffers(backend)
        host.map(req, [os.dup(fds[0])])
        view = host.view(req["buffer"], 256, "f32", [4])
        view.fill_(1.5)
        self.assertEqual(float(block[256:272].view(torch.float32)[0]), 1.5)


TORCH_REFERENCE = """
    import torch
    def rmsnorm_fwd_ref(x, w, y, rstd, eps):
        xd = x.double()
        r = 1.0 / torch.sqrt((xd * xd).mean(dim=1) + eps)
        y.copy_((xd * r[:, None] * w.double()).float())
        rstd.copy_(r.float())
"""

TORCH_CANDIDATE = """
    import os
    import torch
    def rmsnorm_fwd(x, w, y, rstd, eps):
        print("KLOOP-HOST-PID %d" % os.getpid(), flush=True)
        r = torch.rsqrt((x * x).mean(dim=1) + eps)
        rstd.copy_(r)
        torch.mul(x * r[:, None], w, out=y)
"""


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device (CUDA IPC)")
class CudaSharingTest(unittest.TestCase):
    """A torch-on-CUDA job: the hosts were forked before the checker made its CUDA context; the
    checker's device buffers reach the host by CUDA IPC."""

    def test_a_cuda_candidate_runs_in_its_host_on_the_checkers_buffers(self):
        tmp = tempfile.mkdtemp(prefix="kloop-cuda-")
        src = os.path.join(tmp, "src")  # apart from the job: a confined host cannot read the job's directory
        tmp = os.path.join(tmp, "run")
        os.makedirs(src)
        os.makedirs(tmp)
        ref = write_candidate(src, "ref_torch.py", TORCH_REFERENCE)
        cand = write_candidate(src, "cand_torch.py", TORCH_CANDIDATE)
        job = job_dict(tmp, "bench", cand, gate=(), min_samples=20)
        for key, src in (("candidate_lib", cand), ("reference_lib", ref)):
            with open(job[key], "w", encoding="utf-8") as f:
                json.dump({"source": src, "snapshot": src, "module": "kloop_cuda_" + key, "device": "cuda"}, f)
        job["gate"] = GATE
        job_path, events_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "events.jsonl")
        for phase in ("gate", "bench"):
            job["phase"] = phase
            with open(job_path, "w", encoding="utf-8") as f:
                json.dump(job, f)
            p = subprocess.run([sys.executable, "-m", "kloop_worker", "--job", job_path, "--events", events_path],
                               cwd=tmp, env=dict(os.environ, PYTHONPATH=PYTHON_DIR, KLOOP_TEST_DIR=tmp),
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            with open(events_path, encoding="utf-8") as f:
                events = [json.loads(line) for line in f]
            start = events[0]
            self.assertEqual(start["candidate_device"]["isolation"]["process"], "separate")
            self.assertIn("CUDA IPC", start["candidate_device"]["isolation"]["device_buffers"])
            self.assertTrue(start["candidate_device"]["isolation"]["confined"], start["candidate_device"]["isolation"])
            host_pids = {int(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("KLOOP-HOST-PID ")}
            self.assertTrue(host_pids, p.stdout[-3000:])
            self.assertNotIn(start["pid"], host_pids)
            for e in events:
                if e.get("event") == "case_result":
                    self.assertFalse(failed(e), e)
                if e.get("event") == "bench_result":
                    self.assertNotIn("error", e)
                    self.assertEqual(failures(e["checks"]), [])
                    self.assertEqual(len(e["sample_info"]), len(e["samples_s"]))
                    self.assertTrue(all("window_s" in i for i in e["sample_info"]))


if __name__ == "__main__":
    unittest.main()
