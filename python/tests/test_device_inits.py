"""Unit under test: kloop_worker.inits.generate_torch and the torch-on-CUDA fill path of
kloop_worker.tensors — inputs drawn on the GPU: reproducible per seed, fresh across seeds, from the
spec's distribution, rounded to the tensor's dtype; const and arange bit-identical to the host.
Skipped unless torch sees a CUDA device (run on the GPU machine: bench/h200_session.sh)."""
import unittest

import numpy as np

from kloop_worker import inits
from kloop_worker.protocol import CallPlan, Param, TensorPlan, Tolerance

try:
    import torch

    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # the dev box and CI: no torch
    HAVE_CUDA = False


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device")
class GenerateTorchTest(unittest.TestCase):
    def draw(self, text, n, dtype, seed):
        out = torch.empty(n, dtype=dtype, device="cuda")
        self.assertTrue(inits.generate_torch(inits.parse(text), out, seed))
        return out

    def test_same_seed_same_bits_other_seed_other_values(self):
        a = self.draw("normal(0, 1)", 1 << 20, torch.bfloat16, 1234)
        b = self.draw("normal(0, 1)", 1 << 20, torch.bfloat16, 1234)
        c = self.draw("normal(0, 1)", 1 << 20, torch.bfloat16, 1235)
        self.assertTrue(torch.equal(a.view(torch.int16), b.view(torch.int16)))
        self.assertGreater(int((a != c).sum().item()), (1 << 20) // 2)

    def test_normal_and_uniform_follow_their_parameters(self):
        x = self.draw("normal(2, 3)", 1 << 22, torch.float32, 7).double()
        self.assertAlmostEqual(x.mean().item(), 2.0, delta=0.01)
        self.assertAlmostEqual(x.std().item(), 3.0, delta=0.01)
        u = self.draw("uniform(0.5, 1.5)", 1 << 22, torch.float32, 8).double()
        self.assertGreaterEqual(u.min().item(), 0.5)
        self.assertLessEqual(u.max().item(), 1.5)
        self.assertAlmostEqual(u.mean().item(), 1.0, delta=0.01)
        ls = self.draw("logsigmoid_normal(0, 1)", 1 << 20, torch.float32, 9)
        self.assertLess(ls.max().item(), 0.0)  # log of a probability

    def test_bf16_values_are_the_float32_draws_rounded_to_nearest(self):
        g = torch.Generator(device="cuda")
        g.manual_seed(55)
        ref = torch.randn(4096, generator=g, dtype=torch.float32, device="cuda").to(torch.bfloat16)
        got = self.draw("normal(0, 1)", 4096, torch.bfloat16, 55)
        self.assertTrue(torch.equal(ref.view(torch.int16), got.view(torch.int16)))

    def test_const_and_arange_match_the_host_path_bit_for_bit(self):
        for text in ("const(0.3)", "arange(-2.5, 0.001)"):
            for dtype, np_bits in ((torch.float32, np.float32), (torch.float64, np.float64)):
                dev = self.draw(text, 100000, dtype, 1).cpu().numpy()
                host = inits.generate(inits.parse(text), 100000, False, {}, 1).astype(np_bits)
                self.assertTrue(np.array_equal(dev.view(np.uint8), host.view(np.uint8)), (text, dtype))

    def test_host_only_forms_are_declined(self):
        out = torch.zeros(16, dtype=torch.float32, device="cuda")
        self.assertFalse(inits.generate_torch(inits.parse("randint(0, 5)"), out, 3))
        self.assertEqual(int(out.abs().sum().item()), 0)


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device")
class CudaCallBuffersTest(unittest.TestCase):
    def test_fill_draws_on_the_device_and_replays_per_seed(self):
        from kloop_worker.tensors import CallBuffers, TorchBackend

        plan = CallPlan(
            mode="fwd", shape="s", entry="f", reference_entry="f_ref", dims={"N": 64, "D": 96},
            inputs=[TensorPlan("x", "bf16", [64, 96], "normal(0, 1)"),
                    TensorPlan("k", "i32", [10], "randint(0, 7)")],
            outputs=[TensorPlan("y", "bf16", [64, 96], tol=Tolerance(atol=0.0))],
            params=[Param("eps", 1e-6, False)],
        )
        be = TorchBackend(torch, "cuda")
        a, b = CallBuffers(plan, be), CallBuffers(plan, be)
        a.fill_inputs(99)
        b.fill_inputs(99)
        for x, y in zip(a.inputs, b.inputs):
            self.assertTrue(torch.equal(x.data, y.data))
        self.assertEqual(a.find_changed_inputs(), [])
        # x came from the device generator: the tensor's own seed reproduces it directly.
        from kloop_worker.protocol import derive_seed

        direct = torch.empty(64 * 96, dtype=torch.bfloat16, device="cuda")
        inits.generate_torch(inits.parse("normal(0, 1)"), direct, derive_seed(99, "x"))
        self.assertTrue(torch.equal(a.inputs[0].view.reshape(-1).view(torch.int16), direct.view(torch.int16)))
        # The integer input still comes from the host generator, inside its range.
        k = a.inputs[1].view.cpu().numpy()
        self.assertTrue(((k >= 0) & (k < 7)).all())


if __name__ == "__main__":
    unittest.main()
