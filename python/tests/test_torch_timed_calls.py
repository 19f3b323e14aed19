"""Unit under test: the bench loop's per-call preparation and verification with torch tensors on
CUDA (kloop_worker.tensors.TorchBackend.all_equal / scatter_bytes / poison_view, CallBuffers
.prepare_call / intact / change_scattered, and a whole bench job through CudaTimer): damage is
found on the device, a scattered change touches at most 16 elements, hostile candidates are
reported as with numpy. Skipped unless torch sees a CUDA device (run on the GPU machine)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from kloop_worker.protocol import CallPlan, TensorPlan, Tolerance, parse_job

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import torch

    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # the dev box and CI: no torch
    HAVE_CUDA = False


def plan():
    return CallPlan(
        mode="fwd", shape="s", entry="f", reference_entry="f_ref", dims={"N": 64, "D": 256},
        inputs=[
            TensorPlan("x", "bf16", [64, 256], "normal(0, 1)"),
            TensorPlan("w", "f32", [250], "uniform(0.5, 1.5)"),
            TensorPlan("c", "i32", [5], "cu_seqlens(N)"),
        ],
        outputs=[TensorPlan("y", "f16", [64, 256], tol=Tolerance(atol=0.0)), TensorPlan("k", "i64", [3])],
        params=[],
    )


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device")
class TorchCallBuffersTest(unittest.TestCase):
    def buffers(self):
        from kloop_worker.tensors import CallBuffers, TorchBackend

        b = CallBuffers(plan(), TorchBackend(torch, "cuda"))
        b.fill_inputs(3)
        b.prepare_call()
        return b

    def test_prepared_buffers_are_intact_and_poisoned(self):
        b = self.buffers()
        self.assertTrue(b.intact())
        self.assertTrue(torch.isnan(b.outputs[0].view).all().item())
        self.assertTrue((b.outputs[1].view == -1).all().item())

    def test_damage_is_found_on_the_device(self):
        b = self.buffers()
        b.inputs[0].view[1, 2] += 1
        self.assertFalse(b.intact())
        self.assertEqual(b.find_changed_inputs(), [{"name": "x", "first_changed": 258}])
        b.restore_inputs()
        b.prepare_call()
        self.assertTrue(b.intact())
        b.inputs[1].block[b.inputs[1].front + b.inputs[1].nbytes + 3] = 0  # odd-sized tensor's back zone
        self.assertFalse(b.intact())
        self.assertEqual(b.find_red_zone_violations(), [{"name": "w", "byte_offset": 1003}])
        b.prepare_call()
        self.assertTrue(b.intact())

    def test_scattered_change_touches_at_most_16_elements(self):
        b = self.buffers()
        before = [x.data.clone() for x in b.inputs]
        self.assertEqual(b.change_scattered(17), 16)
        changed = 0
        for x, old, t in zip(b.inputs, before, b.plan.inputs):
            e = x.elem
            diff = (x.data.view(-1, e) != old.view(-1, e)).any(dim=1)
            changed += int(diff.sum().item())
            if t.name == "c":
                self.assertEqual(int(diff.sum().item()), 0)
        self.assertTrue(1 <= changed <= 16, changed)
        self.assertFalse(b.intact())  # until the call is prepared
        b.prepare_call()
        self.assertTrue(b.intact())


REF = '''
import torch
def double_ref(x, y):
    y.copy_((x.double() * 2).float())
'''
HONEST = '''
def double(x, y):
    y.copy_(x * 2)
'''
RED_ZONE = '''
import torch
calls = 0
def double(x, y):
    global calls
    calls += 1
    y.copy_(x * 2)
    if calls > 64 and calls % 3 == 0:
        torch.as_strided(y, (y.numel() + 1,), (1,))[-1] = 0.0
'''
FINGERPRINT = '''
_cache = {}
def double(x, y):
    key = bytes(x[:: max(1, x.numel() // 64)][:64].cpu().numpy().tobytes())
    if key in _cache:
        y.copy_(_cache[key])
        return
    y.copy_(x * 2)
    _cache[key] = y.clone()
'''


@unittest.skipUnless(HAVE_CUDA, "needs torch with a CUDA device")
class TorchBenchJobTest(unittest.TestCase):
    def run_bench(self, candidate, check_every, samples=120):
        """The bench job in a fresh worker process (python -m kloop_worker), as kloop runs it: its
        hosts are forked before it touches CUDA, which this test process already has."""
        root = tempfile.mkdtemp(prefix="kloop-pyw-torch-")
        src_dir, tmp = os.path.join(root, "src"), os.path.join(root, "run")  # a confined host cannot read the job's directory
        os.makedirs(src_dir)
        os.makedirs(tmp)
        libs = []
        for k, text in (("cand", candidate), ("ref", REF)):
            src = os.path.join(src_dir, "%s.py" % k)
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            m = os.path.join(tmp, "%s.json" % k)
            with open(m, "w", encoding="utf-8") as f:
                json.dump({"source": src, "snapshot": src, "module": "kloop_torch_%s_%d" % (k, id(text)),
                           "device": "cuda"}, f)
            libs.append(m)
        n = 1 << 16
        job = {
            "schema_version": 1, "phase": "bench", "candidate_lib": libs[0], "reference_lib": libs[1],
            "base_lib": "", "candidate_device": "python", "reference_device": "python", "evict_bytes": 0,
            "calls": [{"mode": "fwd", "shape": "s", "entry": "double", "reference_entry": "double_ref",
                       "dims": {"N": n}, "params": [],
                       "inputs": [{"name": "x", "dtype": "f32", "shape": [n], "init": "normal(0, 1)"}],
                       "outputs": [{"name": "y", "dtype": "f32", "shape": [n], "tolerance": {"atol": 0, "rtol": 0}}]}],
            "gate": [],
            "bench": [{"id": 0, "call": 0, "seed": 5, "input_sets": 3, "flush_bytes": 0, "check_every": check_every,
                       "tail_checks": 16, "warmup_min_calls": 3, "warmup_min_s": 0.0,
                       "stop": {"min_samples": samples, "min_time_s": 0.0, "target_rel_stdev": 1.0,
                                "max_time_s": 60.0, "max_samples": samples}}],
        }
        parse_job(job)  # the test's own job is well-formed
        job_path, path = os.path.join(tmp, "job.json"), os.path.join(tmp, "events.jsonl")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)
        p = subprocess.run([sys.executable, "-m", "kloop_worker", "--job", job_path, "--events", path], cwd=tmp,
                           env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        with open(path, encoding="utf-8") as f:
            events = [json.loads(line) for line in f]
        return [e for e in events if e.get("event") == "bench_result"][0]

    @staticmethod
    def failed(c):
        return bool(c.get("red_zone_violations") or c.get("changed_inputs") or
                    any(o["metrics"]["mismatches"] > 0 for o in c.get("outputs", [])))

    def test_honest_passes(self):
        res = self.run_bench(HONEST, 2)
        self.assertEqual(len(res["samples_s"]), 120)
        self.assertEqual([c for c in res["checks"] if self.failed(c)], [])

    def test_red_zone_damage_in_an_unchecked_call_is_reported(self):
        res = self.run_bench(RED_ZONE, 1000)
        self.assertEqual(res["stop_reason"], "integrity_failure")
        self.assertEqual(res["checks"][-1]["red_zone_violations"], [{"name": "y", "byte_offset": (1 << 16) * 4}])

    def test_fingerprint_cache_is_caught(self):
        res = self.run_bench(FINGERPRINT, 1)
        self.assertTrue(any(self.failed(c) for c in res["checks"]), res["checks"])


if __name__ == "__main__":
    sys.exit(unittest.main())
