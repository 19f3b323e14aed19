"""Unit under test: kloop_worker.candidate — the two candidate forms (entry functions, the seed's
setup()/run_kernel()), return values and exception descriptions."""
import types
import unittest

import numpy as np

from kloop_worker.candidate import (
    LoadError,
    OutputError,
    bind_candidate,
    bind_reference,
    describe_exception,
)
from kloop_worker.protocol import CallPlan, Param, TensorPlan, Tolerance
from kloop_worker.tensors import CallBuffers, NumpyBackend

MANIFEST = {"source": "/op/kernel.py", "snapshot": "/cache/kernel.py", "module": "m"}


def plan(mode="fwd"):
    return CallPlan(
        mode=mode,
        shape="s",
        entry="scale_" + mode,
        reference_entry="scale_ref",
        dims={"N": 4},
        inputs=[TensorPlan("x", "f32", [4], "normal(0, 1)")],
        outputs=[TensorPlan("y", "f32", [4], tol=Tolerance(atol=0.0))],
        params=[Param("k", 2.0, False)],
    )


def module(**fns):
    return types.SimpleNamespace(**fns)


def call(callee, bufs):
    return callee.finish(callee.invoke(callee.kwargs(bufs)), bufs)


class EntryFormTest(unittest.TestCase):
    def test_tensors_params_and_dims_by_name(self):
        seen = {}

        def scale_fwd(x, y, k, N):
            seen.update(k=k, N=N)
            y[...] = x * k

        b = NumpyBackend()
        bufs = CallBuffers(plan(), b)
        bufs.fill_inputs(1)
        callee = bind_candidate(module(scale_fwd=scale_fwd), MANIFEST, plan(), b, ["fwd"])
        self.assertEqual(call(callee, bufs), 0)
        self.assertEqual(seen, {"k": 2.0, "N": 4})
        self.assertTrue(np.array_equal(bufs.outputs[0].view, bufs.inputs[0].view * 2))

    def test_missing_output_argument_is_a_load_error(self):
        with self.assertRaisesRegex(LoadError, "does not take the output 'y'"):
            bind_candidate(module(scale_fwd=lambda x: None), MANIFEST, plan(), NumpyBackend(), ["fwd"])

    def test_missing_function_names_both_forms(self):
        with self.assertRaisesRegex(LoadError, "no function 'scale_fwd'.*setup\\(\\)/run_kernel\\(\\)"):
            bind_candidate(module(), MANIFEST, plan(), NumpyBackend(), ["fwd"])

    def test_int_return_is_a_return_code_and_outputs_may_be_returned(self):
        b = NumpyBackend()
        bufs = CallBuffers(plan(), b)
        bufs.fill_inputs(1)
        rc = bind_candidate(module(scale_fwd=lambda x, y: 3), MANIFEST, plan(), b, ["fwd"])
        self.assertEqual(call(rc, bufs), 3)
        ret = bind_reference(module(scale_ref=lambda x, y, k: (x * k).astype(np.float32)), MANIFEST, plan(), b)
        self.assertEqual(call(ret, bufs), 0)
        self.assertTrue(np.array_equal(bufs.outputs[0].view, bufs.inputs[0].view * 2))

    def test_returned_outputs_are_checked(self):
        b = NumpyBackend()
        bufs = CallBuffers(plan(), b)
        bufs.fill_inputs(1)
        wrong_dtype = bind_reference(module(scale_ref=lambda x, y: x.astype(np.float64)), MANIFEST, plan(), b)
        with self.assertRaisesRegex(OutputError, "float64; the spec says f32"):
            call(wrong_dtype, bufs)
        wrong_shape = bind_reference(module(scale_ref=lambda x, y: x[:2]), MANIFEST, plan(), b)
        with self.assertRaisesRegex(OutputError, "shape \\[2\\]"):
            call(wrong_shape, bufs)


class SeedFormTest(unittest.TestCase):
    def test_setup_checks_the_interface_and_run_kernel_gets_kloops_inputs(self):
        got = {}

        def setup(N, seed=None):
            return {"inputs": {"x": np.zeros(N, np.float32)}, "outputs": ["y"]}

        def run_kernel(x, y, k=1.0):
            got["x"] = x.copy()
            y[...] = x * k

        b = NumpyBackend()
        bufs = CallBuffers(plan(), b)
        bufs.fill_inputs(5)
        callee = bind_candidate(module(setup=setup, run_kernel=run_kernel), MANIFEST, plan(), b, ["fwd"])
        self.assertEqual(call(callee, bufs), 0)
        self.assertTrue(np.array_equal(got["x"], bufs.inputs[0].view))  # not setup's zeros

    def test_setup_with_other_inputs_is_refused(self):
        def setup(N, seed=None):
            return {"inputs": {"z": np.zeros(N, np.float32)}, "outputs": []}

        with self.assertRaisesRegex(LoadError, "the spec's inputs are \\['x'\\]"):
            bind_candidate(module(setup=setup, run_kernel=lambda z: z), MANIFEST, plan(), NumpyBackend(), ["fwd"])

    def test_setup_with_another_dtype_is_refused(self):
        def setup(N, seed=None):
            return {"inputs": {"x": np.zeros(N, np.float64)}, "outputs": []}

        with self.assertRaisesRegex(LoadError, "dtype float64; the spec says f32"):
            bind_candidate(module(setup=setup, run_kernel=lambda x: x), MANIFEST, plan(), NumpyBackend(), ["fwd"])

    def test_several_modes_need_a_mode_argument(self):
        def setup(N, seed=None):
            return {"inputs": {"x": np.zeros(N, np.float32)}, "outputs": []}

        with self.assertRaisesRegex(LoadError, "must take a `mode` argument"):
            bind_candidate(module(setup=setup, run_kernel=lambda x: x), MANIFEST, plan(), NumpyBackend(), ["fwd", "bwd"])


class DescribeExceptionTest(unittest.TestCase):
    def test_last_line_and_frame(self):
        try:
            {}["bf16"]
        except KeyError as e:
            d = describe_exception(e, [__file__])
        self.assertTrue(d["text"].startswith("KeyError: 'bf16' (at test_candidate.py:"), d["text"])
        self.assertEqual(d["where"]["function"], "test_last_line_and_frame")


if __name__ == "__main__":
    unittest.main()
