"""Unit under test: kloop_worker.process_threads — per-thread CPU clocks and the idle threads a
one-process A/B lets stay."""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kloop_worker.process_threads import IdleThreads, StillRunning, thread_cpu_ns, thread_ids  # noqa: E402


def start(target):
    started = threading.Event()

    def run():
        started.set()
        target()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    started.wait()
    return t


def gone(tid, wait_s=10.0):
    """Whether thread `tid`'s CPU clock stops being readable within `wait_s`."""
    until = time.monotonic() + wait_s
    while thread_cpu_ns(tid) is not None:
        if time.monotonic() > until:
            return False
        time.sleep(0.01)
    return True


class ThreadCpuTest(unittest.TestCase):
    def test_a_sleeping_thread_uses_no_cpu_and_a_spinning_one_does(self):
        stop = threading.Event()
        sleeper = start(lambda: stop.wait(30))
        spin_on = threading.Event()

        def spin():
            spin_on.wait(30)
            while not stop.is_set():
                sum(range(1000))

        spinner = start(spin)
        self.addCleanup(stop.set)
        time.sleep(0.05)
        a, b = thread_cpu_ns(sleeper.native_id), thread_cpu_ns(spinner.native_id)
        spin_on.set()
        time.sleep(0.2)
        self.assertEqual(thread_cpu_ns(sleeper.native_id), a)
        self.assertGreater(thread_cpu_ns(spinner.native_id), b + 1_000_000)  # > 1 ms in 200 ms
        stop.set()
        spinner.join()
        sleeper.join()
        # gone: Python's join returns before the kernel has reaped the thread (a busy machine widens it)
        self.assertTrue(gone(spinner.native_id), "the joined thread's CPU clock is still readable after 10 s")


class IdleThreadsTest(unittest.TestCase):
    def setUp(self):
        self.stop = threading.Event()
        self.addCleanup(self.stop.set)

    def test_quiet_threads_are_adopted_and_seen_when_they_run(self):
        idle = IdleThreads(thread_ids(), quiet_s=0.05, wait_s=2.0)
        wake = threading.Event()

        def pool_worker():
            wake.wait(30)
            while not self.stop.is_set():
                sum(range(1000))

        workers = [start(pool_worker) for _ in range(3)]
        n, names = idle.adopt("importing side 'base'", "first seen after `import pool` in m")
        self.assertEqual(n, 3)
        self.assertTrue(names.endswith("x3"), names)
        self.assertEqual(idle.notes, [{"during": "importing side 'base'", "threads": names,
                                       "quiet_after_s": idle.notes[0]["quiet_after_s"],
                                       "origin": "first seen after `import pool` in m"}])
        self.assertIsNone(idle.first_run())
        self.assertEqual(idle.unknown(), set())
        self.assertEqual(idle.adopt("again"), (0, ""))  # nothing new
        wake.set()
        time.sleep(0.05)
        ran = idle.first_run()
        self.assertRegex(ran, r"\(tid \d+, started by importing side 'base'\): \d+\.\d{3} ms of CPU$")
        self.assertIn(int(ran.split("(tid ")[1].split(",")[0]), {w.native_id for w in workers})

    def test_a_thread_that_keeps_running_is_refused_after_the_wait(self):
        idle = IdleThreads(thread_ids(), quiet_s=0.05, wait_s=0.3)

        def spin():
            while not self.stop.is_set():
                sum(range(1000))

        start(spin)
        t0 = time.monotonic()
        with self.assertRaises(StillRunning) as e:
            idle.adopt("importing side 'candidate'")
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        self.assertRegex(str(e.exception), r"^1 of them still running after \d+\.\d s \(\S+ \d+: \d+\.\d ms of CPU")

    def test_a_thread_that_exits_counts_as_having_run(self):
        idle = IdleThreads(thread_ids(), quiet_s=0.05, wait_s=2.0)
        t = start(lambda: self.stop.wait(30))
        self.assertEqual(idle.adopt("a warm-up call of side 'base'")[0], 1)
        self.stop.set()
        t.join()
        self.assertTrue(gone(t.native_id), "the joined thread's CPU clock is still readable after 10 s")
        self.assertRegex(idle.first_run(), r"started by a warm-up call of side 'base'\) exited$")


if __name__ == "__main__":
    unittest.main()
