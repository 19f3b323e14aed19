"""Unit under test: kloop_worker.cuda_ipc — the checker's device buffers shared with a candidate
host by CUDA IPC. Without a GPU: the page rounding and the refusal of a malformed handle; with
one: a buffer written by another process through its handle, and nothing past its pages shared."""
import os
import subprocess
import sys
import unittest

from kloop_worker import cuda_ipc

try:
    import torch

    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - the CPU-only CI has no torch
    HAVE_CUDA = False

HERE = os.path.dirname(os.path.abspath(__file__))


class RoundingTest(unittest.TestCase):
    def test_whole_pages_and_at_least_one(self):
        self.assertEqual(cuda_ipc.rounded(0), cuda_ipc.GRANULE)
        self.assertEqual(cuda_ipc.rounded(1), cuda_ipc.GRANULE)
        self.assertEqual(cuda_ipc.rounded(cuda_ipc.GRANULE), cuda_ipc.GRANULE)
        self.assertEqual(cuda_ipc.rounded(cuda_ipc.GRANULE + 1), 2 * cuda_ipc.GRANULE)


class HandleTest(unittest.TestCase):
    def test_a_malformed_handle_is_refused_before_the_driver_is_asked(self):
        with self.assertRaises(cuda_ipc.CudaIpcError):
            cuda_ipc.Imported("ab" * 10, 16)
        with self.assertRaises(ValueError):
            cuda_ipc.Imported("not hex", 16)


CHILD = r"""
import sys, torch
sys.path.insert(0, %r)
from kloop_worker import cuda_ipc
torch.zeros(1, device="cuda")
cuda_ipc.use_device(0)
t = cuda_ipc.Imported(sys.argv[1], int(sys.argv[2])).tensor(torch, torch.device("cuda"))
assert int(t.sum()) == t.numel(), int(t.sum())
t.fill_(7)
torch.cuda.synchronize()
"""


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device")
class SharingTest(unittest.TestCase):
    def test_another_process_reads_and_writes_the_buffer(self):
        cuda_ipc.use_device(0)
        n = 3 << 20
        mine = cuda_ipc.Allocation(n)
        t = mine.tensor(torch, torch.device("cuda"))
        self.assertEqual(t.numel(), n)
        self.assertEqual(t.data_ptr() % cuda_ipc.GRANULE, 0)
        t.fill_(1)
        torch.cuda.synchronize()
        code = CHILD % os.path.dirname(HERE)
        p = subprocess.run([sys.executable, "-c", code, mine.export(), str(n)], capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        self.assertEqual(int((t == 7).sum()), n)

    def test_two_buffers_never_share_a_page(self):
        cuda_ipc.use_device(0)
        a, b = cuda_ipc.Allocation(4096), cuda_ipc.Allocation(4096)
        self.assertGreaterEqual(abs(a.ptr - b.ptr), cuda_ipc.GRANULE)
        self.assertEqual(a.ptr % cuda_ipc.GRANULE, 0)


if __name__ == "__main__":
    unittest.main()
