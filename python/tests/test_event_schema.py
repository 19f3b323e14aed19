"""Unit under test: the events the Python worker writes (kloop_worker.main, kloop_worker.worker)
against the schema both runners share, src/runner/event_schema.json (the C++ runner's
runner/events.hpp is held to the same file by tests/unit/runner/events_test.cpp). Whole gate,
bench, A/B and profile jobs run on tests/fixtures/python_numpy, honest and failing; every line
they write must fit the schema: a known kind, its required fields, each field of its type, no
field the schema lacks (but in a call's open facts)."""
import json
import os
import tempfile
import unittest

from kloop_worker.protocol import EVENTS_SCHEMA_VERSION

from tests.test_timed_call_protocol import Run

SCHEMA_PATH = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "src", "runner",
                                            "event_schema.json"))

with open(SCHEMA_PATH, encoding="utf-8") as f:
    SCHEMA = json.load(f)

_TYPES = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "numbers": lambda v: isinstance(v, list) and all(_TYPES["number"](x) for x in v),
    "string_or_null": lambda v: v is None or isinstance(v, str),
}


def violation(event):
    """What the schema says of one event: None when it fits."""
    kind = SCHEMA["kinds"].get(event.get("event"))
    if kind is None:
        return "unknown kind %r" % event.get("event")
    types = {}
    for group in ("required", "required_unless_error", "optional"):
        types.update(kind.get(group, {}))
    needed = dict(kind.get("required", {}))
    if "error" not in event:
        needed.update(kind.get("required_unless_error", {}))
    for f in needed:
        if f not in event:
            return "%s without %r" % (event["event"], f)
    for f, v in event.items():
        if f == "event":
            continue
        if f not in types:
            if kind.get("open"):
                continue
            return "%s has a field the schema lacks: %r" % (event["event"], f)
        if v is None and f in kind.get("optional", {}):
            continue
        if not _TYPES[types[f]](v):
            return "%s.%s is not %s: %r" % (event["event"], f, types[f], v)
    return None


GATE = [{"id": i, "call": 0, "trial": i, "seed": 5 + i} for i in range(2)]

# A candidate whose every fwd call raises.
RAISES = os.path.join(tempfile.mkdtemp(prefix="kloop-schema-"), "raises.py")
with open(RAISES, "w", encoding="utf-8") as f:
    f.write("def rmsnorm_fwd(x, w, y, rstd, eps):\n    raise ZeroDivisionError('on purpose')\n")


class EventSchemaTest(unittest.TestCase):
    def assert_fits(self, run, phase):
        self.assertTrue(run.events, phase)
        for e in run.events:
            self.assertIsNone(violation(e), "%s: %s" % (phase, e))
        start = run.events[0]
        self.assertEqual(start["event"], "start")
        self.assertEqual(start["schema_version"], EVENTS_SCHEMA_VERSION)

    def test_the_schema_is_the_one_this_worker_writes(self):
        self.assertEqual(SCHEMA["schema_version"], EVENTS_SCHEMA_VERSION)

    def test_every_phase_fits_the_schema(self):
        self.assert_fits(Run("gate", "versions/v0_numpy.py", gate=GATE), "gate")
        self.assert_fits(Run("bench", "versions/v0_numpy.py", min_samples=5), "bench")
        self.assert_fits(Run("ab", "versions/v0_numpy.py", base="versions/v0_numpy.py", min_samples=5), "ab")
        self.assert_fits(Run("profile", "versions/v0_numpy.py"), "profile")

    def test_failing_calls_fit_the_schema(self):
        gate = Run("gate", RAISES, gate=GATE)
        self.assert_fits(gate, "gate, a call that raises")
        bench = Run("bench", RAISES, min_samples=5)
        self.assert_fits(bench, "bench, a call that raises")
        self.assertIn("error", bench.one("bench_result"))
        shared = Run("bench", RAISES, min_samples=5, split=False)  # the exception is seen in-process
        self.assert_fits(shared, "bench in the worker's process, a call that raises")
        self.assertEqual(shared.one("bench_result")["exception"]["type"], "ZeroDivisionError")
        ab = Run("ab", RAISES, base="versions/v0_numpy.py", min_samples=5)
        self.assert_fits(ab, "ab, a call that raises")
        self.assertEqual(ab.one("ab_result")["side"], "candidate")
        self.assert_fits(Run("bench", "broken/red_zone_every_third.py", check_every=1000, min_samples=30),
                         "bench, damage found")

    def test_the_checker_refuses_what_the_schema_refuses(self):
        # The validator above is the test's own: it must see what is wrong.
        self.assertIsNone(violation({"event": "done"}))
        self.assertIsNotNone(violation({"event": "bench_result", "id": 1}))
        self.assertIsNone(violation({"event": "bench_result", "id": 1, "error": "sample", "return_code": 3}))
        self.assertIsNotNone(violation({"event": "stage", "id": 1, "stage": 2}))
        self.assertIsNotNone(violation({"event": "fatal", "message": "x", "candidate_dead": True}))
        self.assertIsNone(violation({"event": "case_result", "id": 1, "anything": [1]}))
        self.assertIsNotNone(violation({"event": "case_result", "id": 1, "call_s": "fast"}))
        self.assertIsNotNone(violation({"event": "started", "id": 1}))


if __name__ == "__main__":
    unittest.main()


class ProgressEventTest(unittest.TestCase):
    """A timed item longer than the progress interval reports how far its stopping rule has come,
    in events that fit the schema, before its result, with samples that only grow."""

    def assert_progress(self, run, result_kind):
        kinds = [e["event"] for e in run.events]
        progress = [e for e in run.events if e["event"] == "progress"]
        self.assertTrue(progress, kinds)
        for e in progress:
            self.assertIsNone(violation(e), e)
            self.assertEqual(e["id"], 0)
        self.assertLess(max(i for i, k in enumerate(kinds) if k == "progress"), kinds.index(result_kind))
        counts = [e["samples"] for e in progress]
        self.assertEqual(counts, sorted(counts))
        self.assertGreater(progress[-1]["time_s"], 0)

    def test_a_long_bench_and_ab_report_their_progress(self):
        # About 2 s each on an idle machine (PROGRESS_INTERVAL_S is 0.5 s); longer when busy.
        item = {"check_every": 1000, "tail_checks": 1}
        bench = Run("bench", "versions/v0_numpy.py", min_samples=2000, **item)
        self.assert_progress(bench, "bench_result")
        ab = Run("ab", "versions/v0_numpy.py", base="versions/v0_numpy.py", min_samples=1000, **item)
        self.assert_progress(ab, "ab_result")
