"""Unit under test: the worker's bench and A/B loops against hostile candidates
(kloop_worker.worker, kloop_worker.check_draw, kloop_worker.tensors): every call prepared alike
(outputs poisoned, red zones rewritten), checked calls drawn at random, checks alternating between
a full new arrangement and a few scattered new elements, red zones and inputs verified after every
call. Runs whole bench / A/B jobs in this process on tests/fixtures/python_numpy (numpy only) and
reads the events the orchestrator would judge. The candidate runs in a candidate host (a forked
process) unless a test needs to read the candidate's module state (``split=False``, the
KLOOP_PYTHON_SPLIT=0 path); those tests' verdicts are asserted with the host too."""
import json
import os
import statistics
import sys
import tempfile
import unittest

from kloop_worker.main import run_job
from kloop_worker.protocol import EventWriter, parse_job

FIXTURE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "python_numpy"))

_serial = [0]


def manifest(tmp, source):
    """A library manifest as kloop's python "build" writes it (the snapshot is the source itself)."""
    _serial[0] += 1
    path = os.path.join(tmp, "manifest-%d.json" % _serial[0])
    m = {"source": source, "snapshot": source, "module": "kloop_test_lib_%d" % _serial[0], "device": "cpu"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f)
    return path, m["module"]


def fwd_call(n=64, d=256):
    return {
        "mode": "fwd", "shape": "n%d_d%d" % (n, d), "entry": "rmsnorm_fwd", "reference_entry": "rmsnorm_fwd_ref",
        "dims": {"N": n, "D": d},
        "inputs": [
            {"name": "x", "dtype": "f32", "shape": [n, d], "init": "normal(0, 1)"},
            {"name": "w", "dtype": "f32", "shape": [d], "init": "uniform(0.5, 1.5)"},
        ],
        "outputs": [
            {"name": "y", "dtype": "f32", "shape": [n, d], "tolerance": {"atol": 1e-5, "rtol": 1e-5}},
            {"name": "rstd", "dtype": "f32", "shape": [n], "tolerance": {"atol": 1e-6, "rtol": 1e-5}},
        ],
        "params": [{"name": "eps", "value": 1e-6, "is_integer": False}],
    }


def bench_item(seed=11, check_every=2, tail_checks=16, min_samples=60, input_sets=4, early=None, timer_min_windows=5):
    b = {
        "id": 0, "call": 0, "seed": seed, "input_sets": input_sets, "flush_bytes": 0,
        "check_every": check_every, "tail_checks": tail_checks, "warmup_min_calls": 3, "warmup_min_s": 0.0,
        "timer_min_windows": timer_min_windows,
        "stop": {"min_samples": min_samples, "min_time_s": 0.0, "target_rel_stdev": 1.0, "max_time_s": 30.0,
                 "max_samples": min_samples},
    }
    if early:
        b["early_verdict"] = early
    return b


class Run:
    """One job run in this process: its events and the candidate's module."""

    def __init__(self, phase, candidate, base=None, gate=(), split=True, **item):
        self.tmp = tempfile.mkdtemp(prefix="kloop-pyw-")
        cand_lib, self.module_name = manifest(self.tmp, os.path.join(FIXTURE, candidate))
        ref_lib, _ = manifest(self.tmp, os.path.join(FIXTURE, "ref.py"))
        base_lib = manifest(self.tmp, os.path.join(FIXTURE, base))[0] if base else ""
        job = parse_job({
            "schema_version": 1, "phase": phase, "candidate_lib": cand_lib, "reference_lib": ref_lib,
            "base_lib": base_lib, "candidate_device": "python", "reference_device": "python", "evict_bytes": 0,
            "calls": [fwd_call()], "gate": list(gate), "bench": [] if phase == "gate" else [bench_item(**item)],
        })
        path = os.path.join(self.tmp, "events.jsonl")
        events = EventWriter(path)
        try:
            self.rc = run_job(job, events, split=split)
        finally:
            events.close()
        with open(path, encoding="utf-8") as f:
            self.events = [json.loads(line) for line in f]
        self.module = sys.modules.get(self.module_name)
        assert split or self.module is not None

    def one(self, name):
        found = [e for e in self.events if e.get("event") == name]
        assert len(found) == 1, self.events
        return found[0]


