"""Unit under test: the gate's first call of each call plan (kloop_worker.worker.Worker.gate_case).

A plan's first call is where Triton compiles and autotunes, so it is checked but not censused;
the census then comes from a later call of the same case: the same-address recheck (trial 0) or
a census re-run on fresh buffers with the same inputs, whose outputs must be bit-identical and
whose damage is the case's. Runs gate jobs in this process on tests/fixtures/python_numpy with
the candidate imported here (KLOOP_PYTHON_SPLIT=0's path) and Worker.invoke wrapped to record
which calls asked for a census and to hand back a stand-in census for them (numpy has none)."""
import json
import os
import tempfile
import unittest
from unittest import mock

from kloop_worker import worker as worker_module
from kloop_worker.main import run_job
from kloop_worker.protocol import EventWriter, parse_job

from .test_timed_call_protocol import FIXTURE, counting_candidate, fwd_call, manifest

NOISY_SECOND_CALL = counting_candidate(2, "y[0, 0] = np.nextafter(y[0, 0], np.float32(np.inf))")
DAMAGES_SECOND_CALL = counting_candidate(2, "x[1, 1] += 1.0")


def run_gate(candidate, cases):
    """Runs a gate of two call plans (0: n64_d256, 1: n32_d128); returns (census flags per
    candidate call in order, events)."""
    tmp = tempfile.mkdtemp(prefix="kloop-pyw-")
    cand_lib, _ = manifest(tmp, candidate)
    ref_lib, _ = manifest(tmp, os.path.join(FIXTURE, "ref.py"))
    job = parse_job({
        "schema_version": 1, "phase": "gate", "candidate_lib": cand_lib, "reference_lib": ref_lib, "base_lib": "",
        "candidate_device": "python", "reference_device": "python", "evict_bytes": 0,
        "calls": [fwd_call(), fwd_call(32, 128)], "gate": cases, "bench": [],
    })
    asked = []
    real_invoke = worker_module.Worker.invoke

    def invoke(self, side, call, bufs, census=False):
        out = real_invoke(self, side, call, bufs, census)
        if side is self.candidate:
            asked.append((call, census))
            if census:
                out.census = {"available": True, "kernels": [{"name": "stand_in_%d" % len(asked)}]}
        return out

    path = os.path.join(tmp, "events.jsonl")
    events = EventWriter(path)
    try:
        with mock.patch.object(worker_module.Worker, "invoke", invoke):
            rc = run_job(job, events, split=False)
    finally:
        events.close()
    with open(path, encoding="utf-8") as f:
        evs = [json.loads(line) for line in f]
    assert rc == 0, evs
    return asked, evs


def results(evs):
    return {e["id"]: e for e in evs if e.get("event") == "case_result"}


class GateFirstCallTest(unittest.TestCase):
    def test_a_plans_first_call_is_checked_but_not_censused(self):
        cases = [{"id": 0, "call": 0, "trial": 0, "seed": 5}, {"id": 1, "call": 0, "trial": 1, "seed": 6},
                 {"id": 2, "call": 1, "trial": 2, "seed": 7}]
        asked, evs = run_gate(os.path.join(FIXTURE, "versions", "v0_numpy.py"), cases)
        # case 0: first call (no census), same-address recheck (census), determinism re-run (none);
        # case 1: a later call of plan 0 (census); case 2: plan 1's first call, then its census re-run.
        self.assertEqual(asked, [(0, False), (0, True), (0, False), (0, True), (1, False), (1, True)])
        res = results(evs)
        self.assertNotIn("census", res[0])
        self.assertIn("census", res[0]["same_address_recheck"])
        self.assertEqual(res[1]["census"]["kernels"][0]["name"], "stand_in_4")
        self.assertEqual(res[2]["census"]["kernels"][0]["name"], "stand_in_6")
        self.assertTrue(res[2]["deterministic"])
        self.assertIn({"event": "stage", "id": 2, "stage": "census_rerun"}, evs)
        for r in res.values():  # every case's checked call was compared and passed
            self.assertTrue(r["outputs"], r)
            self.assertTrue(all(o["metrics"]["mismatches"] == 0 for o in r["outputs"]), r)
        self.assertGreaterEqual(res[2]["candidate_s"], res[2]["call_s"])

    def test_the_census_rerun_must_give_the_same_bits(self):
        tmp = tempfile.mkdtemp(prefix="kloop-pyw-")
        path = os.path.join(tmp, "noisy.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(NOISY_SECOND_CALL)
        _, evs = run_gate(path, [{"id": 0, "call": 1, "trial": 1, "seed": 9}])
        self.assertFalse(results(evs)[0]["deterministic"])

    def test_damage_in_the_census_rerun_is_the_cases(self):
        tmp = tempfile.mkdtemp(prefix="kloop-pyw-")
        path = os.path.join(tmp, "damages.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(DAMAGES_SECOND_CALL)
        _, evs = run_gate(path, [{"id": 0, "call": 1, "trial": 2, "seed": 9}])
        changed = results(evs)[0]["changed_inputs"]
        self.assertEqual([(c["name"], c["call"]) for c in changed], [("x", "census_rerun")])


if __name__ == "__main__":
    unittest.main()
