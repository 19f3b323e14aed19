"""The gate, bench and A/B phases: src/runner/runner.cpp and src/runner/ab_phase.cpp, in Python.

Same events, same order of calls, same seeds (derive_seed labels), the same stopping rule and
raw facts; kloop judges them with the code that judges the native runner. The bench and A/B
loops prepare every call alike and verify red zones and inputs after each; which samples are
checked is drawn (check_draw.py; docs/python.md, "Checked calls"). What a Python candidate adds,
and how it is reported:

* an exception in a call: ``"return_code": 1`` and ``"device_error": "Python exception: <the
  traceback's last line> (at kernel.py:12 in rmsnorm_fwd)"`` plus ``"exception"`` with the type,
  message and frame; the full traceback goes to the worker's stderr (kloop's runner log). A CUDA
  error that poisons the context (torch.cuda.synchronize() fails afterwards) ends the worker
  after the case is reported, as a sticky device error ends the native runner;
* a bad return value (wrong shape, dtype or device for a returned output): the same fields,
  ``"device_error": "bad return value: ..."``;
* numeric flags changed by a call: ``"numeric_flags_changed": [{name, expected, actual}]`` in the
  call's facts (gate) or the bench result; the flags are restored before the next call;
* the kernel census of each checked gate call (torch on CUDA): ``"census"``, except a call
  plan's first call in this worker, where Triton compiles and autotunes (an autotuner benchmarks
  every config, with PyTorch kernels flushing the cache between runs): that call is checked like
  any other but not censused, and where no censused call of its case follows it (a trial other
  than the first, a held-out shape) the case re-runs it once on fresh buffers with the same
  inputs, censused, its outputs held bit-identical to the first call's (``"deterministic"``).
  The native runner has no first-call rule: nothing compiles or autotunes inside its calls.

Where the candidate runs: by default in a candidate host, a separate process (candidate_host.py,
remote_side.py), and every call is a request to it: ``invoke`` and ``time_call`` are the seam.
A timed sample then carries ``"window_s"``, the checker's own clock around the request, in its
sample info (``candidate_windows_s`` / ``base_windows_s`` in the A/B). The reference, the
buffers, every comparison and the events stay here. With KLOOP_PYTHON_SPLIT=0 the candidate is
imported into this process instead (diagnostics), as before the split.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import early_verdict, metrics, op_times
from .calls import LocalCalls, Outcome
from .candidate import (
    LoadError,
    NoFlags,
    NumericFlags,
    bind_candidate,
    bind_reference,
    import_library,
    read_manifest,
    use_caches,
)
from .check_draw import CheckDraw
from .protocol import PROGRESS_INTERVAL_S, BenchItem, GateCase, Job, derive_seed, progress_event
from .stopping import StoppingRule
from .tensors import CallBuffers, outputs_bitwise_equal


# The stop reason of a bench or A/B item ended by a call that damaged a red zone or an input.
INTEGRITY_FAILURE = "integrity_failure"


class Fatal(Exception):
    """Ends the worker with a "fatal" event (exit status 3), as the native runner's throws do.
    ``candidate_died``: the candidate's host died (the native runner's host_died)."""

    def __init__(self, message: str, candidate_died: bool = False):
        super().__init__(message)
        self.candidate_died = candidate_died


@dataclass
class Side:
    """One loaded library (candidate, reference or base) and its functions per call."""

    manifest: Dict[str, Any]
    module: Any
    callees: List[Any] = field(default_factory=list)
    host: Any = None  # remote_side.CandidateHostLink when the library runs in a candidate host


class Worker:
    def __init__(self, job: Job, events, backend, timer, flags, hosts=None):
        """``backend`` allocates the buffers (remote_side's SharedAllocator when ``hosts`` is
        given); ``timer`` times local candidates (None with hosts: each host has its own);
        ``flags`` are this process's numeric flags (the reference's, and a local candidate's)."""
        self.job = job
        self.ev = events
        self.backend = backend
        self.timer = timer
        self.flags = flags
        self.hosts = hosts
        self.reference_calls = LocalCalls(backend, _UntimedCalls(backend), flags)
        self.local_calls = LocalCalls(backend, timer, flags) if timer is not None else None
        self.reference: Optional[Side] = None
        self._prep_seed = 0
        self._prep_calls = 0
        self.candidate: Optional[Side] = None
        self.base: Optional[Side] = None
        self._called_plans = set()  # call plans the candidate has had a gate call of

    # ---- loading --------------------------------------------------------------------------------

    def load(self) -> None:
        """Reference, candidate (and base): import and bind every call, or raise LoadError."""
        modes: List[str] = []
        for c in self.job.calls:
            if c.mode not in modes:
                modes.append(c.mode)
        loaded: Dict[str, Side] = {}

        def side_of(path: str) -> Side:
            if path in loaded:
                return Side(loaded[path].manifest, loaded[path].module)
            m = read_manifest(path)
            s = Side(m, import_library(m))
            loaded[path] = s
            return Side(m, s.module)

        self.reference = side_of(self.job.reference_lib)
        for plan in self.job.calls:
            use_caches(self.reference.manifest)
            self.reference.callees.append(bind_reference(self.reference.module, self.reference.manifest, plan, self.backend))
        if self.hosts is not None:
            # Each library in its own host: it imports and binds the candidate there.
            self.candidate = self._load_remote(self.hosts[0], self.job.candidate_lib, modes)
            if self.job.phase == "ab":
                self.base = self._load_remote(self.hosts[1], self.job.base_lib, modes)
            return
        self.candidate = side_of(self.job.candidate_lib)
        if self.job.phase == "ab":
            self.base = side_of(self.job.base_lib)
        for plan in self.job.calls:
            for side in (self.candidate, self.base):
                if side is None:
                    continue
                use_caches(side.manifest)
                side.callees.append(bind_candidate(side.module, side.manifest, plan, self.backend, modes))

    def _load_remote(self, host, lib_path: str, modes: List[str]) -> Side:
        from .remote_side import HostDied, HostRefused

        manifest = read_manifest(lib_path)
        try:
            host.load(manifest, self.job.calls, modes)
        except HostRefused as e:
            raise LoadError(str(e)) from None
        except HostDied as e:
            raise Fatal("%s while loading the candidate" % e, candidate_died=True) from None
        return Side(manifest, None, host=host)

    # ---- one call -------------------------------------------------------------------------------

    def invoke(self, side: Side, call: int, bufs: CallBuffers, census: bool = False) -> Outcome:
        """A checked call, run to completion (device-wide): in the side's host, or here."""
        if side.host is not None:
            return side.host.invoke(call, bufs, census)
        calls = self.reference_calls if side is self.reference else self.local_calls
        return calls.invoke(side.callees[call], bufs, census)

    def time_call(self, side: Side, call: int, bufs: CallBuffers):
        """One timed sample (caches already flushed): (seconds, outcome, sample info). From a
        host, the seconds and the outcome are its claims and the info has the checker's
        ``window_s``."""
        if side.host is not None:
            return side.host.time(call, bufs)
        return self.local_calls.time_call(side.callees[call], bufs)

    def flush_caches(self, side: Side, nbytes: int) -> None:
        """The cache flush before a sample, in the process that will be timed."""
        if side.host is not None:
            side.host.flush(nbytes)
        else:
            self.timer.flush_caches(nbytes)

    def run_reference(self, call: int, ref: CallBuffers):
        """The reference on ``ref``'s current inputs: (return code, error text or None)."""
        with op_times.scope("phase:reference"):
            ref.poison_outputs()
            out = self.invoke(self.reference, call, ref)
        if out.sticky:
            raise Fatal("device error in the reference: " + out.device_error)
        return out.return_code if out.ok() else (out.return_code or 1), (out.device_error or None)

    @staticmethod
    def facts(out: Outcome, cand: CallBuffers, ref: CallBuffers, ref_rc: int, ref_err=None) -> Dict[str, Any]:
        j: Dict[str, Any] = {
            "return_code": out.return_code,
            "reference_return_code": ref_rc,
            "changed_inputs": cand.find_changed_inputs(),
            "red_zone_violations": cand.find_red_zone_violations(),
            "outputs": metrics.compare_outputs(cand, ref),
        }
        if out.device_error:
            j["device_error"] = out.device_error
        if out.exception:
            j["exception"] = out.exception
        if out.census is not None:
            j["census"] = out.census
        if out.flags_changed:
            j["numeric_flags_changed"] = out.flags_changed
        if ref_err:
            j["reference_error"] = ref_err
        return j

    def _sticky_result(self, event: str, item_id: int, out: Outcome) -> None:
        self.ev.write({"event": event, "id": item_id, "return_code": out.return_code, "device_error": out.device_error})
        raise sticky_fatal("candidate", out)

    # ---- gate -----------------------------------------------------------------------------------

    def gate_case(self, c: GateCase) -> None:
        plan = self.job.calls[c.call]
        self.ev.write({"event": "case_start", "id": c.id})
        with op_times.scope("phase:input_sets"):
            ref = CallBuffers(plan, self.backend)
            ref.fill_inputs(c.seed)
        self.ev.write({"event": "stage", "id": c.id, "stage": "reference"})
        ref_rc, ref_err = self.run_reference(c.call, ref)
        if ref_rc != 0:
            e = {"event": "case_result", "id": c.id, "reference_return_code": ref_rc}
            if ref_err:
                e["reference_error"] = ref_err
            self.ev.write(e)
            return

        # Fresh buffers (other addresses) with the same values; outputs poisoned by construction.
        cand = CallBuffers(plan, self.backend)
        cand.copy_inputs_from(ref)
        self.ev.write({"event": "stage", "id": c.id, "stage": "candidate"})
        first = c.call not in self._called_plans  # JIT compilation and autotuning happen here
        self._called_plans.add(c.call)
        t0 = time.perf_counter()
        out = self.invoke(self.candidate, c.call, cand, census=not first)
        call_s = time.perf_counter() - t0
        if out.sticky:
            self._sticky_result("case_result", c.id, out)
        result: Dict[str, Any] = {"event": "case_result", "id": c.id}
        with op_times.scope("phase:compare"):
            result.update(self.facts(out, cand, ref, 0))
        result["call_s"] = call_s
        candidate_s = call_s

        if out.ok() and c.trial == 0:
            # Same addresses, new values, right after the first call: a result cached on
            # pointers comes back stale here.
            self.ev.write({"event": "stage", "id": c.id, "stage": "same_address_recheck"})
            cand.fill_inputs(derive_seed(c.seed, "same-address"))
            cand.poison_outputs()
            t1 = time.perf_counter()
            out_same = self.invoke(self.candidate, c.call, cand, census=True)
            candidate_s += time.perf_counter() - t1
            if out_same.sticky:
                self._sticky_result("case_result", c.id, out_same)
            ref.copy_inputs_from(cand)
            ref_rc_same, ref_err_same = self.run_reference(c.call, ref)
            with op_times.scope("phase:compare"):
                result["same_address_recheck"] = self.facts(out_same, cand, ref, ref_rc_same, ref_err_same)

            # Determinism: the same values on fresh buffers must give identical bits.
            out_again, again, spent = self.rerun(c, plan, cand, result, "determinism", census=False)
            candidate_s += spent
            result["deterministic"] = bool(out_same.ok() and out_again.ok() and outputs_bitwise_equal(cand, again))
        elif out.ok() and first:
            # The censused call of a case whose checked call was its plan's first.
            out_again, again, spent = self.rerun(c, plan, cand, result, "census_rerun", census=True)
            candidate_s += spent
            if out_again.census is not None:
                result["census"] = out_again.census
            result["deterministic"] = bool(out_again.ok() and outputs_bitwise_equal(cand, again))
        result["candidate_s"] = candidate_s
        self.ev.write(result)

    def rerun(self, c: GateCase, plan, cand: CallBuffers, result: Dict[str, Any], stage: str, census: bool):
        """The candidate once more on ``cand``'s inputs in fresh buffers (stage ``stage``): a call
        like the others, so damage done in it and flags it changes are the case's too. Returns
        (outcome, buffers, seconds)."""
        self.ev.write({"event": "stage", "id": c.id, "stage": stage})
        again = CallBuffers(plan, self.backend)
        again.copy_inputs_from(cand)
        t0 = time.perf_counter()
        out = self.invoke(self.candidate, c.call, again, census=census)
        spent = time.perf_counter() - t0
        if out.sticky:
            self._sticky_result("case_result", c.id, out)
        for key, found in (("red_zone_violations", again.find_red_zone_violations()),
                           ("changed_inputs", again.find_changed_inputs())):
            if found:
                result[key] = list(result.get(key, [])) + [dict(f, call=stage) for f in found]
        if out.flags_changed and "numeric_flags_changed" not in result:
            result["numeric_flags_changed"] = out.flags_changed
        return out, again, spent

    # ---- bench ----------------------------------------------------------------------------------
    #
    # Every call the candidate gets in the bench and A/B loops (warm-up, samples, cool-down calls,
    # the final check) is prepared alike before it (prepare_call) and verified after it (red zones,
    # inputs): nothing in its buffers, nor the count of calls, tells it whether the call will be
    # checked, and damage done in any call is reported. Which samples are checked is drawn
    # (check_draw.py).

    def _make_sets(self, b: BenchItem, plan):
        n_sets = max(1, b.input_sets)
        sets = []
        for k in range(n_sets):
            s = CallBuffers(plan, self.backend)
            if k == 0:
                s.fill_inputs(derive_seed(b.seed, "set0"))
            else:
                s.fill_inputs_shifted(sets[0], derive_seed(b.seed, "set%d" % k))
            sets.append(s)
        self.start_preparations(b.seed)
        return sets

    def start_preparations(self, item_seed: int) -> None:
        """The seeds of one bench or A/B item's preparations: call k's renewed elements come from
        derive_seed(item seed, "prepare/k")."""
        self._prep_seed = derive_seed(item_seed, "prepare")
        self._prep_calls = 0

    def prepare(self, bufs: CallBuffers, flush=None) -> None:
        """Before every call of the bench and A/B loops, outside the timed window, checked or not
        (which calls are checked is drawn after the call): the set's values written again (inout
        inputs reset), outputs poisoned, red zones rewritten; then ``flush`` (the cache flush of a
        timed call, in the process that will be timed); then min(16, n) scattered elements of the
        independent-draw inputs redrawn and the pristine copies taken. No two calls see the same
        input bytes, and outputs computed while the host flushed are stale (docs/python.md,
        "Checked calls")."""
        with op_times.scope("phase:prepare"):
            bufs.restore_inputs()
            bufs.poison_outputs()
            bufs.reset_redzones()
            if flush is not None:
                flush()
            bufs.change_scattered(derive_seed(self._prep_seed, "prepare/%d" % self._prep_calls))
            self._prep_calls += 1
            bufs.remember_inputs()

    @staticmethod
    def damage_facts(bufs: CallBuffers, out: Outcome, sample: int, call: str) -> Dict[str, Any]:
        """A check entry for a call whose outputs were not compared but which damaged a red zone
        or an input: the fields call_judgement reads (return_code, red_zone_violations,
        changed_inputs; no outputs), so kloop rejects it as it rejects a failed checked call."""
        f: Dict[str, Any] = {
            "sample": sample,
            "call": call,
            "return_code": out.return_code,
            "red_zone_violations": bufs.find_red_zone_violations(),
            "changed_inputs": bufs.find_changed_inputs(),
            "outputs": [],
        }
        if out.flags_changed:
            f["numeric_flags_changed"] = out.flags_changed
        return f

    def cool_down(self, side: Side, call: int, bufs: CallBuffers):
        """After a discarded (throttled) sample: the timer's rest and back-to-back calls, each
        prepared and verified. Returns None, or (outcome, damage facts or None) of the first
        call that failed or damaged its buffers."""
        trouble: List[Any] = []

        class _Stop(Exception):
            pass

        def again() -> None:
            self.prepare(bufs)
            out = self.invoke(side, call, bufs)
            if not out.ok():
                trouble.append((out, None))
                raise _Stop()
            if not self.guards_hold(bufs):
                trouble.append((out, self.damage_facts(bufs, out, -1, "cool-down")))
                raise _Stop()

        try:
            if side.host is not None:
                from .remote_side import cool_down

                cool_down(again)
            else:
                self.timer.cool_down(again)
        except _Stop:
            pass
        return trouble[0] if trouble else None

    def checked_facts(self, out: Outcome, cur: CallBuffers, ref: CallBuffers, call: int, sample: int) -> Dict[str, Any]:
        """A checked call's facts: the reference on the values the call was given, then the
        comparison (red zones and inputs included)."""
        with op_times.scope("phase:checked_call"):
            ref.copy_inputs_given_to(cur)
            ref_rc, ref_err = self.run_reference(call, ref)
            with op_times.scope("phase:compare"):
                f = self.facts(out, cur, ref, ref_rc, ref_err)
            f["sample"] = sample
            return f

    @staticmethod
    def guards_hold(bufs: CallBuffers) -> bool:
        """After an unchecked call: red zones and inputs intact (phase:guards)."""
        with op_times.scope("phase:guards"):
            return bufs.intact()

    @staticmethod
    def _failure_fields(out: Outcome) -> Dict[str, Any]:
        e: Dict[str, Any] = {"return_code": out.return_code}
        if out.device_error:
            e["device_error"] = out.device_error
        if out.exception:
            e["exception"] = out.exception
        return e

    def bench_item(self, b: BenchItem) -> None:
        plan = self.job.calls[b.call]
        self.ev.write({"event": "bench_start", "id": b.id})
        with op_times.scope("phase:input_sets"):
            sets = self._make_sets(b, plan)
        n_sets = len(sets)
        ref = CallBuffers(plan, self.backend)
        draw = CheckDraw(b.seed, b.check_every, b.tail_checks)
        flags_changed: List[Dict[str, Any]] = []
        rule = StoppingRule(b.stop)
        samples: List[float] = []
        checks: List[Dict[str, Any]] = []
        sample_info: List[Dict[str, Any]] = []
        discarded = 0
        warm, warm_s = 0, 0.0

        def fail(where: str, sample: int, out: Outcome) -> None:
            e = {"event": "bench_result", "id": b.id, "error": where, "sample": sample}
            e.update(self._failure_fields(out))
            self.ev.write(e)
            if out.sticky:
                raise sticky_fatal("candidate", out)

        def note_flags(out: Outcome, sample: int) -> None:
            if out.flags_changed and not flags_changed:
                flags_changed.extend(dict(f, sample=sample) for f in out.flags_changed)

        def finish(stop_reason: str) -> None:
            result: Dict[str, Any] = {
                "event": "bench_result",
                "id": b.id,
                "samples_s": samples,
                "warmup_calls": warm,
                "warmup_s": warm_s,
                "stop_reason": stop_reason,
                "input_sets": n_sets,
                "flush_bytes": b.flush_bytes,
                "checks": checks,
                "discarded_samples": discarded,
            }
            if sample_info:
                result["sample_info"] = sample_info
            if flags_changed:
                result["numeric_flags_changed"] = flags_changed
            self.ev.write(result)

        with op_times.scope("phase:warmup"):
            # Warm-up: page in code and data, compile (Triton), let clocks and caches settle.
            warm_start = time.perf_counter()
            while warm < b.warmup_min_calls or time.perf_counter() - warm_start < b.warmup_min_s:
                cur = sets[warm % n_sets]
                self.prepare(cur)
                dt, out, _ = self.time_call(self.candidate, b.call, cur)
                warm_s += dt
                note_flags(out, -1)
                if not out.ok():
                    return fail("warmup", warm, out)
                if not self.guards_hold(cur):
                    checks.append(self.damage_facts(cur, out, warm, "warmup"))
                    return finish(INTEGRITY_FAILURE)
                warm += 1
                if warm >= 1000:
                    break

        def too_few_windows() -> bool:
            # The job's timer_min_windows: on a machine whose every core is busy one honest window
            # may include a scheduler slice of waiting; the smallest of five does not.
            return (len(samples) < b.timer_min_windows and bool(sample_info)
                    and isinstance(sample_info[-1], dict) and "window_s" in sample_info[-1])

        s = 0
        last_progress = time.perf_counter()
        while not rule.done or too_few_windows():
            cur = sets[s % n_sets]
            sample_start = time.perf_counter()
            self.prepare(cur, lambda: self.flush_caches(self.candidate, b.flush_bytes))
            dt, out, info = self.time_call(self.candidate, b.call, cur)
            cost = time.perf_counter() - sample_start
            checked = draw.draw(s)  # after the call: nothing before it depends on the draw
            note_flags(out, s)
            if not out.ok():
                return fail("sample", s, out)
            if not self.guards_hold(cur):
                checks.append(self.checked_facts(out, cur, ref, b.call, s) if checked
                              else self.damage_facts(cur, out, s, "sample"))
                return finish(INTEGRITY_FAILURE)
            if isinstance(info, dict) and info.get("discard"):
                discarded += 1
                trouble = self.cool_down(self.candidate, b.call, cur)
                if trouble is not None:
                    out, damage = trouble
                    if damage is None:
                        return fail("sample", s, out)
                    damage["sample"] = s
                    checks.append(damage)
                    return finish(INTEGRITY_FAILURE)
                continue
            if info is not None:
                sample_info.append(info)
            samples.append(dt)
            rule.add(dt, cost)
            if time.perf_counter() - last_progress >= PROGRESS_INTERVAL_S:
                self.ev.write(progress_event(b.id, [rule]))
                last_progress = time.perf_counter()
            if checked:
                checks.append(self.checked_facts(out, cur, ref, b.call, s))
            s += 1
        # The final check: one more call after the last sample, prepared and flushed like a sample.
        if draw.enabled and samples:
            cur = sets[s % n_sets]
            self.prepare(cur, lambda: self.flush_caches(self.candidate, b.flush_bytes))
            _, out, _ = self.time_call(self.candidate, b.call, cur)
            note_flags(out, s)
            if not out.ok():
                return fail("final check", s, out)
            f = self.checked_facts(out, cur, ref, b.call, s)
            f["final"] = True
            checks.append(f)
        finish(rule.state)

    # ---- A/B ------------------------------------------------------------------------------------

    def ab_item(self, b: BenchItem) -> None:
        plan = self.job.calls[b.call]
        self.ev.write({"event": "ab_start", "id": b.id})
        sides = [self.base, self.candidate]
        names = ["base", "candidate"]
        with op_times.scope("phase:input_sets"):
            sets = self._make_sets(b, plan)
        n_sets = len(sets)
        ref = CallBuffers(plan, self.backend)
        draw = CheckDraw(b.seed, b.check_every, b.tail_checks)
        next_set = [0]

        def take_set() -> CallBuffers:
            s = sets[next_set[0] % n_sets]
            next_set[0] += 1
            return s

        def side_at(rnd: int, pos: int) -> int:  # ABBA
            return 0 if (rnd % 2 == 0) == (pos == 0) else 1

        samples: List[List[float]] = [[], []]
        # The checker's window around each kept sample, parallel to samples (hosts only).
        windows: List[List[float]] = [[], []]
        # The timer's facts of each kept sample (clocks, clock event reasons), as the bench's sample_info.
        sample_info: List[List[Dict[str, Any]]] = [[], []]
        checks: List[List[Dict[str, Any]]] = [[], []]
        flags_changed: List[Dict[str, Any]] = []
        warm = [0, 0]
        warm_s = [0.0, 0.0]
        stopped = ["not_done", "not_done"]
        discarded = [0, 0]
        state = {"stop": "both_done", "early": None}  # the item's stop, and the early verdict if any

        def fail(where: str, side: int, sample: int, out: Outcome) -> None:
            e = {"event": "ab_result", "id": b.id, "error": where, "side": names[side], "sample": sample,
                 "base_samples_s": samples[0], "candidate_samples_s": samples[1]}
            e.update(self._failure_fields(out))
            self.ev.write(e)
            if out.sticky:
                raise sticky_fatal(names[side], out)

        def note_flags(out: Outcome, side: int, sample: int) -> None:
            if out.flags_changed and not flags_changed:
                flags_changed.extend(dict(f, sample=sample, side=names[side]) for f in out.flags_changed)

        def reason(si: int) -> str:
            return stopped[si] if stopped[si] != "not_done" else state["stop"]

        def finish() -> None:
            result = {
                "event": "ab_result",
                "id": b.id,
                "order": "ABBA",
                "base_samples_s": samples[0],
                "candidate_samples_s": samples[1],
                "base_checks": checks[0],
                "candidate_checks": checks[1],
                "base_stop_reason": reason(0),
                "candidate_stop_reason": reason(1),
                "stop": state["stop"],
                "base_warmup_calls": warm[0],
                "candidate_warmup_calls": warm[1],
                "input_sets": n_sets,
                "flush_bytes": b.flush_bytes,
                "base_discarded_samples": discarded[0],
                "candidate_discarded_samples": discarded[1],
                "early_verdict": state["early"],
            }
            if flags_changed:
                result["numeric_flags_changed"] = flags_changed
            if sides[0].host is not None and sides[1].host is not None:
                result["base_windows_s"] = windows[0]
                result["candidate_windows_s"] = windows[1]
            if sample_info[0] or sample_info[1]:
                result["base_sample_info"] = sample_info[0]
                result["candidate_sample_info"] = sample_info[1]
            self.ev.write(result)

        def damaged(side: int, entry: Dict[str, Any]) -> None:
            checks[side].append(entry)
            state["stop"] = INTEGRITY_FAILURE
            finish()

        self.ev.write({"event": "stage", "id": b.id, "stage": "warmup"})
        with op_times.scope("phase:warmup"):
            warm_start = time.perf_counter()
            for r in range(1000):
                if warm[0] >= b.warmup_min_calls and warm[1] >= b.warmup_min_calls and \
                        time.perf_counter() - warm_start >= 2 * b.warmup_min_s:
                    break
                for pos in range(2):
                    side = side_at(r, pos)
                    cur = take_set()
                    self.prepare(cur)
                    dt, out, _ = self.time_call(sides[side], b.call, cur)
                    warm_s[side] += dt
                    note_flags(out, side, -1)
                    if not out.ok():
                        return fail("warmup", side, warm[side], out)
                    if not self.guards_hold(cur):
                        return damaged(side, self.damage_facts(cur, out, warm[side], "warmup"))
                    warm[side] += 1

        self.ev.write({"event": "stage", "id": b.id, "stage": "timing"})
        rules = [StoppingRule(b.stop), StoppingRule(b.stop)]
        last_progress = time.perf_counter()
        ev_cfg = b.early_verdict
        max_retakes = 10
        r = 0
        while True:
            # Where the sides have windows, nothing ends the item before each has the job's
            # timer_min_windows.
            may_end = (not windows[0] and not windows[1]) or min(len(windows[0]), len(windows[1])) >= b.timer_min_windows
            if may_end and stopped[0] != "not_done" and stopped[1] != "not_done":
                break
            capped = False
            for si in range(2 if may_end else 0):
                if rules[si].total_s >= rules[si].max_time_s:
                    capped, state["stop"] = True, "time_cap"
                elif rules[si].count >= rules[si].max_samples:
                    capped, state["stop"] = True, "sample_cap"
            if capped:
                break
            for pos in range(2):
                side = side_at(r, pos)
                cur = take_set()
                n = len(samples[side])
                attempt = 0
                sample_start = time.perf_counter()
                while True:
                    self.prepare(cur, lambda: self.flush_caches(sides[side], b.flush_bytes))
                    dt, out, info = self.time_call(sides[side], b.call, cur)
                    checked = draw.draw(n)  # after the call, as in the bench
                    note_flags(out, side, n)
                    if not out.ok():
                        return fail("sample", side, n, out)
                    if not self.guards_hold(cur):
                        return damaged(side, self.checked_facts(out, cur, ref, b.call, n) if checked
                                       else self.damage_facts(cur, out, n, "sample"))
                    if attempt < max_retakes and isinstance(info, dict) and info.get("discard"):
                        discarded[side] += 1
                        attempt += 1
                        trouble = self.cool_down(sides[side], b.call, cur)
                        if trouble is not None:
                            out, damage = trouble
                            if damage is None:
                                return fail("sample", side, n, out)
                            damage["sample"] = n
                            return damaged(side, damage)
                        continue
                    break
                samples[side].append(dt)
                if isinstance(info, dict):
                    sample_info[side].append(info)
                    if "window_s" in info:
                        windows[side].append(info["window_s"])
                rules[side].add(dt, time.perf_counter() - sample_start)
                if stopped[side] == "not_done" and rules[side].done:
                    stopped[side] = rules[side].state
                if checked:
                    checks[side].append(self.checked_facts(out, cur, ref, b.call, n))
            r += 1
            if time.perf_counter() - last_progress >= PROGRESS_INTERVAL_S:
                self.ev.write(progress_event(b.id, rules))
                last_progress = time.perf_counter()
            # Both sides have the same count after a round: a look, once each has its minimum time.
            if ev_cfg and early_verdict.is_look(len(samples[0]), ev_cfg) and \
                    len(samples[0]) >= rules[0].min_samples and \
                    min(rules[0].total_s, rules[1].total_s) >= float(ev_cfg.get("min_time_s", 0.1)):
                state["early"] = early_verdict.settled_verdict(samples[0], samples[1], ev_cfg)
                if state["early"] is not None:
                    state["stop"] = "early_verdict"
                    break
        # The final check of each side: one more call per side after the last round, prepared and
        # flushed like a sample, in ABBA order: the last call is checked, wherever the stopping
        # rule ends.
        if draw.enabled and samples[0] and samples[1]:
            for pos in range(2):
                side = side_at(r, pos)
                cur = take_set()
                n = len(samples[side])
                self.prepare(cur, lambda: self.flush_caches(sides[side], b.flush_bytes))
                _, out, _ = self.time_call(sides[side], b.call, cur)
                note_flags(out, side, n)
                if not out.ok():
                    return fail("final check", side, n, out)
                f = self.checked_facts(out, cur, ref, b.call, n)
                f["final"] = True
                checks[side].append(f)
        finish()

    # ---- profile (Nsight Compute) -------------------------------------------------------------

    def profile_item(self, b: BenchItem) -> None:
        """run_profile_item: one input set, the warm-up, a flush outside the range, then exactly
        one candidate call inside the profiler range (cudaProfilerStart/Stop), nothing else in it."""
        plan = self.job.calls[b.call]
        self.ev.write({"event": "profile_start", "id": b.id})
        cur = CallBuffers(plan, self.backend)
        cur.fill_inputs(derive_seed(b.seed, "set0"))

        def fail(where: str, out: Outcome) -> None:
            e = {"event": "profile_result", "id": b.id, "error": where}
            e.update(self._failure_fields(out))
            self.ev.write(e)
            if out.sticky:
                raise sticky_fatal("candidate", out)

        warm = max(1, b.warmup_min_calls)
        for _ in range(warm):
            out = self.invoke(self.candidate, b.call, cur)
            if not out.ok():
                return fail("warmup", out)
        self.timer.flush_caches(b.flush_bytes)
        profiler = None
        if self.backend.is_cuda:
            import torch.cuda.profiler as profiler  # type: ignore

            self.backend.torch.cuda.synchronize()
            profiler.start()
        t0 = time.perf_counter()
        out = self.invoke(self.candidate, b.call, cur)
        wall_s = time.perf_counter() - t0
        if profiler is not None:
            profiler.stop()
        if not out.ok():
            return fail("profiled call", out)
        self.ev.write({"event": "profile_result", "id": b.id, "wall_s": wall_s, "warmup_calls": warm})

    # ---- the job ----------------------------------------------------------------------------------

    def run(self) -> None:
        if self.job.phase == "gate":
            for c in self.job.gate:
                with op_times.scope("phase:gate_case"):
                    self.gate_case(c)
        elif self.job.phase == "ab":
            for b in self.job.bench:
                with op_times.scope("phase:ab_item"):
                    self.ab_item(b)
        elif self.job.phase == "profile":
            for b in self.job.bench:
                self.profile_item(b)
        else:
            for b in self.job.bench:
                with op_times.scope("phase:bench_item"):
                    self.bench_item(b)


def sticky_fatal(who: str, out: Outcome) -> Fatal:
    """The end of the worker after a call that left the candidate unusable: a sticky device
    error, or its host's death."""
    if out.host_died:
        return Fatal(out.device_error, candidate_died=True)
    return Fatal("device error in the %s: %s" % (who, out.device_error))


class _UntimedCalls:
    """The reference's "timer": a checked call run to completion, never timed."""

    def __init__(self, backend):
        self.backend = backend

    def checked_call(self, callee, kwargs, census: bool):
        ret = callee.invoke(kwargs)
        self.backend.synchronize()
        return ret, None


def make_flags(backend, allow_tf32: bool):
    if backend.is_torch:
        return NumericFlags(backend.torch, allow_tf32)
    return NoFlags()


def make_timer(backend):
    from . import timing

    if backend.is_cuda:
        from .census import Census

        # The trace goes to the temporary directory: a confined host's private one (confinement.py).
        return timing.CudaTimer(backend, Census(backend.torch, ""))
    return timing.CpuTimer(backend)


def format_load_error(e: BaseException) -> str:
    if isinstance(e, LoadError):
        return str(e)
    return "%s: %s" % (type(e).__name__, e) + "\n" + traceback.format_exc()
