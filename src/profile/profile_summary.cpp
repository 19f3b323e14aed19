// kloop profile: the summary of one capture (see profile_summary.hpp).
#include "profile/profile_summary.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_number.hpp"

namespace kloop::profile {

namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json_number(*v) : json(nullptr); }

json roofline_json(const roofline_summary& r) {
    return {{"shape", r.shape},
            {"peaks", to_json(r.peaks)},
            {"flops", r.point.flops},
            {"bytes", r.point.bytes},
            {"uses_tensor_cores", r.point.uses_tensor_cores},
            {"memory_time_ns", r.point.memory_time_ns},
            {"compute_time_ns", r.point.compute_time_ns},
            {"floor_ns", r.point.floor_ns},
            {"bound", to_string(r.point.bound)},
            {"arithmetic_intensity", json_number(r.point.arithmetic_intensity)},
            {"ridge_point", r.point.ridge_point},
            {"calls_profiled", r.calls_profiled},
            {"profiled_ns", opt(r.profiled_ns)},
            {"profiled_pct_of_floor", opt(r.profiled_pct_of_floor)},
            {"measured_ns", opt(r.measured_ns)},
            {"measured_pct_of_floor", opt(r.measured_pct_of_floor)},
            {"dram_bytes", opt(r.dram_bytes)},
            {"dram_bytes_derived", r.dram_bytes_derived},
            {"reread_factor", opt(r.reread_factor)},
            {"suspect_margin", r.suspect_margin},
            {"profiled_below_floor", r.profiled_below_floor},
            {"measured_below_floor", r.measured_below_floor},
            {"notes", r.notes}};
}

}  // namespace

std::string short_kernel_name(const std::string& full) {
    std::string name = full;
    for (const char* anon : {"<unnamed>::", "(anonymous namespace)::"})
        for (std::size_t p; (p = name.find(anon)) != std::string::npos;) name.erase(p, std::string_view(anon).size());
    // Cut at the parameter list: the first '(' outside template brackets.
    int depth = 0;
    std::size_t end = name.size();
    std::size_t last_space = std::string::npos;  // at depth 0, before `end`: after a return type
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (c == '<') ++depth;
        else if (c == '>' && depth > 0) --depth;
        else if (c == '(' && depth == 0) {
            end = i;
            break;
        } else if (c == ' ' && depth == 0) last_space = i;
    }
    std::string s = name.substr(0, end);
    if (last_space != std::string::npos && last_space < end) s = name.substr(last_space + 1, end - last_space - 1);
    return s.empty() ? full : s;
}

