"""Unit under test: kloop_worker.fla_registry — kloop's bench for an FLA-style op registry, one
side and both sides of an A/B in one process (tests/fixtures/fla_like_repo, numpy only)."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
SOURCE = os.path.dirname(PYTHON_DIR)
REPO = os.path.join(SOURCE, "tests", "fixtures", "fla_like_repo")
CANDIDATES = os.path.join(SOURCE, "tests", "fixtures", "fla_like_candidates")
TARGET = os.path.join("flalike", "ops", "scale", "chunk.py")


class FlaRegistryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kloop-fla-registry-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def copy(self, name, candidate=None):
        root = os.path.join(self.tmp, name)
        shutil.copytree(REPO, root)
        if candidate:
            shutil.copy(os.path.join(CANDIDATES, candidate), os.path.join(root, TARGET))
        return root

    def bench(self, *args, cwd, sides=None, env=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("KLOOP_BENCH")}
        e.update({"PYTHONPATH": PYTHON_DIR, "PYTHONDONTWRITEBYTECODE": "1", "KLOOP_BENCH_MIN_SAMPLES": "6",
                  "KLOOP_BENCH_MIN_TIME_S": "0.02", "KLOOP_BENCH_MAX_TIME_S": "0.5", "FLA_BENCH_OP_WARMUP_ITERS": "2"})
        if sides is not None:
            e["KLOOP_BENCH_SIDES"] = json.dumps([{"name": n, "root": r} for n, r in sides])
        e.update(env or {})
        p = subprocess.run([sys.executable, "-m", "kloop_worker.fla_registry", "--op", "chunk_scale", *args], cwd=cwd,
                           env=e, capture_output=True, text=True, timeout=120)
        last = [line for line in p.stdout.splitlines() if line.startswith("{")]
        return p.returncode, json.loads(last[-1]) if last else None, p.stderr

    def medians(self, doc, side):
        return {s["mode"] + "/" + s["name"]: statistics.median(s["samples_ms"]) for s in doc["sides"][side]["shapes"]}

    def test_one_side_reports_every_shape_the_registry_allows(self):
        root = self.copy("repo")
        rc, doc, err = self.bench(cwd=root)
        self.assertEqual(rc, 0, err)
        # B1_T16_H2_D32 is left out by the op's dim_constraints (D in [8, 16]); skip_backward: fwd only.
        self.assertEqual(sorted(s["mode"] + "/" + s["name"] for s in doc["shapes"]),
                         ["fwd/B1_T64_H2_D16", "fwd/B2_T32_H4_D8"])
        for s in doc["shapes"]:
            self.assertGreaterEqual(len(s["samples_ms"]), 6)
            self.assertTrue(all(x > 0 for x in s["samples_ms"]))

    def test_describe_names_the_gate_and_the_package(self):
        rc, doc, err = self.bench("--describe", cwd=self.copy("repo"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(doc["test_file"], "tests/ops/test_scale.py")
        self.assertEqual(doc["package_dir"], "flalike/ops/scale")
        self.assertEqual(doc["modes"], ["fwd"])
        self.assertEqual(doc["shapes"], ["B1_T64_H2_D16", "B2_T32_H4_D8"])

    def test_kloop_bench_shapes_selects_and_an_unknown_shape_is_an_error(self):
        root = self.copy("repo")
        rc, doc, err = self.bench(cwd=root, env={"KLOOP_BENCH_SHAPES": "fwd/B2_T32_H4_D8"})
        self.assertEqual(rc, 0, err)
        self.assertEqual([s["name"] for s in doc["shapes"]], ["B2_T32_H4_D8"])
        rc, doc, _ = self.bench(cwd=root, env={"KLOOP_BENCH_SHAPES": "fwd/B1_T16_H2_D32"})
        self.assertEqual(rc, 2)
        self.assertIn("B1_T16_H2_D32", doc["error"])

    def test_two_sides_in_one_process_each_run_their_own_copy(self):
        base, cand = self.copy("base"), self.copy("cand", "slow.py")
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 0, err)
        self.assertEqual(doc["method"], "interleaved")
        self.assertEqual(doc["order"], "ABBA per sample")
        b, c = self.medians(doc, "base"), self.medians(doc, "candidate")
        self.assertEqual(sorted(b), sorted(c))
        for key in b:
            # The candidate sleeps 3 ms per call; v0 takes well under a millisecond here.
            self.assertGreater(c[key], 2.5, key)
            self.assertLess(b[key], c[key] / 2, key)
        n = {s["name"]: len(s["samples_ms"]) for s in doc["sides"]["base"]["shapes"]}
        self.assertEqual(n, {s["name"]: len(s["samples_ms"]) for s in doc["sides"]["candidate"]["shapes"]})

    def test_a_settled_verdict_stops_a_shape_early_and_says_so(self):
        base, cand = self.copy("base"), self.copy("cand", "slow.py")
        early = {"min_effect": 0.02, "confidence": 0.95, "first_look": 8, "max_looks": 12, "min_time_s": 0.0}
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)],
                                  env={"KLOOP_BENCH_EARLY_VERDICT": json.dumps(early),
                                       "KLOOP_BENCH_MIN_TIME_S": "5", "KLOOP_BENCH_MAX_TIME_S": "20"})
        self.assertEqual(rc, 0, err)
        for s in doc["sides"]["candidate"]["shapes"]:
            # 3 ms against well under 1 ms: settled SLOWER at a look, long before the rule's 5 s.
            self.assertEqual(s["stop"], "early_verdict", s["name"])
            self.assertEqual(s["early_verdict"], "SLOWER", s["name"])
            n = len(s["samples_ms"])
            self.assertTrue(n % 8 == 0 and ((n // 8) & (n // 8 - 1)) == 0, n)  # a look: 8 * 2^k
            self.assertLess(sum(s["samples_ms"]), 5000)
        # One side: no verdict to settle, the setting is ignored.
        rc, doc, err = self.bench(cwd=base, env={"KLOOP_BENCH_EARLY_VERDICT": json.dumps(early)})
        self.assertEqual(rc, 0, err)
        self.assertTrue(all(s["stop"] != "early_verdict" for s in doc["shapes"]))

    def test_a_round_time_budget_bounds_every_shape(self):
        base, cand = self.copy("base"), self.copy("cand", "slow.py")
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)],
                                  env={"KLOOP_BENCH_ROUND_TIME_S": "0.4", "KLOOP_BENCH_TARGET_RSD": "0",
                                       "KLOOP_BENCH_MIN_TIME_S": "30", "KLOOP_BENCH_MAX_TIME_S": "60"})
        self.assertEqual(rc, 0, err)
        shapes = doc["sides"]["candidate"]["shapes"]
        caps = [s["time_cap_s"] for s in shapes]
        self.assertLessEqual(sum(caps), 0.4 + 1e-9)
        self.assertTrue(all(c >= 0 for c in caps))
        for s in shapes:
            self.assertIn("time_cap", s["stop"])  # the rule stopped at the shape's share, not at 30 s
            self.assertGreaterEqual(len(s["samples_ms"]), 6)  # min_samples is never cut
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)],
                                  env={"KLOOP_BENCH_ROUND_TIME_S": "soon"})
        self.assertEqual(rc, 2)
        self.assertIn("KLOOP_BENCH_ROUND_TIME_S", doc["error"])

    def test_two_sides_from_one_root_each_import_their_own_modules(self):
        root = self.copy("same")
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", root), ("candidate", root)])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(doc["sides"]), ["base", "candidate"])

    def test_a_side_that_rebinds_the_other_sides_code_voids_the_run(self):
        base, cand = self.copy("base"), self.copy("cand", "tamper_base.py")
        rc, doc, _ = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 3)
        self.assertTrue(doc["void"])
        self.assertIn("side 'base'", doc["error"])
        self.assertIn("chunk_scale", doc["error"])

    def test_an_idle_thread_started_at_import_keeps_one_process_and_is_listed(self):
        base, cand = self.copy("base"), self.copy("cand", "thread_at_import.py")
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("fallback", doc)
        self.assertEqual(doc["method"], "interleaved")
        [note] = doc["idle_threads"]
        self.assertEqual(note["during"], "importing side 'candidate'")
        self.assertRegex(note["threads"], r"^\S+ x1$")
        self.assertIn("first seen after `import chunk` in flalike.ops.scale", note["origin"])  # and where

    def test_a_thread_that_keeps_running_after_the_import_falls_back(self):
        base, cand = self.copy("base"), self.copy("cand", "busy_thread_at_import.py")
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 0, err)
        self.assertRegex(doc["fallback"], r"^importing side 'candidate' started 1 thread\(s\) \(\S+ x1;")  # by name
        self.assertIn("first seen after `import chunk` in flalike.ops.scale", doc["fallback"])  # and where
        self.assertRegex(doc["fallback"], r"1 of them still running after \d+\.\d s \(\S+ \d+: \d+\.\d ms of CPU")

    def test_an_idle_thread_that_wakes_while_the_sides_are_timed_falls_back(self):
        for sides in (["base", "candidate"], ["candidate", "base"]):
            roots = {"base": self.copy("base-" + sides[0]),
                     "candidate": self.copy("cand-" + sides[0], "thread_wakes_while_timed.py")}
            rc, doc, err = self.bench(cwd=self.tmp, sides=[(n, roots[n]) for n in sides])
            self.assertEqual(rc, 0, err)
            self.assertIn("fallback", doc, doc)
            # Asleep through the import and the warm-up; seen running at the first check of the timed calls.
            self.assertRegex(doc["fallback"], r"^a thread that was idle ran during the timed calls of fwd: \S+ "
                                              r"\(tid \d+, started by importing side 'candidate'\): \d+\.\d{3} ms of CPU")

    def with_pool_import(self, root):
        """The side's kernel imports kloop_test_pool, a module outside every root (the
        environment) that starts a thread at import, as some of FLA's dependencies do."""
        path = os.path.join(root, TARGET)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write("import kloop_test_pool  # noqa: F401\n" + text)
        return root

    def pool_site(self, thread="_stop.wait, args=(60,)"):
        """kloop_test_pool: a module outside every root whose import starts a thread (by default
        one that sleeps; `thread`: the Thread's target and args)."""
        site = os.path.join(self.tmp, "site")
        os.makedirs(site, exist_ok=True)
        with open(os.path.join(site, "kloop_test_pool.py"), "w", encoding="utf-8") as f:
            f.write("import threading\n_stop = threading.Event()\n"
                    "def _spin():\n    while not _stop.is_set():\n        sum(range(1000))\n"
                    "threading.Thread(target=%s, daemon=True).start()\n" % thread)
        return {"PYTHONPATH": PYTHON_DIR + os.pathsep + site}

    def test_threads_the_environment_starts_at_import_keep_the_sides_in_one_process(self):
        env = self.pool_site()
        base, cand = self.with_pool_import(self.copy("base")), self.with_pool_import(self.copy("cand", "slow.py"))
        for sides in ([("base", base), ("candidate", cand)], [("candidate", cand), ("base", base)]):
            rc, doc, err = self.bench(cwd=self.tmp, sides=sides, env=env)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("fallback", doc)
            self.assertEqual(doc["method"], "interleaved")
            self.assertGreaterEqual(doc["environment_imports"]["imported"], 1, doc["environment_imports"])
            self.assertNotIn("idle_threads", doc)  # the pool started before the sides: nothing to watch
            b, c = self.medians(doc, "base"), self.medians(doc, "candidate")
            for key in b:
                self.assertLess(b[key], c[key] / 2, key)  # still each side its own code

    def test_a_candidate_whose_new_dependency_starts_a_running_thread_still_falls_back(self):
        # The environment is what the base imports: a candidate cannot widen it.
        env = self.pool_site("_spin")
        base, cand = self.copy("base"), self.with_pool_import(self.copy("cand"))
        rc, doc, err = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)], env=env)
        self.assertEqual(rc, 0, err)
        self.assertRegex(doc["fallback"], r"importing side 'candidate' started 1 thread\(s\)")
        self.assertRegex(doc["fallback"], r"with \d+ of the \d+ environment modules")
        # Where it came from: the import that returned with the new thread, and its importer.
        self.assertRegex(doc["fallback"], r"first seen after `import kloop_test_pool` in flalike\.ops\.scale\.chunk")

    def test_a_second_side_that_does_not_import_falls_back(self):
        base, cand = self.copy("base"), self.copy("cand", "broken_import.py")
        rc, doc, _ = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 0)
        self.assertIn("does not import", doc["fallback"])
        # Alone (in its own process) the same side is an error of that side.
        rc, doc, _ = self.bench(cwd=cand)
        self.assertEqual(rc, 2)
        self.assertIn("does not import", doc["error"])

    def test_a_registry_that_differs_between_the_sides_is_refused(self):
        base, cand = self.copy("base"), self.copy("cand")
        with open(os.path.join(cand, "benchmarks", "ops", "registry.py"), "a") as f:
            f.write("\n# changed\n")
        rc, doc, _ = self.bench(cwd=self.tmp, sides=[("base", base), ("candidate", cand)])
        self.assertEqual(rc, 2)
        self.assertIn("differs between the sides", doc["error"])


