// kloop eval: the profile step (see profile_step.hpp).
#include "eval/profile_step.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "eval/calibration.hpp"
#include "platform/file_io.hpp"
#include "profile/kernel_profile.hpp"
#include "profile/ncu_csv.hpp"
#include "profile/roofline.hpp"

namespace kloop::eval {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const spec::mode_spec& find_mode(const spec::op_spec& spec, const std::string& mode) {
    for (const auto& m : spec.modes)
        if (m.name == mode) return m;
    std::string known;
    for (const auto& m : spec.modes) known += (known.empty() ? "" : ", ") + m.name;
    throw usage_error(fmt::format("--mode '{}': not a mode of op '{}' (modes: {})", mode, spec.name, known));
}

const spec::shape_spec* find_shape(const spec::op_spec& spec, const std::string& shape) {
    for (const auto& s : spec.shapes)
        if (s.name == shape) return &s;
    return nullptr;
}

// Below this share of the spec's bytes the kernels cannot have read their inputs once.
constexpr double k_bytes_collapse_fraction = 0.5;

}  // namespace

std::string default_profile_shape(const spec::op_spec& spec, const std::string& mode) {
    const auto& m = find_mode(spec, mode);
    std::string best;
    double best_cost = -1;
    for (const auto& s : spec.shapes) {
        if (!s.bench) continue;
        double cost = 0;
        if (m.bytes) cost = static_cast<double>(m.bytes->eval(s.dims));
        else if (m.flops) cost = static_cast<double>(m.flops->eval(s.dims));
        if (cost >= best_cost) {
            best = s.name;
            best_cost = cost;
        }
    }
    if (best.empty()) throw usage_error(fmt::format("op '{}' has no bench shape to profile", spec.name));
    return best;
}

std::string timer_below_profiler(const std::string& key, double measured_ns, double ncu_ns_per_call,
                                 double kernels_per_call) {
    if (!(measured_ns > 0) || !(ncu_ns_per_call > 0)) return "";
    const double margin = kernels_per_call > 1 ? profiler_margin_several_kernels : profiler_margin_one_kernel;
    if (measured_ns >= ncu_ns_per_call * (1.0 - margin)) return "";
    return fmt::format(
        "timer_below_profiler: {} measured {:.4g} ms, but ncu timed its kernels at {:.4g} ms per call ({:.3g} "
        "kernel(s), gpu__time_duration): the bench median is {:.2f}x under an out-of-process measurement (margin "
        "{:.0f} %) — work ran outside the timed window, or the timer was fooled",
        key, measured_ns * 1e-6, ncu_ns_per_call * 1e-6, kernels_per_call, ncu_ns_per_call / measured_ns, margin * 100);
}

