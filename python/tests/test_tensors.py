"""Unit under test: kloop_worker.tensors — guarded buffers (kloop's layout, canaries and poison)
and the buffers of one call (fills, pristine copies, changed inputs, red zones)."""
import unittest

import numpy as np

from kloop_worker.protocol import CallPlan, Param, TensorPlan, Tolerance
from kloop_worker.tensors import (
    CallBuffers,
    GuardedBuffer,
    NumpyBackend,
    bf16_bits_to_f64,
    canary,
    f64_to_bf16_bits,
    outputs_bitwise_equal,
)


def plan():
    return CallPlan(
        mode="fwd",
        shape="s",
        entry="f",
        reference_entry="f_ref",
        dims={"N": 8, "D": 5},
        inputs=[
            TensorPlan("x", "f32", [8, 5], "normal(0, 1)"),
            TensorPlan("c", "i32", [4], "cu_seqlens(N)"),
        ],
        outputs=[TensorPlan("y", "f32", [8, 5], tol=Tolerance(atol=0.0))],
        params=[Param("eps", 1e-6, False)],
    )


class GuardedBufferTest(unittest.TestCase):
    def test_layout_and_alignment(self):
        g = GuardedBuffer(NumpyBackend(), TensorPlan("y", "f32", [3, 7]))
        self.assertEqual(g.front, 256)
        self.assertEqual(g.view.shape, (3, 7))
        self.assertEqual(g.view.ctypes.data % 64, 0)
        self.assertEqual(g.block.size, 256 + 84 + 256)
        self.assertIsNone(g.first_redzone_violation())

    def test_canary_bytes_are_never_zero_or_ff(self):
        c = canary(1000, 0x35)
        self.assertTrue(((c >= 0x80) & (c <= 0xFE)).all())

    def test_poison_is_the_canonical_nan_and_ff_for_integers(self):
        b = NumpyBackend()
        f = GuardedBuffer(b, TensorPlan("y", "f32", [4]))
        f.poison()
        self.assertTrue((f.data.view(np.uint32) == 0x7FC00000).all())
        i = GuardedBuffer(b, TensorPlan("y", "i64", [4]))
        i.poison()
        self.assertTrue((i.view == -1).all())
        h = GuardedBuffer(b, TensorPlan("y", "bf16", [4])) if b._bf16 is not None else None
        if h is not None:
            h.poison()
            self.assertTrue((h.data.view(np.uint16) == 0x7FC0).all())

    def test_red_zone_offsets_like_the_native_runner(self):
        g = GuardedBuffer(NumpyBackend(), TensorPlan("y", "f32", [4]))
        g.block[g.front + 16] = 0  # one byte past the 16 data bytes
        self.assertEqual(g.first_redzone_violation(), 16)
        g.reset_redzones()
        g.block[g.front - 1] = 0  # the byte just before the data
        self.assertEqual(g.first_redzone_violation(), -1)


class CallBuffersTest(unittest.TestCase):
    def test_same_seed_same_values_new_buffers_new_addresses(self):
        a, b = CallBuffers(plan(), NumpyBackend()), CallBuffers(plan(), NumpyBackend())
        a.fill_inputs(7)
        b.fill_inputs(7)
        self.assertTrue(np.array_equal(a.inputs[0].view, b.inputs[0].view))
        self.assertNotEqual(a.inputs[0].view.ctypes.data, b.inputs[0].view.ctypes.data)
        b.fill_inputs(8)
        self.assertFalse(np.array_equal(a.inputs[0].view, b.inputs[0].view))

    def test_cu_seqlens_are_valid_offsets(self):
        a = CallBuffers(plan(), NumpyBackend())
        for seed in range(20):
            a.fill_inputs(seed)
            c = a.inputs[1].view
            self.assertEqual(c[0], 0)
            self.assertEqual(c[-1], 8)
            self.assertTrue((np.diff(c) > 0).all())

    def test_changed_inputs_and_red_zones_are_found(self):
        a = CallBuffers(plan(), NumpyBackend())
        a.fill_inputs(1)
        self.assertEqual(a.find_changed_inputs(), [])
        a.inputs[0].view[2, 1] += 1.0
        self.assertEqual(a.find_changed_inputs(), [{"name": "x", "first_changed": 11}])
        a.outputs[0].block[a.outputs[0].front + a.outputs[0].nbytes] ^= 0x01
        self.assertEqual(a.find_red_zone_violations(), [{"name": "y", "byte_offset": 160}])

    def test_shifted_fill_changes_every_position_and_keeps_the_values(self):
        a, b = CallBuffers(plan(), NumpyBackend()), CallBuffers(plan(), NumpyBackend())
        a.fill_inputs(3)
        b.fill_inputs_shifted(a, 4)
        x, y = a.inputs[0].view.reshape(-1), b.inputs[0].view.reshape(-1)
        self.assertTrue(np.array_equal(np.sort(x), np.sort(y)))
        self.assertFalse(np.array_equal(x, y))

    def test_outputs_bitwise_equal(self):
        a, b = CallBuffers(plan(), NumpyBackend()), CallBuffers(plan(), NumpyBackend())
        a.outputs[0].view[...] = 1.0
        b.outputs[0].view[...] = 1.0
        self.assertTrue(outputs_bitwise_equal(a, b))
        b.outputs[0].view[0, 0] = -0.0 if a.outputs[0].view[0, 0] == 0 else 2.0
        self.assertFalse(outputs_bitwise_equal(a, b))


class Bf16Test(unittest.TestCase):
    def test_round_to_nearest_even_and_nan(self):
        bits = f64_to_bf16_bits(np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, np.nan, -2.0]))
        self.assertEqual(list(bits[:3]), [0x3F80, 0x3F80, 0x3F82])
        self.assertEqual(bits[3], 0x7FC0)
        self.assertEqual(bf16_bits_to_f64(bits[4:5])[0], -2.0)

    def test_matches_exact_rounding_on_every_kind_of_float32(self):
        # Arbitrary float32 bit patterns (NaNs, infinities, subnormals, both signs), rounded by
        # an independent integer-exact form: bf16 = round-half-even of the top 16 bits.
        rng = np.random.default_rng(7)
        f32 = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
        with np.errstate(invalid="ignore"):
            got = f64_to_bf16_bits(f32.astype(np.float64))
        for b32, g in zip(f32.view(np.uint32)[:20000].tolist(), got[:20000].tolist()):
            f = np.uint32(b32).view(np.float32)
            if np.isnan(f):
                self.assertEqual(g, 0x7FC0)
                continue
            hi, lo = b32 >> 16, b32 & 0xFFFF
            want = hi + (1 if lo > 0x8000 or (lo == 0x8000 and hi & 1) else 0)
            self.assertEqual(g, want & 0xFFFF, hex(b32))
        # Values kept by the conversion: the largest finite float32 rounds to +inf in bf16.
        self.assertEqual(f64_to_bf16_bits(np.array([3.4028234663852886e38]))[0], 0x7F80)
        self.assertEqual(f64_to_bf16_bits(np.array([-np.inf]))[0], 0xFF80)


if __name__ == "__main__":
    unittest.main()