def failed(check):
    """judge_call's reading of one check's facts, without the tolerance details: any non-zero
    return code, device error, red-zone damage, changed input or mismatching output."""
    if check.get("return_code", 1) != 0 or check.get("device_error"):
        return True
    if check.get("red_zone_violations") or check.get("changed_inputs"):
        return True
    return any(o["metrics"]["mismatches"] > 0 or o["metrics"]["nan_count"] > 0 for o in check.get("outputs", []))


def failures(checks):
    return [c for c in checks if failed(c)]


class BenchProtocolTest(unittest.TestCase):
    def test_honest_candidate_passes_every_check(self):
        r = Run("bench", "versions/v0_numpy.py")
        self.assertEqual(r.rc, 0)
        res = r.one("bench_result")
        self.assertNotIn("error", res)
        self.assertEqual(len(res["samples_s"]), 60)
        self.assertGreaterEqual(len(res["checks"]), 2)
        self.assertEqual(failures(res["checks"]), [])
        self.assertTrue(res["checks"][-1].get("final"))

    def test_a_cap_leaves_the_timer_check_five_windows(self):
        # A rule done after 2 samples (and a sample cap of 2): a candidate in its own host (windows
        # around its calls) is still timed five times; one sharing the worker's process (no
        # windows) stops at two.
        hosted = Run("bench", "versions/v0_numpy.py", min_samples=2).one("bench_result")
        self.assertEqual(len(hosted["samples_s"]), 5)
        self.assertTrue(all("window_s" in i for i in hosted["sample_info"]))
        shared = Run("bench", "versions/v0_numpy.py", split=False, min_samples=2).one("bench_result")
        self.assertEqual(len(shared["samples_s"]), 2)
        ab = Run("ab", "versions/v0_numpy.py", base="versions/v0_numpy.py", min_samples=2).one("ab_result")
        self.assertEqual(len(ab["base_samples_s"]), len(ab["candidate_samples_s"]))
        self.assertGreaterEqual(len(ab["base_samples_s"]), 5)
        self.assertGreaterEqual(len(ab["candidate_windows_s"]), 5)
        # The floor is the job's: the worker reads it from there, as the C++ runner does.
        three = Run("bench", "versions/v0_numpy.py", min_samples=2, timer_min_windows=3).one("bench_result")
        self.assertEqual(len(three["samples_s"]), 3)

    def test_skipping_when_the_output_is_not_poison_never_happens(self):
        r = Run("bench", "broken/skips_unless_poisoned.py", split=False)
        res = r.one("bench_result")
        self.assertEqual(r.module.skipped, 0)  # every call saw a poisoned output
        self.assertEqual(failures(res["checks"]), [])
        self.assertEqual(failures(Run("bench", "broken/skips_unless_poisoned.py").one("bench_result")["checks"]), [])

    def test_red_zone_damage_on_unchecked_calls_is_reported(self):
        r = Run("bench", "broken/red_zone_every_third.py", check_every=1000, min_samples=120)
        res = r.one("bench_result")
        bad = failures(res["checks"])
        self.assertEqual(len(bad), 1, res["checks"])
        self.assertEqual(bad[0]["red_zone_violations"], [{"name": "y", "byte_offset": 64 * 256 * 4}])
        self.assertEqual(res["stop_reason"], "integrity_failure")

    def test_input_damage_on_unchecked_calls_is_reported(self):
        r = Run("bench", "broken/input_every_third.py", check_every=1000, min_samples=120)
        res = r.one("bench_result")
        bad = failures(res["checks"])
        self.assertEqual(len(bad), 1, res["checks"])
        self.assertEqual(bad[0]["changed_inputs"][0]["name"], "x")

    def test_fingerprint_cache_is_caught_by_a_scattered_change(self):
        for split in (False, True):
            r = Run("bench", "broken/fingerprint_cache.py", check_every=1, split=split)
            res = r.one("bench_result")
            if not split:
                self.assertGreater(r.module.hits, 0)
            bad = failures(res["checks"])
            self.assertGreater(len(bad), 0, res["checks"])
            self.assertTrue(all(c["outputs"] for c in bad))

    def test_no_call_sees_the_inputs_of_its_sets_last_use_again(self):
        # Were unchecked calls given the inputs of their set's last use again, this candidate
        # would skip their work (and pass: unchecked outputs are not compared).
        r = Run("bench", "broken/skips_when_inputs_repeat.py", check_every=1000, split=False)
        res = r.one("bench_result")
        self.assertNotIn("error", res)
        self.assertEqual(r.module.skips, 0)
        self.assertEqual(failures(res["checks"]), [])


