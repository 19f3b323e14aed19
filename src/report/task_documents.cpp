// kloop report: docs/draft.md and TRAPS.md (see task_documents.hpp).
#include "report/task_documents.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kloop::report {

using namespace kloop::loop;

std::string draft_md(const draft_inputs& in) {
    const auto& c = in.c;
    const auto& spec = in.spec;
    std::string entries;
    for (const auto& m : spec.modes)
        entries += fmt::format("  - `{}`: candidate symbol `{}`, reference `{}`\n", m.name, m.entry, m.reference_entry);
    if (spec.blackbox) {  // black-box op (docs/blackbox.md): the repository's own commands are the contract
        const auto argv = [](const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, " ")); };
        entries = fmt::format("  - black box: the candidate replaces `{}` in a temporary copy of `{}`\n"
                              "  - gate: `{}` (green: exit 0 and a pytest summary with >= 1 passed, no failure)\n"
                              "  - bench: `{}` (JSON samples per shape; kloop computes the statistics)\n",
                              spec.blackbox->target.string(), spec.blackbox->root.string(), argv(spec.blackbox->gate.argv),
                              argv(spec.blackbox->bench.argv));
    }
    std::string gate, bench;
    for (const auto& s : c.shapes) {
        std::string dims;
        for (const auto& [k, v] : s.dims) dims += fmt::format("{}{}={}", dims.empty() ? "" : ", ", k, v);
        if (s.gate) gate += fmt::format("  - `{}` ({})\n", s.name, dims);
        if (s.bench) bench += fmt::format("  - `{}` ({})\n", s.name, dims);
    }
    std::string tols;
    for (const auto& t : c.tolerances) {
        std::string parts;
        if (t.atol) parts += fmt::format("atol {:g} ", *t.atol);
        if (t.rtol) parts += fmt::format("rtol {:g} ", *t.rtol);
        if (t.rel_rms) parts += fmt::format("rel_rms {:g} ", *t.rel_rms);
        tols += fmt::format("  - `{}.{}`: {}\n", t.mode, t.output, parts);
    }
    std::string frozen;
    for (const auto& f : c.frozen) frozen += fmt::format("  - `{}` (sha256 {})\n", f.path, f.sha256);
    const std::string lang = spec::to_string(spec.backend) == "cpu" ? "C++ for the CPU (one .cpp file, `<kloop/kernel.h>` only)"
                             : spec::to_string(spec.backend) == "cuda"
                                 ? "CUDA C++ (CUTLASS / CuTe headers allowed); no vendor library standing in for the op"
                                 : "Triton / Python; torch only as glue around a kernel you wrote";
    std::string out = fmt::format("# Task contract — {}\n\n", c.op);
    out += "Written by `kloop init`; edit the prose freely, but the frozen scope below is enforced: every kloop command "
           "re-hashes it and refuses (exit 5) when a file changed.\n\n";
    out += fmt::format("- **Op**: `{}` — {}\n- **Entry points**:\n{}", c.op, spec.description, entries);
    out += fmt::format("- **Kernel file**: `{}` (v0 = its contents at init, sha256 {})\n", c.candidate.string(), c.baseline_sha256);
    out += fmt::format("- **Target shapes** (bench):\n{}- **Gate shapes**:\n{}", bench, gate);
    out += fmt::format("- **Target speedup**: {}\n",
                       c.target_speedup ? fmt::format("x{:.2f} equal-weight geomean over the bench shapes vs v0", *c.target_speedup)
                                        : std::string("none stated (stop at the cap or on a named floor)"));
    out += fmt::format("- **Iteration cap**: {}\n", c.max_iterations);
    out += fmt::format("- **Allowed languages**: {}\n", lang);
    out += fmt::format("- **Validation command** (the frozen gate, every iteration): `kloop iterate --workspace {} "
                       "--candidate {} --proposal optimization_proposal.md`\n",
                       in.workspace.string(), c.candidate.string());
    out += fmt::format("- **Benchmark command** (fast signal by hand): `kloop verify {} --candidate {}`; the verdict: "
                       "`kloop report --workspace {}` (best vs v0, interleaved A/B)\n",
                       c.op_dir.string(), c.candidate.string(), in.workspace.string());
    out += "- **Promotion criteria**: full green gate (every gate shape, every mode, three trials, one seed drawn at "
           "check time); a repeatable win — overall A/B verdict FASTER against v0 in `kloop report`; a profiler reading "
           "that explains the win (kloop does not profile yet: attach one by hand).\n";
    out += fmt::format("- **Seed policy**: trials 0 and 1 use seeds {} and {}; every further trial draws its seed at "
                       "check time\n",
                       c.fixed_seeds[0], c.fixed_seeds[1]);
    out += fmt::format("- **Tolerances** (from the contract; never loosened during the loop):\n{}", tols);
    out += fmt::format("- **Frozen scope**:\n{}  - the public entry signatures above\n", frozen);
    return out;
}