profile_summary summarize_profile(const summary_input& in) {
    profile_summary s;
    s.source = in.source;
    for (const auto& k : in.kernels)
        if (!k.device_name.empty()) {
            s.device_name = k.device_name;
            break;
        }

    // Totals and the dominant kernel.
    bool all_dram = !in.kernels.empty();
    double dram_total = 0;
    std::optional<double> longest;
    for (std::size_t i = 0; i < in.kernels.size(); ++i) {
        const auto& k = in.kernels[i];
        if (k.duration_ns) {
            s.total_duration_ns += *k.duration_ns;
            ++s.kernels_with_duration;
            if (!longest || *k.duration_ns > *longest) {
                longest = k.duration_ns;
                s.dominant = i;
            }
        }
        if (k.dram_bytes) {
            dram_total += *k.dram_bytes;
            s.dram_bytes_derived = s.dram_bytes_derived || k.dram_bytes_derived;
        } else {
            all_dram = false;
        }
    }
    if (all_dram) s.total_dram_bytes = dram_total;
    else if (!in.kernels.empty()) s.notes.push_back("DRAM bytes missing for some kernel: no DRAM total");
    if (in.kernels.empty()) s.notes.push_back("the capture holds no kernels (did the ncu filter match?)");
    if (s.kernels_with_duration < in.kernels.size())
        s.notes.push_back("gpu__time_duration.sum missing for some kernel: totals cover the others");

    // Roofline of the call.
    if (in.roofline) {
        const roofline_input& ri = *in.roofline;
        if (ri.calls_profiled < 1)
            throw usage_error(fmt::format("profile summary: calls_profiled must be >= 1, got {}", ri.calls_profiled));
        std::optional<device_peaks> peaks = in.peaks;
        if (!peaks && !s.device_name.empty()) peaks = datasheet_peaks(s.device_name);
        if (!peaks) {
            s.notes.push_back(fmt::format("no roofline: no peaks given and no datasheet entry for device '{}'",
                                          s.device_name.empty() ? std::string("unknown") : s.device_name));
        } else {
            roofline_summary r;
            r.shape = ri.shape;
            r.peaks = *peaks;
            r.point = roofline_floor(ri.flops, ri.bytes, *peaks, ri.uses_tensor_cores);
            r.calls_profiled = ri.calls_profiled;
            if (s.kernels_with_duration > 0 && s.kernels_with_duration == in.kernels.size())
                r.profiled_ns = s.total_duration_ns / ri.calls_profiled;
            if (ri.measured_ns) {
                if (!std::isfinite(*ri.measured_ns) || *ri.measured_ns <= 0)
                    throw usage_error(fmt::format("profile summary: measured time must be > 0 ns, got {}", *ri.measured_ns));
                r.measured_ns = ri.measured_ns;
            }
            if (r.point.floor_ns > 0) {
                if (r.profiled_ns && *r.profiled_ns > 0) {
                    r.profiled_pct_of_floor = pct_of_floor(r.point, *r.profiled_ns);
                    r.profiled_below_floor = suspect_below_floor(r.point, *r.profiled_ns, r.suspect_margin);
                }
                if (r.measured_ns) {
                    r.measured_pct_of_floor = pct_of_floor(r.point, *r.measured_ns);
                    r.measured_below_floor = suspect_below_floor(r.point, *r.measured_ns, r.suspect_margin);
                }
            } else {
                r.notes.push_back("spec flops and bytes are 0: no floor");
            }
            if (s.total_dram_bytes) {
                r.dram_bytes = *s.total_dram_bytes / ri.calls_profiled;
                r.dram_bytes_derived = s.dram_bytes_derived;
                if (ri.bytes > 0) r.reread_factor = reread_factor(*r.dram_bytes, ri.bytes);
            }
            if (r.dram_bytes_derived)
                r.notes.push_back("DRAM bytes derived from dram__bytes.sum.per_second x duration (no dram__bytes_read/_write)");
            if (r.profiled_below_floor || r.measured_below_floor)
                r.notes.push_back(fmt::format(
                    "faster than the floor by more than {:.0f} %: the spec's bytes/flops or the timing are wrong "
                    "(work skipped? data cached across calls?)",
                    r.suspect_margin * 100));
            if (r.peaks.source == peak_source::datasheet)
                r.notes.push_back("datasheet peaks: a calibrated floor would be a little lower (higher % of floor)");
            s.roofline = std::move(r);
        }
    }

    // Per-kernel diagnosis; the call's re-read factor speaks for a kernel only when it is the
    // call's one kernel.
    diagnosis_context ctx;
    if (s.roofline && s.roofline->reread_factor && in.kernels.size() == 1 && in.roofline->calls_profiled == 1)
        ctx.reread_factor = s.roofline->reread_factor;
    for (const auto& k : in.kernels) {
        kernel_entry e{k, diagnose(k, ctx), std::nullopt, {}};
        for (const auto& r : in.rules)
            if (r.kernel_id == k.id) e.rules.push_back(r);
        if (k.duration_ns && s.total_duration_ns > 0) e.share_of_time = *k.duration_ns / s.total_duration_ns;
        s.kernels.push_back(std::move(e));
    }
    return s;
}

json to_json(const profile_summary& s) {
    json kernels = json::array();
    for (const auto& e : s.kernels) {
        json k = to_json(e.facts);
        k["short_name"] = short_kernel_name(e.facts.name);
        k["share_of_time"] = opt(e.share_of_time);
        k["diagnosis"] = to_json(e.diag);
        json rules = json::array();
        for (const auto& r : e.rules) rules.push_back(to_json(r));
        k["ncu_rules"] = rules;
        kernels.push_back(std::move(k));
    }
    json dominant = nullptr;
    if (s.dominant) {
        const auto& e = s.kernels[*s.dominant];
        dominant = {{"index", *s.dominant},
                    {"id", e.facts.id},
                    {"name", e.facts.name},
                    {"short_name", short_kernel_name(e.facts.name)},
                    {"share_of_time", opt(e.share_of_time)},
                    {"bound", to_string(e.diag.kind)}};
    }
    return {{"schema_version", profile_summary_schema_version},
            {"kind", "kloop.profile_summary"},
            {"source", s.source},
            {"device", s.device_name},
            {"totals",
             {{"kernels", s.kernels.size()},
              {"kernels_with_duration", s.kernels_with_duration},
              {"duration_ns", s.total_duration_ns},
              {"dram_bytes", opt(s.total_dram_bytes)},
              {"dram_bytes_derived", s.dram_bytes_derived}}},
            {"dominant_kernel", dominant},
            {"roofline", s.roofline ? roofline_json(*s.roofline) : json(nullptr)},
            {"kernels", kernels},
            {"notes", s.notes}};
}

}  // namespace kloop::profile
