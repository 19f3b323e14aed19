// kloop eval: the physics floor (see physics_floor.hpp).
#include "eval/physics_floor.hpp"

#include "eval/runner_session.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "eval/calibration.hpp"
#include "eval/plan_builder.hpp"

namespace kloop::eval {

namespace {

using nlohmann::json;

std::string bytes_rate(double v) {
    return v >= 1e12 ? fmt::format("{:.2f} TB/s", v * 1e-12) : fmt::format("{:.1f} GB/s", v * 1e-9);
}

std::string flops_rate(double v) {
    return v >= 1e12 ? fmt::format("{:.1f} TFLOP/s", v * 1e-12) : fmt::format("{:.1f} GFLOP/s", v * 1e-9);
}

std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024.0)); }

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

physics_bounds gpu_physics_bounds(const profile::device_peaks& peaks, std::uint64_t l2_bytes) {
    physics_bounds b;
    b.bytes_per_s = peaks.dram_bytes_per_s;
    b.flops_per_s = std::max(peaks.fp32_flops_per_s, peaks.tensor_flops_per_s);
    b.cache_bytes = l2_bytes;
    b.source = fmt::format("{} peaks of {}: {}, {} (dense tensor-core rate, the highest for kloop's dtypes)",
                           profile::to_string(peaks.source), peaks.device_name, bytes_rate(b.bytes_per_s),
                           flops_rate(b.flops_per_s));
    return b;
}

physics_bounds host_physics_bounds(unsigned logical_cpus, std::uint64_t llc_bytes) {
    physics_bounds b;
    const unsigned cpus = std::max(1u, logical_cpus);
    b.bytes_per_s = host_bytes_per_s_per_cpu * cpus;
    b.flops_per_s = 0;
    b.cache_bytes = llc_bytes;
    b.source = fmt::format("host screen: {} per logical CPU x {} = {} (a generous upper bound, not a measurement); "
                           "compute not screened",
                           bytes_rate(host_bytes_per_s_per_cpu), cpus, bytes_rate(b.bytes_per_s));
    return b;
}

physics_bounds_choice physics_bounds_from_events(const std::vector<runner::event>& events, const environment_info& env) {
    physics_bounds_choice c;
    const auto* start = start_of(events);
    const json* device = start != nullptr && start->candidate_device.is_object() ? &start->candidate_device : nullptr;
    if (device == nullptr) {
        c.why_not = "the timing runner reported no device";
        return c;
    }
    const std::string kind = device->value("device", "");
    if (kind == "cpu") {
        c.bounds = host_physics_bounds(env.logical_cpus, env.llc_bytes);
        return c;
    }
    if (kind != "cuda") {
        c.why_not = fmt::format("no peaks for device kind '{}'", kind);
        return c;
    }
    const std::string name = device->value("name", "");
    const auto sheet = profile::datasheet_peaks(name);
    if (!sheet) {
        c.why_not = fmt::format("no datasheet peaks for GPU '{}' (the table is in src/profile/roofline.cpp)", name);
        return c;
    }
    std::optional<profile::device_peaks> calibrated;
    std::string note;
    try {
        calibrated = load_calibration(name);
    } catch (const std::exception& e) {
        note = fmt::format(" (calibration cache ignored: {})", e.what());
    }
    auto peaks = combine_peaks(calibrated, sheet).suspect.value_or(*sheet);
    peaks.device_name = name;
    // "datasheet" unless a calibrated figure raised one of the peaks.
    peaks.source = calibrated && (calibrated->dram_bytes_per_s > sheet->dram_bytes_per_s ||
                                  calibrated->fp32_flops_per_s > sheet->fp32_flops_per_s ||
                                  calibrated->tensor_flops_per_s > sheet->tensor_flops_per_s)
                       ? profile::peak_source::calibrated
                       : profile::peak_source::datasheet;
    c.bounds = gpu_physics_bounds(peaks, device->value("l2_bytes", std::uint64_t{0}));
    c.bounds->source += note;
    return c;
}

double written_bytes_of(const runner::call_plan& plan) {
    double w = 0;
    for (const auto& t : plan.outputs) w += static_cast<double>(t.numel()) * static_cast<double>(size_bytes(t.type));
    for (const auto& t : plan.inputs)
        if (t.inout) w += static_cast<double>(t.numel()) * static_cast<double>(size_bytes(t.type));
    return w;
}

