"""Unit under test: kloop_worker.fork_server and fork_client — a worker started through the fork
server is, to its caller, the process a fresh interpreter would have been: the same output,
exit status and signal; it runs as a child of the server (not of the caller) with the caller's
environment; a killed client takes its worker down; anything the server cannot take (another
environment, no server) falls back to a fresh interpreter.

The worker command used is the build probe (``-m kloop_worker --probe``, numpy only); the probed
"candidate" is a file whose import does what a test needs (record its parent, exit, crash, hang).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(PYTHON_DIR, "kloop_worker", "fork_client.py")


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _read(path):
    with open(path) as f:
        return f.read()


def _wait_until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


class ForkServerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kloop-fork-test-")
        self.sock_path = os.path.join(self.dir, "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.sock_path)
        listener.listen(16)
        self.env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")
        with open(os.path.join(self.dir, "server.log"), "w") as log:
            self.server = subprocess.Popen(
                [sys.executable, "-m", "kloop_worker.fork_server", "--listen-fd", str(listener.fileno())],
                stdin=subprocess.PIPE, stderr=log, pass_fds=(listener.fileno(),), env=self.env, cwd=self.dir)
        listener.close()

    def tearDown(self):
        if self.server.poll() is None:
            self.server.stdin.close()
            self.server.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def source(self, body):
        path = os.path.join(self.dir, "cand_%d.py" % len(os.listdir(self.dir)))
        with open(path, "w") as f:
            f.write(textwrap.dedent(body))
        return path

    def probe(self, source, env=None, socket_path=None, wait=True):
        out = os.path.join(self.dir, "facts_%s.json" % os.path.basename(source))
        argv = [sys.executable, "-m", "kloop_worker", "--probe", "--source", source, "--snapshot", source,
                "--module", "kloop_test_mod", "--device", "cpu", "--role", "reference", "--out", out]
        p = subprocess.Popen([sys.executable, "-I", "-S", CLIENT, socket_path or self.sock_path] + argv,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or self.env, cwd=self.dir)
        if not wait:
            return p, out
        stdout, stderr = p.communicate(timeout=60)
        return p.returncode, stdout.decode(), stderr.decode(), out

    def test_the_worker_runs_as_a_child_of_the_server_with_the_callers_streams(self):
        src = self.source("""
            import os, sys
            open(os.path.join(os.path.dirname(__file__), "parent"), "w").write(str(os.getppid()))
            print("to stdout"); sys.stderr.write("to stderr\\n")
            def run_kernel():
                pass
        """)
        rc, out, err, facts = self.probe(src)
        self.assertEqual(rc, 0, err)
        self.assertEqual(int(_read(os.path.join(self.dir, "parent"))), self.server.pid)
        self.assertIn("to stdout", out)
        self.assertIn("to stderr", err)
        with open(facts) as f:
            self.assertIn("run_kernel", json.load(f)["functions"])

    def test_another_environment_gets_a_fresh_interpreter(self):
        src = self.source("""
            import os
            open(os.path.join(os.path.dirname(__file__), "parent"), "w").write(str(os.getppid()))
        """)
        rc, _, err, facts = self.probe(src, env=dict(self.env, SOME_SETTING="read at import, perhaps"))
        self.assertEqual(rc, 0, err)
        self.assertNotEqual(int(_read(os.path.join(self.dir, "parent"))), self.server.pid)
        self.assertTrue(os.path.exists(facts))

    def test_per_process_variables_reach_the_child(self):
        src = self.source("""
            import os
            open(os.path.join(os.path.dirname(__file__), "seen"), "w").write(os.environ.get("TRITON_CACHE_DIR", "-") + " " + str(os.getppid()))
        """)
        rc, _, err, _ = self.probe(src, env=dict(self.env, TRITON_CACHE_DIR="/tmp/kloop-test-triton-cache"))
        self.assertEqual(rc, 0, err)
        value, parent = _read(os.path.join(self.dir, "seen")).split()
        self.assertEqual(value, "/tmp/kloop-test-triton-cache")
        self.assertEqual(int(parent), self.server.pid)

    def test_exit_status_is_the_workers(self):
        rc, _, _, _ = self.probe(self.source("import os\nos._exit(7)\n"))
        self.assertEqual(rc, 7)

    def test_a_crash_signal_is_the_workers(self):
        rc, _, _, _ = self.probe(self.source("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"))
        self.assertEqual(rc, -signal.SIGSEGV)

    def sleeping_worker(self):
        """A client whose worker writes its pid and sleeps; (client, worker pid) once it runs."""
        pid_file = os.path.join(self.dir, "worker_pid")
        src = self.source("""
            import os, time
            open(%r, "w").write(str(os.getpid()))
            time.sleep(60)
        """ % pid_file)
        client, _ = self.probe(src, wait=False)
        self.assertTrue(_wait_until(lambda: os.path.exists(pid_file) and os.path.getsize(pid_file) > 0))
        return client, int(_read(pid_file))

    def test_killing_the_client_kills_the_worker(self):
        client, worker = self.sleeping_worker()
        self.assertTrue(_pid_alive(worker))
        client.kill()
        client.wait(10)
        self.assertTrue(_wait_until(lambda: not _pid_alive(worker)), "the worker outlived its client")
        self.assertIsNone(self.server.poll(), "the server must survive a client's death")

    def test_without_a_server_the_client_starts_a_fresh_interpreter(self):
        src = self.source("import os\nopen(os.path.join(os.path.dirname(__file__), 'ran'), 'w').write('yes')\n")
        rc, _, err, facts = self.probe(src, socket_path=os.path.join(self.dir, "no-such-socket"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(_read(os.path.join(self.dir, "ran")), "yes")
        self.assertTrue(os.path.exists(facts))

    def test_end_of_stdin_ends_the_server_and_its_workers(self):
        client, worker = self.sleeping_worker()
        self.server.stdin.close()
        self.assertEqual(self.server.wait(10), 0)
        self.assertTrue(_wait_until(lambda: not _pid_alive(worker)))
        client.wait(10)
        self.assertNotEqual(client.returncode, 0)  # it lost its worker's status: not a success


class LeaveTheForkTest(unittest.TestCase):
    """A forked worker that needs Triton's interpreter (triton already imported by the server
    with it off) execs a fresh interpreter with its own command line; nothing else does."""

    def setUp(self):
        import types

        from kloop_worker import main as main_mod

        self.main = main_mod
        self.calls = []
        self.saved = (main_mod.FORKED, os.execv, sys.modules.get("triton"))
        os.execv = lambda path, argv: self.calls.append((path, argv))
        sys.modules.setdefault("triton", types.ModuleType("triton"))

    def tearDown(self):
        self.main.FORKED, os.execv, triton = self.saved
        if triton is None:
            sys.modules.pop("triton", None)

    def test_a_forked_worker_that_needs_the_interpreter_starts_afresh(self):
        self.main.FORKED = True
        self.main.leave_the_fork_if_needed({"triton_interpret": True}, ["--job", "j.json", "--events", "e"])
        self.assertEqual(self.calls, [(sys.executable, [sys.executable, "-m", "kloop_worker", "--job", "j.json",
                                                        "--events", "e"])])

    def test_otherwise_the_worker_stays(self):
        self.main.FORKED = True
        self.main.leave_the_fork_if_needed({"triton_interpret": False}, ["--probe"])
        self.main.FORKED = False
        self.main.leave_the_fork_if_needed({"triton_interpret": True}, ["--probe"])
        self.assertEqual(self.calls, [])


class RefusalTest(unittest.TestCase):
    def test_only_per_process_variables_may_differ(self):
        from kloop_worker.fork_server import refusal

        env = {"PATH": "/bin", "PYTHONPATH": "/x"}
        base = {"argv": [sys.executable, "-m", "kloop_worker", "--job", "j"], "executable": sys.executable,
                "cwd": "/", "env": dict(env, TRITON_CACHE_DIR="/c")}
        self.assertIsNone(refusal(base, env))
        self.assertIn("PYTHONPATH", refusal(dict(base, env=dict(env, PYTHONPATH="/y")), env))
        self.assertIn("LD_PRELOAD", refusal(dict(base, env=dict(env, LD_PRELOAD="x.so")), env))
        self.assertIn("interpreter", refusal(dict(base, executable="/other/python"), env))
        self.assertIn("command line", refusal(dict(base, argv=["sh", "-c", "true"]), env))


if __name__ == "__main__":
    unittest.main()
