"""Unit under test: the confinement of the Python candidate host (kloop_worker.confinement, applied
by remote_side before the candidate is imported). Candidates written as an adversary would try
to read the job, write the events file, another library's cache or their own source, reach the
checker's memory, signal the checker, join its process group or open a socket; and, as Triton
must, run a child process and write temporary files. Whole jobs run through
``python -m kloop_worker`` on tests/fixtures/python_numpy (numpy only). The file-system
assertions need Landlock and are skipped on a kernel without it; seccomp holds on any x86-64
Linux."""
import json
import os
import platform
import shutil
import tempfile
import textwrap
import unittest

from kloop_worker import confinement

from .test_candidate_host import GATE, WorkerRun, failed
from .test_timed_call_protocol import FIXTURE

LANDLOCK = confinement.landlock_abi() > 0
X86_LINUX = platform.machine() == "x86_64" and os.uname().sysname == "Linux"

# Reports what it could reach through its stdout (the runner log), then computes honestly.
PROBE = """
    import json, os, socket, subprocess, tempfile
    from _good import bwd as rmsnorm_bwd
    from _good import fwd

    def _try(what):
        try:
            what()
            return "ok"
        except OSError as e:
            return type(e).__name__

    def _checker_args():
        with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
            argv = f.read().decode().split("\\0")
        return argv[argv.index("--job") + 1], argv[argv.index("--events") + 1]

    def _write(path):
        with open(path, "a") as f:
            f.write("x")

    def _tmp_file():
        with tempfile.NamedTemporaryFile(dir=None) as f:
            f.write(b"ptx")

    def _mem():
        fd = os.open("/proc/%d/mem" % os.getppid(), os.O_RDWR)
        os.close(fd)

    done = []

    def rmsnorm_fwd(x, w, y, rstd, eps):
        if not done:
            job, events = _checker_args()
            facts = {
                "read_job": _try(lambda: open(job).read()),
                "write_events": _try(lambda: _write(events)),
                "list_run_dir": _try(lambda: os.listdir(os.path.dirname(job))),
                "write_source_dir": _try(lambda: _write(os.path.join(os.path.dirname(__file__), "planted.py"))),
                "write_reference_cache": _try(lambda: _write(os.environ["KLOOP_TEST_OTHER_CACHE"] + "/planted")),
                "checker_mem": _try(_mem),
                "tmp_file": _try(_tmp_file),
                "child_process": _try(lambda: subprocess.run(["/bin/true"], check=True)),
                "socket": _try(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                "join_checker_group": _try(lambda: os.setpgid(0, os.getpgid(os.getppid()))),
                "signal_self": _try(lambda: os.kill(os.getpid(), 0)),
            }
            print("KLOOP-PROBE " + json.dumps(facts), flush=True)
            done.append(1)
        fwd(x, w, y, rstd, eps)
"""

KILL_CHECKER = """
    import os, signal
    from _good import bwd as rmsnorm_bwd
    from _good import fwd

    def rmsnorm_fwd(x, w, y, rstd, eps):
        os.kill(os.getppid(), signal.SIGKILL)
        fwd(x, w, y, rstd, eps)
"""


