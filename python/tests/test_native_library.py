"""Unit under test: kloop_worker.native_library — a native candidate of a Python op: the library
loaded only with the SHA-256 kloop recorded, each entry called through kloop's C ABI
(include/kloop/kernel.h) with the plan's tensors, params and dims, its return code passed on.

The library is compiled here by the C++ compiler (skipped without one) from a source that
includes the real kernel.h, so a layout that drifts from the header fails these tests."""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from kloop_worker.candidate import LoadError, bind_candidate, import_library
from kloop_worker.native_library import sha256_of
from kloop_worker.protocol import CallPlan, Param, TensorPlan, Tolerance
from kloop_worker.tensors import CallBuffers, NumpyBackend

ABI_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "include")
CXX = shutil.which(os.environ.get("KLOOP_CXX", "c++")) or shutil.which("g++")

SOURCE = r"""
#include "kloop/kernel.h"
#include <math.h>

/* y = k * x + offset(dim N) ; echoes what it was given into `seen` (an i64 output). */
extern "C" int scale_fwd(const kl_args* a) {
    if (a->abi_version != KL_ABI_VERSION) return 90;
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    const kl_tensor* seen = kl_output(a, "seen");
    if (!x || !y || !seen) return KL_ERR_BAD_ARGS;
    if (x->device != KL_HOST || a->stream != 0) return 91;
    const double k = kl_param_f64(a, "k", -1.0);
    const int64_t n = kl_dim_value(a, "N", -1);
    const float* xs = (const float*)x->data;
    float* ys = (float*)y->data;
    for (int64_t i = 0; i < x->shape[0] * x->shape[1]; ++i) ys[i] = (float)(k * xs[i]) + (float)n;
    int64_t* s = (int64_t*)seen->data;
    s[0] = a->n_inputs; s[1] = a->n_outputs; s[2] = x->ndim; s[3] = x->shape[1]; s[4] = x->strides[0];
    s[5] = x->dtype; s[6] = seen->dtype; s[7] = kl_param_i64(a, "count", -1);
    return 0;
}

extern "C" int scale_bwd(const kl_args* a) { (void)a; return 7; }
"""


def plan(mode="fwd"):
    return CallPlan(
        mode=mode,
        shape="s",
        entry="scale_" + mode,
        reference_entry="scale_ref",
        dims={"N": 3, "M": 2},
        inputs=[TensorPlan("x", "f32", [3, 2], "normal(0, 1)")],
        outputs=[TensorPlan("y", "f32", [3, 2], tol=Tolerance(atol=0.0)), TensorPlan("seen", "i64", [8])],
        params=[Param("k", 2.5, False), Param("count", 4.0, True)],
    )


@unittest.skipIf(CXX is None, "no C++ compiler")
class NativeLibraryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kloop-native-test-")
        src = os.path.join(cls.dir, "scale.cpp")
        with open(src, "w") as f:
            f.write(SOURCE)
        cls.lib = os.path.join(cls.dir, "scale.cpp.so")
        subprocess.run([CXX, "-shared", "-fPIC", "-O1", "-I" + ABI_DIR, "-o", cls.lib, src], check=True)
        cls.manifest = {"source": src, "snapshot": cls.lib, "module": "m", "native": True,
                        "native_sha256": sha256_of(cls.lib)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def bufs(self, p):
        b = NumpyBackend()
        bufs = CallBuffers(p, b)
        bufs.fill_inputs(1)
        return b, bufs

    def test_entry_gets_tensors_params_dims_through_the_abi(self):
        p = plan()
        b, bufs = self.bufs(p)
        callee = bind_candidate(import_library(self.manifest), self.manifest, p, b, ["fwd", "bwd"])
        self.assertEqual(callee.finish(callee.invoke(callee.kwargs(bufs)), bufs), 0)
        x = bufs.inputs[0].view
        np.testing.assert_array_equal(bufs.outputs[0].view, (2.5 * x.astype(np.float64)).astype(np.float32) + 3)
        # inputs, outputs, ndim, shape[1], strides[0] (elements), dtype f32, dtype i64, integer param
        self.assertEqual(list(bufs.outputs[1].view), [1, 2, 2, 2, 2, 0, 5, 4])

    def test_a_non_zero_return_is_the_return_code(self):
        p = plan("bwd")
        b, bufs = self.bufs(p)
        callee = bind_candidate(import_library(self.manifest), self.manifest, p, b, ["fwd", "bwd"])
        self.assertEqual(callee.finish(callee.invoke(callee.kwargs(bufs)), bufs), 7)

    def test_a_missing_entry_is_a_load_error_naming_it(self):
        p = plan()
        p.entry = "scale_other"
        with self.assertRaisesRegex(LoadError, "exports no function 'scale_other'"):
            bind_candidate(import_library(self.manifest), self.manifest, p, NumpyBackend(), ["fwd"])

    def test_a_library_that_is_not_the_one_built_is_refused(self):
        forged = dict(self.manifest, native_sha256="0" * 64)
        with self.assertRaisesRegex(LoadError, "not the one kloop built"):
            import_library(forged)
        unrecorded = dict(self.manifest, native_sha256="")
        with self.assertRaisesRegex(LoadError, "not the one kloop built"):
            import_library(unrecorded)
        missing = dict(self.manifest, snapshot=self.lib + ".gone")
        with self.assertRaisesRegex(LoadError, "cannot read"):
            import_library(missing)


if __name__ == "__main__":
    unittest.main()
