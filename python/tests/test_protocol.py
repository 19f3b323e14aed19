"""Unit under test: kloop_worker.protocol — derive_seed (bit-exact with kloop::derive_seed), the
job reader, the event channel."""
import json
import os
import tempfile
import unittest

from kloop_worker.protocol import EventWriter, JobError, derive_seed, json_number, parse_job

# Values printed by the C++ kloop::derive_seed (src/core/rng.cpp).
CPP_DERIVE_SEED = [
    (0, "x", 9541494889534462470),
    (0, "same-address", 12072234407573740691),
    (0, "set0", 10562764057237634232),
    (0, "", 6566800829925814604),
    (1, "x", 362850224109613414),
    (1, "check8", 9269458818408780207),
    (12345678901234567890, "same-address", 7728167389380973726),
    (12345678901234567890, "set0", 1204208870360386251),
]


def minimal_job(**over):
    j = {
        "schema_version": 1,
        "phase": "gate",
        "candidate_lib": "c.json",
        "reference_lib": "r.json",
        "calls": [
            {
                "mode": "fwd",
                "shape": "s",
                "entry": "f",
                "reference_entry": "f_ref",
                "dims": {"N": 4},
                "inputs": [{"name": "x", "dtype": "f32", "shape": [4], "init": "normal(0, 1)"}],
                "outputs": [{"name": "y", "dtype": "f32", "shape": [4], "tolerance": {"atol": 0.1}}],
                "params": [{"name": "k", "value": 3, "is_integer": True}],
            }
        ],
        "gate": [{"id": 0, "call": 0, "trial": 0, "seed": 1}],
        "bench": [],
    }
    j.update(over)
    return j


class DeriveSeedTest(unittest.TestCase):
    def test_matches_the_cpp_implementation(self):
        for base, label, want in CPP_DERIVE_SEED:
            self.assertEqual(derive_seed(base, label), want, (base, label))


class JobTest(unittest.TestCase):
    def test_reads_a_job(self):
        job = parse_job(minimal_job())
        self.assertEqual(job.phase, "gate")
        c = job.calls[0]
        self.assertEqual(c.label, "fwd/s")
        self.assertEqual(c.inputs[0].numel, 4)
        self.assertEqual(c.outputs[0].tol.atol, 0.1)
        self.assertTrue(c.outputs[0].tol.has_elementwise)
        self.assertEqual(c.params[0].python_value, 3)
        self.assertIsInstance(c.params[0].python_value, int)

    def test_refuses_another_schema(self):
        with self.assertRaisesRegex(JobError, "schema_version 2"):
            parse_job(minimal_job(schema_version=2))

    def test_refuses_a_bad_call_index(self):
        with self.assertRaisesRegex(JobError, "out of range"):
            parse_job(minimal_job(gate=[{"id": 0, "call": 3, "trial": 0, "seed": 1}]))

    def test_ab_needs_a_base(self):
        with self.assertRaisesRegex(JobError, "base_lib"):
            parse_job(minimal_job(phase="ab"))


class EventWriterTest(unittest.TestCase):
    def test_one_line_per_event_and_non_finite_numbers_as_strings(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ev.jsonl")
            w = EventWriter(path)
            w.write({"event": "start"})
            w.write({"event": "x", "v": json_number(float("inf")), "n": json_number(float("nan"))})
            with open(path) as f:  # flushed before close
                lines = f.read().splitlines()
            w.close()
            self.assertEqual(len(lines), 2)
            self.assertEqual(json.loads(lines[1])["v"], "inf")
            self.assertEqual(json.loads(lines[1])["n"], "nan")

    def test_refuses_a_raw_nan(self):
        with tempfile.TemporaryDirectory() as d:
            w = EventWriter(os.path.join(d, "ev.jsonl"))
            with self.assertRaises(ValueError):
                w.write({"v": float("nan")})
            w.close()


if __name__ == "__main__":
    unittest.main()