def candidate_dir(name, text):
    """A fresh directory with the candidate and the fixture's _good.py beside it."""
    src = tempfile.mkdtemp(prefix="kloop-cand-")
    shutil.copy(os.path.join(FIXTURE, "broken", "_good.py"), src)
    path = os.path.join(src, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return path


def probe_facts(run):
    lines = [line for line in run.out.splitlines() if line.startswith("KLOOP-PROBE ")]
    assert lines, run.out[-3000:] + run.err[-3000:]
    return json.loads(lines[0][len("KLOOP-PROBE "):])


@unittest.skipUnless(X86_LINUX, "kloop's host confinement is written for Linux on x86-64")
class ConfinedHostTest(unittest.TestCase):
    def setUp(self):
        self.other_cache = tempfile.mkdtemp(prefix="kloop-other-cache-")

    def run_probe(self, env=None):
        cand = candidate_dir("probe.py", PROBE)
        e = {"KLOOP_TEST_OTHER_CACHE": self.other_cache}
        e.update(env or {})
        return WorkerRun("gate", cand, gate=GATE, env=e)

    def test_the_host_reaches_nothing_that_judges_it_and_still_computes(self):
        r = self.run_probe()
        self.assertEqual(r.rc, 0, r.err)
        facts = probe_facts(r)
        # seccomp: no socket, no joining the checker's group; itself it may signal.
        self.assertNotEqual(facts["socket"], "ok", facts)
        self.assertNotEqual(facts["join_checker_group"], "ok", facts)
        self.assertEqual(facts["signal_self"], "ok", facts)
        # The checker is not dumpable: its memory is closed with or without Landlock.
        self.assertNotEqual(facts["checker_mem"], "ok", facts)
        # What Triton needs: a child process, temporary files.
        self.assertEqual(facts["child_process"], "ok", facts)
        self.assertEqual(facts["tmp_file"], "ok", facts)
        if LANDLOCK:
            for key in ("read_job", "write_events", "list_run_dir", "write_source_dir", "write_reference_cache"):
                self.assertNotEqual(facts[key], "ok", (key, facts))
            self.assertTrue(r.isolation()["confined"], r.isolation())
        for res in r.all("case_result"):
            self.assertFalse(failed(res), res)
        self.assertFalse(os.listdir(self.other_cache))

    def test_kloop_unconfined_applies_nothing_and_says_so(self):
        r = self.run_probe(env={"KLOOP_UNCONFINED": "1"})
        self.assertEqual(r.rc, 0, r.err)
        facts = probe_facts(r)
        self.assertEqual(facts["socket"], "ok", facts)
        self.assertEqual(facts["read_job"], "ok", facts)
        iso = r.isolation()
        self.assertFalse(iso["confined"])
        self.assertIn("KLOOP_UNCONFINED=1", iso["detail"])

    def test_signalling_the_checker_is_the_candidates_own_death(self):
        r = WorkerRun("gate", candidate_dir("kill_checker.py", KILL_CHECKER), gate=GATE)
        # The checker survived: it reports the call that killed the host, and the host's death.
        self.assertEqual(r.rc, 3, r.err)
        results = r.all("case_result")
        self.assertTrue(results and all(failed(c) for c in results), results)
        self.assertIn("killed by SIGSYS", results[0]["device_error"])
        fatal = r.all("fatal")[-1]
        self.assertTrue(fatal.get("candidate_died"), fatal)

    def test_forged_events_are_restored_when_the_host_is_not_confined(self):
        r = WorkerRun("gate", "broken/forge_results.py", gate=GATE, env={"KLOOP_UNCONFINED": "1"})
        self.assertEqual(r.rc, 3, r.err)
        self.assertNotIn({"event": "done"}, r.events)
        self.assertEqual([c for c in r.all("case_result") if not failed(c)], [])
        messages = " ".join(e["message"] for e in r.all("fatal"))
        self.assertTrue("events file was changed" in messages or "broke the protocol" in messages, messages)


# Starts a child when imported, and tries to start one in a session of its own.
STARTS_CHILDREN = """
    import os, subprocess
    from _good import bwd as rmsnorm_bwd
    from _good import fwd as rmsnorm_fwd

    _child = subprocess.Popen(["sleep", "300"])
    try:
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        _escape = "ok"
    except OSError as e:
        _escape = type(e).__name__
    with open(os.path.join(os.environ["TMPDIR"], "facts"), "w") as f:
        f.write("%d %s" % (_child.pid, _escape))
"""


def process_state(pid):
    """The state letter of /proc/<pid>/stat, or "" for a process that is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def state_within(pid, wanted, seconds=10.0):
    """The process's state once it is one of ``wanted``, or the last one seen after ``seconds``."""
    import time

    deadline = time.monotonic() + seconds
    state = process_state(pid)
    while state not in wanted and time.monotonic() < deadline:
        time.sleep(0.005)
        state = process_state(pid)
    return state


@unittest.skipUnless(X86_LINUX, "kloop's host confinement is written for Linux on x86-64")
class HostProcessGroupTest(unittest.TestCase):
    def test_what_the_host_starts_runs_only_with_it_and_dies_with_it(self):
        from kloop_worker import environment, remote_side
        from kloop_worker.candidate import read_manifest
        from kloop_worker.shared_buffers import SharedAllocator

        from .test_timed_call_protocol import manifest

        src = candidate_dir("starts_children.py", STARTS_CHILDREN)
        lib, _ = manifest(tempfile.mkdtemp(prefix="kloop-lib-"), src)
        m = read_manifest(lib)
        facts = environment.resolve("cpu")
        hosts = remote_side.fork_hosts(1)
        try:
            h = hosts[0]
            hosts.attach(SharedAllocator(environment.make_backend(facts)))
            h.setup(facts, False)
            h.confine(m, [])
            h.load(m, [], ["fwd"])
            with open(os.path.join(h.tmp_dir, "facts")) as f:
                child, escape = f.read().split()
            child = int(child)
            self.assertNotEqual(escape, "ok")  # setsid is refused: nothing leaves the host's group
            # Stopped with the host after its reply (a SIGSTOP lands when the child next runs).
            self.assertEqual(state_within(child, ("T",)), "T")
            h.describe()
            self.assertEqual(state_within(child, ("T",)), "T")
        finally:
            hosts.close()
        self.assertIn(state_within(child, ("", "Z", "X")), ("", "Z", "X"))


class PolicyTest(unittest.TestCase):
    def test_no_readable_tree_holds_the_job_and_the_root_is_withheld(self):
        run = tempfile.mkdtemp(prefix="kloop-run-")
        job = os.path.join(run, "job.json")
        src = os.path.join(run, "op")  # the source beside the job: its own directory stays readable
        os.makedirs(src)
        readable, withheld = confinement.read_dirs_for({"source": os.path.join(src, "c.py"),
                                                        "snapshot": os.path.join(run, "c.py")}, [job])
        real_run = os.path.realpath(run)
        self.assertIn(os.path.realpath(src), readable)
        self.assertIn(real_run, withheld)  # the snapshot's directory holds the job
        for d in readable:
            self.assertFalse(os.path.realpath(job).startswith(d.rstrip("/") + "/"), d)
            self.assertNotEqual(d, "/")

    def test_the_filter_is_a_well_formed_program(self):
        prog = confinement.host_filter(1234).packed()
        self.assertEqual(len(prog) % 8, 0)
        code = confinement.host_filter(1234).code
        self.assertLess(len(code), 4096)  # BPF_MAXINSNS
        for i, (op, jt, jf, _k) in enumerate(code):
            if op & 0x07 == 0x05:  # a jump stays inside the program
                self.assertLess(i + 1 + max(jt, jf), len(code))
        self.assertEqual(code[-1], (0x06, 0, 0, confinement.RET_ALLOW))


if __name__ == "__main__":
    unittest.main()