std::string traps_md() {
    return R"(# TRAPS — read before trusting any number

Seeded by `kloop init`. When you hit a new trap, add it here in the same form so the next
session does not re-learn it.

## Partial writes pass on lucky memory
- **Fact**: an output element the kernel never writes can still hold a correct-looking value.
- **Why**: fresh allocations often reuse the previous call's buffer, which held the right answer.
- **How to apply**: kloop poisons every output with NaN (0xFF bytes for integers) and wraps it in
  canary red zones; a "works on my machine" partial write is a gate failure here. Never disable it.

## One-sided precision and TF32
- **Fact**: flipping TF32 on, or dropping an fp32 accumulator to bf16/tf32, makes a kernel faster
  by computing something less accurate.
- **Why**: the tolerance may still pass on the gate shapes, so the "win" is a numeric relaxation.
- **How to apply**: same accumulation precision and numeric flags as the baseline; a speedup that
  appears with a precision change is not a kernel win.

## The tolerance is relative
- **Fact**: `rtol` and `rel_rms` scale with the reference's magnitude.
- **Why**: with inputs of size ~1 a missing epsilon or a small bias can hide inside the
  tolerance (see the example's notes: a forgotten `eps` passes).
- **How to apply**: read the recorded max_abs / rel_rms against the tolerance, not just pass/fail;
  a candidate using most of the tolerance budget deserves a second look.

## Numeric-flag parity
- **Fact**: compiler or library flags (fast-math, TF32, denormals-are-zero) change results and speed.
- **Why**: a flag only the candidate gets is a one-sided relaxation.
- **How to apply**: build flags come from op.toml (frozen); do not add `#pragma` or attributes that
  change the floating-point model in the candidate.

## int64 index arithmetic
- **Fact**: `i * D + j` in 32-bit overflows past 2^31 elements.
- **Why**: the gate shapes may be small enough to hide it; production shapes are not.
- **How to apply**: compute offsets in int64 (the ABI's shapes are int64_t); test a large shape
  before promoting.

## An implausible speedup means a skipped path
- **Fact**: a 10x win from a one-line change usually means work was skipped (cached output, a
  branch that returns early, a shape specialisation that never runs the slow part).
- **Why**: the timer measures what ran, not what should have run.
- **How to apply**: kloop checks timed calls with new inputs at the same addresses; still, explain
  every win with a profile or a roofline number before promoting.

## Stale autotune cache
- **Fact**: autotuners (Triton's, hand-rolled ones) cache the chosen config per shape across edits.
- **Why**: a kernel edit can keep running the config tuned for the old code.
- **How to apply**: clear the autotune cache between iterations that change the kernel body;
  record the chosen config in the proposal.

## Clock drift: speedups from separate runs do not add
- **Fact**: v1 was x1.3 over v0 yesterday and v2 is x1.2 over v1 today does not make v2 x1.56 over v0.
- **Why**: clocks, thermals and other tenants differ between runs.
- **How to apply**: kloop classifies each iteration with an interleaved A/B against the current
  best, and `kloop report` re-measures best vs baseline side by side for the final claim.
)";
}

}  // namespace kloop::report