physics_shape_verdict judge_physics_shape(const physics_shape& s, const physics_bounds& b) {
    physics_shape_verdict v;
    v.key = s.mode + "/" + s.shape;
    if (!positive_finite(s.median_s)) {
        v.text = v.key + ": no median";
        return v;
    }
    const bool has_bytes = s.bytes && positive_finite(*s.bytes) && positive_finite(b.bytes_per_s);
    const bool has_flops = s.flops && positive_finite(*s.flops) && positive_finite(b.flops_per_s);
    if (s.bytes && positive_finite(*s.bytes)) v.achieved_bytes_per_s = *s.bytes / s.median_s;
    if (s.flops && positive_finite(*s.flops)) v.achieved_flops_per_s = *s.flops / s.median_s;
    if (!has_bytes && !has_flops) {
        v.text = v.key + ": no cost formula the bounds can judge (the spec gives no bytes" +
                 std::string(positive_finite(b.flops_per_s) ? " or flops" : "; flops are not screened here") + ")";
        return v;
    }
    // Bytes written may still be in a write-back cache when the window ends; every input is cold.
    double dram_bytes = 0;
    if (has_bytes) {
        const double credit = std::min(std::max(0.0, s.written_bytes), static_cast<double>(b.cache_bytes));
        dram_bytes = std::max(0.0, *s.bytes - credit);
    }
    const double memory_s = has_bytes ? dram_bytes / b.bytes_per_s : 0.0;
    const double compute_s = has_flops ? *s.flops / b.flops_per_s : 0.0;
    v.floor_s = std::max(memory_s, compute_s);
    const bool memory_bound = memory_s >= compute_s;
    if (!(v.floor_s > 0)) {
        v.status = check_status::skipped;
        v.text = v.key + ": the floor is 0 (every byte the spec counts may be a write still in cache)";
        return v;
    }
    const double ratio = v.floor_s / s.median_s;  // > 1: faster than the hardware allows
    std::string how;
    if (memory_bound) {
        how = fmt::format("{} of the spec's bytes against a peak of {}", bytes_rate(v.achieved_bytes_per_s),
                          bytes_rate(b.bytes_per_s));
        if (dram_bytes < *s.bytes)
            how += fmt::format("; the floor counts {:.4g} of its {:.4g} bytes (written bytes up to the {} cache may "
                               "still be in it)",
                               dram_bytes, *s.bytes, mib(static_cast<double>(b.cache_bytes)));
    } else {
        how = fmt::format("{} of the spec's flops against a peak of {}", flops_rate(v.achieved_flops_per_s),
                          flops_rate(b.flops_per_s));
    }
    v.text = fmt::format("{}: median {:.4g} ms against the floor {:.4g} ms ({}-bound): {}", v.key, s.median_s * 1e3,
                         v.floor_s * 1e3, memory_bound ? "memory" : "compute", how);
    if (s.median_s < v.floor_s * (1.0 - physics_fail_margin)) {
        v.status = check_status::fail;
        v.text += fmt::format(" — {:.2f}x faster than the hardware allows", ratio);
    } else if (s.median_s < v.floor_s * (1.0 - physics_warn_margin)) {
        v.status = check_status::warn;
        v.text += fmt::format(" — {:.0f} % under the floor", (1.0 - s.median_s / v.floor_s) * 100.0);
    } else {
        v.status = check_status::pass;
    }
    return v;
}

integrity_check physics_floor_check(const std::vector<physics_shape>& shapes, const physics_bounds_choice& bounds,
                                    const std::string& label) {
    integrity_check c{physics_floor_check_name, check_status::skipped, ""};
    if (!bounds.bounds) {
        c.detail = label + "skipped: " + bounds.why_not;
        return c;
    }
    int judged = 0, failed = 0, warned = 0;
    std::string first_fail, first_warn, first_skip;
    double closest = 0;  // the largest floor / median among passing shapes
    std::string closest_key;
    for (const auto& s : shapes) {
        const auto v = judge_physics_shape(s, *bounds.bounds);
        if (v.status == check_status::skipped) {
            if (first_skip.empty()) first_skip = v.text;
            continue;
        }
        ++judged;
        if (v.status == check_status::fail && failed++ == 0) first_fail = v.text;
        if (v.status == check_status::warn && warned++ == 0) first_warn = v.text;
        if (v.status == check_status::pass && v.floor_s / s.median_s > closest) {
            closest = v.floor_s / s.median_s;
            closest_key = v.key;
        }
    }
    const std::string peaks = " [" + bounds.bounds->source + "]";
    if (failed > 0) {
        c.status = check_status::fail;
        c.detail = label + first_fail +
                   (failed > 1 ? fmt::format(" ({} of {} shapes below the floor)", failed, judged) : std::string()) +
                   ": the timer, the candidate or the spec's bytes/flops formula is wrong" + peaks;
    } else if (warned > 0) {
        c.status = check_status::warn;
        c.detail = label + first_warn +
                   fmt::format(" (under the floor by less than the {:.0f} % that fails)", physics_fail_margin * 100) + peaks;
    } else if (judged > 0) {
        c.status = check_status::pass;
        c.detail = label + fmt::format("{} timed shape(s) within physics; the closest, {}, at {:.0f} % of the floor "
                                       "(floor / median; 100 % = the hardware's limit)",
                                       judged, closest_key, closest * 100) +
                   peaks;
    } else {
        c.detail = label + "skipped: " + (first_skip.empty() ? std::string("no timed median") : first_skip);
    }
    return c;
}

std::vector<physics_shape> physics_shapes_of(const runner::job& job, const bench_report& bench) {
    std::vector<physics_shape> out;
    for (const auto& s : bench.shapes) {
        if (!s.stats_s) continue;
        physics_shape p{s.mode, s.shape, s.stats_s->median, s.bytes, s.flops, 0.0};
        for (const auto& plan : job.calls)
            if (plan.mode == s.mode && plan.shape == s.shape) {
                p.written_bytes = written_bytes_of(plan);
                break;
            }
        out.push_back(std::move(p));
    }
    return out;
}

integrity_check bench_physics_check(const runner::job& bench_job, const std::vector<runner::event>& events,
                                    const bench_report& bench, const environment_info& env) {
    return physics_floor_check(physics_shapes_of(bench_job, bench), physics_bounds_from_events(events, env));
}

integrity_check physics_floor_not_timed() {
    return {physics_floor_check_name, check_status::skipped, "skipped: nothing timed"};
}

void apply_physics_check(evaluation& ev, const integrity_check& c) {
    bool replaced = false;
    for (auto& x : ev.integrity)
        if (x.name == c.name) {
            x = c;
            replaced = true;
        }
    if (!replaced) ev.integrity.push_back(c);
    if (c.status == check_status::fail && ev.status == disposition::passed) {
        ev.status = disposition::gate_failed;
        ev.reason = "integrity check '" + c.name + "' failed: " + c.detail;
    }
}

}  // namespace kloop::eval