if __name__ == "__main__":
    unittest.main()


class EnvironmentImportsTest(unittest.TestCase):
    """What the fallback message says of the environment: modules that failed to import here
    (with the exception) and listed modules that are not in place."""

    def test_failures_and_missing_modules_are_named(self):
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from kloop_worker.fla_registry import EnvironmentImports

        env = EnvironmentImports.__new__(EnvironmentImports)  # no listing interpreter: a given list
        env._proc, env.error, env.imported, env.loaded, env.failed = None, "", 0, 0, []
        env.names = ["json", "kloop_no_such_module_xyz", "__main__"]
        env.import_them()
        d = env.describe()
        self.assertEqual(d["listed"], 3)
        self.assertEqual(len(d["not_imported"]), 1)
        self.assertRegex(d["not_imported"][0], r"^kloop_no_such_module_xyz \((ModuleNotFoundError|ImportError): ")
        self.assertEqual(env.missing(), ["kloop_no_such_module_xyz"])


class ThreadOriginTest(unittest.TestCase):
    def test_names_the_import_that_returned_with_a_new_thread_and_the_chain_around_it(self):
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import importlib

        from kloop_worker.fla_registry import ThreadOrigin, thread_count

        site = tempfile.mkdtemp(prefix="kloop-origin-")
        self.addCleanup(shutil.rmtree, site, True)
        files = {"kloop_origin_outer.py": "import kloop_origin_middle\n",
                 "kloop_origin_middle.py": "import kloop_origin_pool\n",
                 "kloop_origin_pool.py": "import threading\n_stop = threading.Event()\n"
                                         "threading.Thread(target=_stop.wait, args=(30,), daemon=True).start()\n"}
        for name, text in files.items():
            with open(os.path.join(site, name), "w", encoding="utf-8") as f:
                f.write(text)
        sys.path.insert(0, site)
        self.addCleanup(sys.path.remove, site)
        quiet = ThreadOrigin(thread_count())
        with quiet:
            importlib.import_module("json")
        self.assertEqual(quiet.describe(), "")
        origin = ThreadOrigin(thread_count())
        with origin:
            exec("import kloop_origin_outer", {"__name__": "kloop_origin_test"})
        sys.modules["kloop_origin_pool"]._stop.set()
        self.assertEqual(origin.describe(), "first seen after `import kloop_origin_pool` in kloop_origin_middle, "
                                            "while importing kloop_origin_outer > kloop_origin_middle")
        import builtins

        self.assertIs(builtins.__import__, origin._orig)  # restored

    def test_a_module_that_needs_one_listed_after_it_is_imported_in_a_second_pass(self):
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from kloop_worker.fla_registry import EnvironmentImports

        site = tempfile.mkdtemp(prefix="kloop-env-order-")
        self.addCleanup(shutil.rmtree, site, True)
        with open(os.path.join(site, "kloop_env_needs_later.py"), "w", encoding="utf-8") as f:
            f.write("import sys\nif 'kloop_env_later' not in sys.modules:\n    raise ImportError('load kloop_env_later first')\n")
        with open(os.path.join(site, "kloop_env_later.py"), "w", encoding="utf-8") as f:
            f.write("VALUE = 1\n")
        sys.path.insert(0, site)
        self.addCleanup(sys.path.remove, site)
        env = EnvironmentImports.__new__(EnvironmentImports)
        env._proc, env.error, env.imported, env.loaded, env.failed = None, "", 0, 0, []
        env.names = ["kloop_env_needs_later", "kloop_env_later"]
        env.import_them()
        self.assertIn("kloop_env_needs_later", sys.modules)
        self.assertEqual((env.imported, env.loaded, env.failed), (2, 2, []))