def counting_candidate(on_call, *twist):
    """An honest numpy RMSNorm that counts its calls and runs the lines ``twist`` on call
    ``on_call`` (after computing its outputs)."""
    return """
import numpy as np
calls = 0
def rmsnorm_fwd(x, w, y, rstd, eps):
    global calls
    calls += 1
    r = 1.0 / np.sqrt((x * x).mean(axis=1, dtype=np.float32) + np.float32(eps))
    rstd[...] = r
    np.multiply(x, r[:, None], out=y)
    y *= w
    if calls == %d:
""" % on_call + "".join("        %s\n" % line for line in twist)


DAMAGES_THIRD_CALL = counting_candidate(
    3, "flat = y.reshape(-1)",
    "np.lib.stride_tricks.as_strided(flat, shape=(flat.size + 1,), strides=flat.strides)[-1] = 0.0")


class GateDeterminismCallTest(unittest.TestCase):
    def test_damage_in_the_determinism_rerun_is_the_cases(self):
        tmp = tempfile.mkdtemp(prefix="kloop-pyw-")
        path = os.path.join(tmp, "third_call.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(DAMAGES_THIRD_CALL)
        r = Run("gate", path, gate=[{"id": 0, "call": 0, "trial": 0, "seed": 5}])
        res = r.one("case_result")
        self.assertEqual(res["red_zone_violations"], [{"name": "y", "byte_offset": 64 * 256 * 4, "call": "determinism"}])
        self.assertTrue(res["deterministic"])


class AbProtocolTest(unittest.TestCase):
    def test_skipping_candidate_gains_nothing_and_honest_sides_pass(self):
        r = Run("ab", "broken/skips_unless_poisoned.py", base="versions/v0_numpy.py", split=False)
        res = r.one("ab_result")
        self.assertNotIn("error", res)
        self.assertEqual(r.module.skipped, 0)
        self.assertEqual(failures(res["base_checks"]), [])
        self.assertEqual(failures(res["candidate_checks"]), [])
        # It computes on every call, so it is timed as the correct v0 it then is (the median
        # speedup was ~15x when only checked calls were poisoned).
        speedup = statistics.median(res["base_samples_s"]) / statistics.median(res["candidate_samples_s"])
        self.assertLess(speedup, 2.0)

    def test_red_zone_damage_is_reported_for_its_side(self):
        r = Run("ab", "broken/red_zone_every_third.py", base="versions/v0_numpy.py", check_every=1000, min_samples=120)
        res = r.one("ab_result")
        self.assertEqual(failures(res["base_checks"]), [])
        bad = failures(res["candidate_checks"])
        self.assertEqual(len(bad), 1, res["candidate_checks"])
        self.assertEqual(bad[0]["red_zone_violations"][0]["name"], "y")

    def test_fingerprint_cache_is_caught(self):
        r = Run("ab", "broken/fingerprint_cache.py", base="versions/v0_numpy.py", check_every=1)
        res = r.one("ab_result")
        self.assertGreater(len(failures(res["candidate_checks"])), 0, res["candidate_checks"])
        self.assertEqual(failures(res["base_checks"]), [])


if __name__ == "__main__":
    unittest.main()
