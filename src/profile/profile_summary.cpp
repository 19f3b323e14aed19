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

std::string md_cell(std::string s) {
    std::string out;
    for (char c : s) {
        if (c == '|') out += "\\|";
        else if (c == '\n' || c == '\r') out += ' ';
        else out += c;
    }
    return out;
}

std::string code(const std::string& s) { return "`" + md_cell(s) + "`"; }

std::string num_or_dash(const std::optional<double>& v, const char* spec) {
    return v ? fmt::format(fmt::runtime(spec), *v) : std::string("–");
}

std::string bound_label(const diagnosis& d) {
    std::string s = to_string(d.kind);
    if (d.level) s += fmt::format(" ({})", d.level == memory_level::dram ? "DRAM" : "L1/L2");
    return s;
}

std::string evidence_value(const evidence_item& e) {
    if (e.unit == "ns") return format_duration_ns(e.value);
    if (e.unit == "%") return fmt::format("{:.1f} %", e.value);
    if (e.unit == "% of stall cycles") return fmt::format("{:.0f} % of stall cycles", e.value);
    return e.unit.empty() ? fmt::format("{:.4g}", e.value) : fmt::format("{:.4g} {}", e.value, e.unit);
}

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

std::string to_markdown(const profile_summary& s) {
    std::string md = "# Profile summary\n\n";
    md += fmt::format("- device: {}\n", s.device_name.empty() ? std::string("unknown") : s.device_name);
    if (!s.source.empty()) md += fmt::format("- capture: {}\n", code(s.source));
    md += fmt::format("- kernels: {}, total {}", s.kernels.size(), format_duration_ns(s.total_duration_ns));
    if (s.total_dram_bytes)
        md += fmt::format(", DRAM {}{}", format_bytes(*s.total_dram_bytes), s.dram_bytes_derived ? " (derived: rate × time)" : "");
    md += "\n";
    if (s.dominant) {
        const auto& e = s.kernels[*s.dominant];
        md += fmt::format("- dominant: #{} {} ({:.0f} % of profiled time), {}\n", *s.dominant,
                          code(short_kernel_name(e.facts.name)), e.share_of_time.value_or(0) * 100, bound_label(e.diag));
    }
    for (const auto& n : s.notes) md += fmt::format("- note: {}\n", n);

    md += "\n| # | kernel | grid × block | time | share | SM % | memory % | DRAM % | DRAM BW | occupancy achieved / theoretical % "
          "| waves | regs | bound |\n";
    md += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (std::size_t i = 0; i < s.kernels.size(); ++i) {
        const auto& k = s.kernels[i].facts;
        const auto& d = s.kernels[i].diag;
        md += fmt::format("| {} | {} | {} × {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} |\n", i,
                          code(short_kernel_name(k.name)), num_or_dash(k.grid_blocks, "{:.0f}"),
                          num_or_dash(k.block_threads, "{:.0f}"),
                          k.duration_ns ? format_duration_ns(*k.duration_ns) : std::string("–"),
                          s.kernels[i].share_of_time ? fmt::format("{:.0f} %", *s.kernels[i].share_of_time * 100) : "–",
                          num_or_dash(k.sm_throughput_pct, "{:.1f}"), num_or_dash(k.memory_throughput_pct, "{:.1f}"),
                          num_or_dash(k.dram_throughput_pct, "{:.1f}"),
                          k.dram_bytes_per_second ? format_bytes_per_s(*k.dram_bytes_per_second) : std::string("–"),
                          num_or_dash(k.achieved_occupancy_pct, "{:.1f}"), num_or_dash(k.theoretical_occupancy_pct, "{:.0f}"),
                          num_or_dash(k.waves_per_sm, "{:.2f}"), num_or_dash(k.registers_per_thread, "{:.0f}"),
                          bound_label(d));
    }

    if (s.roofline) {
        const auto& r = *s.roofline;
        const auto& p = r.point;
        md += fmt::format("\n## Roofline{}\n\n", r.shape.empty() ? std::string() : fmt::format(" (shape {})", code(r.shape)));
        md += fmt::format("Peaks: {} ({}): DRAM {}, {} {:.0f} TFLOP/s.\n\n", r.peaks.device_name, to_string(r.peaks.source),
                          format_bytes_per_s(r.peaks.dram_bytes_per_s), p.uses_tensor_cores ? "tensor" : "FP32",
                          p.rate_flops_per_s / 1e12);
        md += "| quantity | value |\n|---|---|\n";
        md += fmt::format("| floor | {} ({}-bound: memory {}, compute {}) |\n", format_duration_ns(p.floor_ns),
                          to_string(p.bound), format_duration_ns(p.memory_time_ns), format_duration_ns(p.compute_time_ns));
        md += fmt::format("| spec work | {:.3g} FLOP, {} |\n", p.flops, format_bytes(p.bytes));
        md += fmt::format("| arithmetic intensity | {} FLOP/B (ridge {:.1f}) |\n",
                          std::isfinite(p.arithmetic_intensity) ? fmt::format("{:.3g}", p.arithmetic_intensity) : "∞",
                          p.ridge_point);
        if (r.profiled_ns)
            md += fmt::format("| profiled (ncu, per call) | {} → {} of floor{} |\n", format_duration_ns(*r.profiled_ns),
                              r.profiled_pct_of_floor ? fmt::format("{:.1f} %", *r.profiled_pct_of_floor) : "–",
                              r.profiled_below_floor ? " **below the floor: suspect**" : "");
        if (r.measured_ns)
            md += fmt::format("| measured (kloop bench) | {} → {} of floor{} |\n", format_duration_ns(*r.measured_ns),
                              r.measured_pct_of_floor ? fmt::format("{:.1f} %", *r.measured_pct_of_floor) : "–",
                              r.measured_below_floor ? " **below the floor: suspect**" : "");
        if (r.dram_bytes)
            md += fmt::format("| DRAM bytes (per call) | {}{}{} |\n", format_bytes(*r.dram_bytes),
                              r.dram_bytes_derived ? " (derived)" : "",
                              r.reread_factor ? fmt::format(" → re-read factor {:.2f}", *r.reread_factor) : "");
        for (const auto& n : r.notes) md += fmt::format("\n- note: {}", n);
        if (!r.notes.empty()) md += "\n";
    }

    for (std::size_t i = 0; i < s.kernels.size(); ++i) {
        const auto& k = s.kernels[i].facts;
        const auto& d = s.kernels[i].diag;
        md += fmt::format("\n## #{} {}\n\n", i, code(short_kernel_name(k.name)));
        md += fmt::format("{}\n\n", code(k.name));
        md += fmt::format("**{}**\n\n", md_cell(d.headline));
        if (!d.evidence.empty()) {
            md += "| signal | value | rule | met |\n|---|---|---|---|\n";
            for (const auto& e : d.evidence)
                md += fmt::format("| {} | {} | {} | {} |\n", md_cell(e.signal), evidence_value(e), md_cell(e.threshold),
                                  e.met ? "yes" : "no");
        }
        if (!d.directions.empty()) {
            md += "\nNext directions:\n\n";
            for (std::size_t j = 0; j < d.directions.size(); ++j) {
                const auto& x = d.directions[j];
                md += fmt::format("{}. {} — signal: {} — {}#{}\n", j + 1, x.technique, x.signal, knowledge_base_path, x.kb_anchor);
            }
        }
        for (const auto& n : d.notes) md += fmt::format("\n- note: {}\n", n);
        bool rules_heading = false;
        for (const auto& r : s.kernels[i].rules) {
            if (r.type == "INF") continue;  // ncu's pointers to its own documentation
            if (!rules_heading) md += "\nncu's rules:\n\n";
            rules_heading = true;
            md += fmt::format("- [{}] {}{}: {}\n", r.type, r.rule,
                              r.estimated_speedup_pct ? fmt::format(" (est. speedup {:.1f} %)", *r.estimated_speedup_pct)
                                                      : std::string(),
                              md_cell(r.description));
        }
        if (!k.stalls.empty()) {
            md += "\nWarp stalls (per issued instruction, share): ";
            std::size_t shown = 0;
            for (const auto& st : k.stalls) {
                if (st.per_issue <= 0 || shown == 5) break;
                md += fmt::format("{}{} {:.2f} ({:.0f} %)", shown ? ", " : "", st.reason, st.per_issue, st.share * 100);
                ++shown;
            }
            md += "\n";
        }
    }
    return md;
}

}  // namespace kloop::profile
