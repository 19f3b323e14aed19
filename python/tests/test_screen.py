"""Unit under test: kloop_worker.screen — the static source screen (python_source_screen)."""
import unittest

from kloop_worker.screen import screen_source, summarize


def rules(src):
    return sorted({(f["rule"], f["severity"]) for f in screen_source(src)})


class ScreenTest(unittest.TestCase):
    def test_a_plain_triton_kernel_is_clean(self):
        src = (
            "import torch\nimport triton\nimport triton.language as tl\n"
            "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
            "def rmsnorm_fwd(x, w, y, rstd, eps):\n    k[(1,)](x, x.numel(), BLOCK=128)\n"
        )
        self.assertEqual(rules(src), [])
        self.assertEqual(summarize(screen_source(src))["status"], "pass")

    def test_timers(self):
        self.assertIn(("timer", "fail"), rules("import time\ndef f():\n    return time.perf_counter()\n"))
        self.assertIn(("timer", "fail"), rules("from time import perf_counter as pc\npc()\n"))
        self.assertIn(("timer", "fail"), rules("import torch\ne = torch.cuda.Event(enable_timing=True)\n"))
        self.assertEqual(rules("import time\ntime.sleep(0)\n"), [])

    def test_native_code_processes_and_introspection(self):
        self.assertIn(("native_code", "fail"), rules("import ctypes\n"))
        self.assertIn(("process_creation", "fail"), rules("import os\nos.system('x')\n"))
        self.assertIn(("process_creation", "fail"), rules("import os\nos.execv('x', [])\n"))
        self.assertIn(("process_creation", "fail"), rules("import subprocess\n"))
        self.assertIn(("worker_introspection", "fail"), rules("import sys\nsys._getframe(1)\n"))
        self.assertIn(("worker_introspection", "fail"), rules("import kloop_worker.metrics\n"))
        self.assertIn(("dynamic_code", "fail"), rules("m = __import__('c' + 'types')\n"))
        self.assertIn(("profiler_interface", "fail"), rules("import pynvml\n"))

    def test_numeric_flags(self):
        self.assertIn(("numeric_flags", "fail"), rules("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"))
        self.assertIn(("numeric_flags", "fail"), rules("import torch\ntorch.set_float32_matmul_precision('high')\n"))
        self.assertIn(("numeric_flags", "fail"), rules("import torch\nsetattr(torch.backends.cudnn, 'allow_tf32', True)\n"))

    def test_threads_only_warn(self):
        f = screen_source("import threading\n")
        self.assertEqual(summarize(f)["status"], "warn")


if __name__ == "__main__":
    unittest.main()