void judge_profiles(profile_step_result& r) {
    r.headline_entry.reset();
    r.suspect = false;
    r.suspect_reasons.clear();
    int parsed = 0, full = 0;
    std::map<std::string, bool> target_full;
    for (const auto& e : r.entries) {
        const auto key = e.capture.mode + "/" + e.capture.shape;
        target_full.try_emplace(key, false);
        if (!e.summary) continue;
        ++parsed;
        if (e.capture.set == "full") {
            ++full;
            target_full[key] = true;
        }
        const auto& s = *e.summary;
        if (s.kernels.empty()) {
            r.suspect = true;
            r.suspect_reasons.push_back(fmt::format("no_kernels: the profiled {} call launched no kernel", key));
            continue;
        }
        if (e.capture.set != "full" && e.capture.set != "targeted") continue;
        if (e.spec_bytes && *e.spec_bytes > 0 && s.total_dram_bytes &&
            *s.total_dram_bytes < k_bytes_collapse_fraction * *e.spec_bytes) {
            const std::string msg = fmt::format(
                "bytes_collapsed: {} moved {:.3g} DRAM bytes in its kernels, under half the {:.3g} the spec says the "
                "op needs ({} capture)",
                key, *s.total_dram_bytes, *e.spec_bytes, e.capture.set);
            if (std::find(r.suspect_reasons.begin(), r.suspect_reasons.end(), msg) == r.suspect_reasons.end()) {
                r.suspect = true;
                r.suspect_reasons.push_back(msg);
            }
        }
    }
    // The floor, with the peaks no honest kernel can beat (calibration.hpp).
    std::map<std::string, bool> floor_checked;
    for (const auto& e : r.entries) {
        const auto key = e.capture.mode + "/" + e.capture.shape;
        if (!e.summary || !e.measured_ns || floor_checked[key]) continue;
        if (!e.spec_bytes && !e.spec_flops) continue;
        const auto peaks = peaks_for_device(e.summary->device_name);
        if (!peaks.suspect) continue;
        floor_checked[key] = true;
        const bool tensor = e.summary->roofline && e.summary->roofline->point.uses_tensor_cores;
        const auto point = profile::roofline_floor(e.spec_flops.value_or(0), e.spec_bytes.value_or(0), *peaks.suspect, tensor);
        if (profile::suspect_below_floor(point, *e.measured_ns)) {
            r.suspect = true;
            r.suspect_reasons.push_back(fmt::format(
                "below_floor: {} measured {:.4g} ms, below the roofline floor {:.4g} ms ({}-bound at {} peaks) by more "
                "than {:.0f} %: the spec's bytes/flops or the measurement are wrong",
                key, *e.measured_ns * 1e-6, point.floor_ns * 1e-6, profile::to_string(point.bound),
                profile::to_string(peaks.suspect->source), profile::default_suspect_margin * 100));
        }
    }

    // The bench's timer against ncu's (an out-of-process measurement of the same call's kernels):
    // per target, the smallest per-call kernel time of its parsed captures, so the rule leans
    // towards not flagging.
    std::map<std::string, std::pair<double, double>> ncu_per_call;  // key → (ns per call, kernels per call)
    std::map<std::string, double> measured;
    for (const auto& e : r.entries) {
        if (!e.summary || !e.measured_ns || e.summary->kernels.empty()) continue;
        const auto& s = *e.summary;
        if (s.kernels_with_duration != s.kernels.size() || !(s.total_duration_ns > 0)) continue;
        const double calls = s.roofline ? std::max(1, s.roofline->calls_profiled) : 1;
        const auto key = e.capture.mode + "/" + e.capture.shape;
        const std::pair<double, double> v{s.total_duration_ns / calls, static_cast<double>(s.kernels.size()) / calls};
        auto [it, fresh] = ncu_per_call.try_emplace(key, v);
        if (!fresh && v.first < it->second.first) it->second = v;
        measured[key] = *e.measured_ns;
    }
    for (const auto& [key, v] : ncu_per_call)
        if (auto why = timer_below_profiler(key, measured[key], v.first, v.second); !why.empty()) {
            r.suspect = true;
            r.suspect_reasons.push_back(std::move(why));
        }

    if (r.entries.empty()) return;
    if (parsed == 0) {
        bool unavailable = false;
        for (const auto& e : r.entries) unavailable = unavailable || e.capture.status == "unavailable";
        r.status = unavailable ? "unavailable" : "failed";
        const auto& first = r.entries.front();
        r.note = first.capture.reason.empty() ? first.parse_error : first.capture.reason;
        return;
    }
    bool all_full = !target_full.empty();
    for (const auto& [k, f] : target_full) all_full = all_full && f;
    r.status = all_full ? "full" : "targeted";
    // The note: the first target's dominant kernel, from its fullest parsed capture.
    const profile_entry* pick = nullptr;
    for (const auto& e : r.entries) {
        if (!e.summary || !e.summary->dominant) continue;
        if (pick == nullptr || (pick->capture.set != "full" && e.capture.set == "full" &&
                                e.capture.mode == pick->capture.mode && e.capture.shape == pick->capture.shape))
            pick = &e;
    }
    if (pick != nullptr) {
        r.headline_entry = static_cast<std::size_t>(pick - r.entries.data());
        const auto& k = pick->summary->kernels[*pick->summary->dominant];
        r.bound = profile::to_string(k.diag.kind);
        r.headline = k.diag.headline;
        r.note = fmt::format("{} {}: {} ({})", pick->capture.mode, pick->capture.shape, k.diag.headline,
                             profile::short_kernel_name(k.facts.name));
        if (pick->summary->roofline && pick->summary->roofline->measured_pct_of_floor)
            r.note += fmt::format("; {:.1f} % of the roofline floor", *pick->summary->roofline->measured_pct_of_floor);
    }
}

profile_step_result run_profile_step(const evaluation_context& ctx, const profile_step_request& req) {
    profile_step_result r;
    fs::create_directories(req.out_dir);
    bool stop = false;
    for (const auto& t : req.targets) {
        const auto& mode = find_mode(ctx.spec, t.mode);
        const std::string shape = t.shape.empty() ? default_profile_shape(ctx.spec, t.mode) : t.shape;
        const auto* sh = find_shape(ctx.spec, shape);
        for (const auto set : req.sets) {
            if (stop) break;
            profile_entry e;
            e.measured_ns = t.measured_ns;
            if (sh != nullptr) {
                if (mode.bytes) e.spec_bytes = static_cast<double>(mode.bytes->eval(sh->dims));
                if (mode.flops) e.spec_flops = static_cast<double>(mode.flops->eval(sh->dims));
            }
            profile_request pr;
            pr.mode = t.mode;
            pr.shape = shape;
            pr.set = set;
            pr.out_dir = req.out_dir;
            pr.kernel_names = t.kernel_names;
            pr.timeout_s = req.timeout_s;
            pr.ncu = req.ncu;
            e.capture = capture_profile(ctx, pr);
            if (e.capture.status == "unavailable") stop = true;  // the same for every capture
            if (e.capture.ok() && set != profile_set::source) {
                try {
                    const auto table = profile::parse_ncu_raw_csv(platform::read_file(e.capture.raw_csv),
                                                                  e.capture.raw_csv.filename().string());
                    profile::summary_input in;
                    in.kernels = profile::profiles_from_table(table);
                    in.source = e.capture.raw_csv.filename().string();
                    if (e.spec_bytes || e.spec_flops) {
                        profile::roofline_input ri;
                        ri.shape = shape;
                        ri.flops = e.spec_flops.value_or(0);
                        ri.bytes = e.spec_bytes.value_or(0);
                        ri.measured_ns = t.measured_ns;
                        in.roofline = ri;
                    }
                    if (!in.kernels.empty()) in.peaks = peaks_for_device(in.kernels.front().device_name).report;
                    e.summary = profile::summarize_profile(in);
                } catch (const std::exception& ex) {
                    e.parse_error = fmt::format("{}: {}", e.capture.raw_csv.filename().string(), ex.what());
                }
            }
            r.entries.push_back(std::move(e));
        }
    }
    judge_profiles(r);
    return r;
}

}  // namespace kloop::eval
