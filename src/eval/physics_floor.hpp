// kloop eval: the physics floor — no timed median may beat the hardware.
//
// Responsibility: the integrity check `physics_floor` (docs/correctness.md "Physics floor"). For
// every timed (mode, shape) the spec's `bytes` and `flops` give the least time the machine needs:
//     floor = max(dram_bytes / bandwidth, flops / rate)
//     dram_bytes = bytes − min(written bytes, cache bytes)
// (output bytes a write-back cache can still hold when the timed window ends need not have reached
// DRAM yet; every input starts cold — the bench flushes before each sample). A median below
// floor × (1 − physics_fail_margin) fails: the timer, the candidate or the spec's cost formulas
// are wrong, and no verb may report it as a result (verify rejects it, compare/iterate/noise/
// report reject that side). Below floor × (1 − physics_warn_margin) warns. A shape without cost
// formulas, or a device without known peaks, is skipped and says why.
//
// Peaks: a GPU's datasheet figures (profile/roofline.hpp), each raised to the calibrated figure
// where that is higher (eval/calibration.hpp); the compute rate is the device's highest dense rate
// for any dtype kloop has (the tensor-core rate), since the check cannot know which unit a kernel
// used. A CPU has no datasheet kloop can look up: the memory term uses a deliberately generous
// bound per logical CPU (host_bytes_per_s_per_cpu) and the compute term is not screened.
//
// Everything but physics_bounds_from_events (which reads the calibration cache) is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/evaluation.hpp"
#include "profile/roofline.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

inline constexpr const char* physics_floor_check_name = "physics_floor";

// Why 25 %: against datasheet peaks an honest kernel lands at ≤ ~92 % of the bandwidth (H200:
// 4.8 TB/s datasheet, ~4.0–4.4 TB/s streamed), so being 10 % below the floor is already beyond
// clock and timer noise; the rest leaves room for input lines that survive a flush (L2 is not
// strictly LRU) and for datasheet figures that round down. A fail means the time is at least
// 1.33x faster than the hardware allows — the 7.8–8.4 TB/s "H200" medians this check exists for
// are 1.6–1.75x.
inline constexpr double physics_fail_margin = 0.25;
// Below the floor by more than this (but not the fail margin): warn.
inline constexpr double physics_warn_margin = 0.10;
// A screen, not a measurement: no CPU core streams from DRAM at more than ~100–120 GB/s (the
// fastest single-core figures published, Apple M-series performance cores; server cores reach
// 10–40 GB/s), and no socket sold today exceeds ~1 TB/s. 250 GB/s per logical CPU is above both
// for any machine kloop runs on, so only an impossible time fails.
inline constexpr double host_bytes_per_s_per_cpu = 250e9;

// The machine's limits used for one timing.
struct physics_bounds {
    double bytes_per_s = 0;         // memory term (> 0)
    double flops_per_s = 0;         // compute term; 0 = not screened
    std::uint64_t cache_bytes = 0;  // written bytes that may still sit in a write-back cache
    std::string source;             // one phrase for the record: where the figures come from
};

// One timed median to judge.
struct physics_shape {
    std::string mode;
    std::string shape;
    double median_s = 0;
    std::optional<double> bytes;    // the spec's formulas for this shape
    std::optional<double> flops;
    double written_bytes = 0;       // bytes of the outputs and in-out inputs
};

struct physics_shape_verdict {
    std::string key;                // "mode/shape"
    check_status status = check_status::skipped;
    double floor_s = 0;
    double achieved_bytes_per_s = 0;   // spec bytes / median (0 without bytes)
    double achieved_flops_per_s = 0;   // spec flops / median (0 without flops)
    std::string text;               // the numbers, one clause
};

// The bounds, or why there are none (the check is then skipped).
struct physics_bounds_choice {
    std::optional<physics_bounds> bounds;
    std::string why_not;
};

// GPU: datasheet per-peak raised to the calibrated one where higher; rate = max(fp32, tensor).
[[nodiscard]] physics_bounds gpu_physics_bounds(const profile::device_peaks& peaks, std::uint64_t l2_bytes);
// CPU: host_bytes_per_s_per_cpu × logical CPUs; compute not screened; the last-level cache.
[[nodiscard]] physics_bounds host_physics_bounds(unsigned logical_cpus, std::uint64_t llc_bytes);

// From a runner's "start" event ("candidate_device": {"device": "cuda", "name", "l2_bytes"} or
// {"device": "cpu"}) and the host facts. A GPU absent from the datasheet table, or no start
// event, gives no bounds and the reason. Reads the calibration cache ($KLOOP_HOME); an unreadable
// cache is ignored (the datasheet alone is used, and the source says so).
[[nodiscard]] physics_bounds_choice physics_bounds_from_events(const std::vector<runner::event>& events,
                                                               const environment_info& env);

// Bytes a call writes: its outputs and its in-out inputs.
[[nodiscard]] double written_bytes_of(const runner::call_plan& plan);

[[nodiscard]] physics_shape_verdict judge_physics_shape(const physics_shape& s, const physics_bounds& b);

// The integrity check over every timed median. fail when any shape fails (the detail names the
// first failing shape, its achieved TB/s or TFLOP/s and the peak, then how many failed); warn when
// any warns; pass when at least one shape was judged; skipped when none could be (no bounds, no
// cost formulas, no medians). `label` prefixes the detail ("A/B, candidate side: "); may be "".
[[nodiscard]] integrity_check physics_floor_check(const std::vector<physics_shape>& shapes,
                                                  const physics_bounds_choice& bounds, const std::string& label = "");

// The medians of a bench, with the written bytes from the job that timed them.
[[nodiscard]] std::vector<physics_shape> physics_shapes_of(const runner::job& job, const bench_report& bench);

// verify's check: the bench's medians against the bounds its runner's start event gives.
[[nodiscard]] integrity_check bench_physics_check(const runner::job& bench_job, const std::vector<runner::event>& events,
                                                  const bench_report& bench, const environment_info& env);

// The entry an untimed evaluation carries (the A/B replaces it with each side's own).
[[nodiscard]] integrity_check physics_floor_not_timed();

// Puts `c` into `ev.integrity` (replacing an entry of the same name) and, when it fails and the
// evaluation had passed, rejects it: gate_failed, "integrity check 'physics_floor' failed: …".
void apply_physics_check(evaluation& ev, const integrity_check& c);

}  // namespace kloop::eval
