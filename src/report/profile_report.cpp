// kloop report: the profile step's record and page (see profile_report.hpp).
#include "report/profile_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "platform/file_io.hpp"
#include "report/detail/markdown.hpp"
#include "profile/diagnosis.hpp"

namespace kloop::report {

using nlohmann::json;

namespace {

using detail::md_cell;

std::string code(const std::string& s) { return "`" + md_cell(s) + "`"; }

std::string num_or_dash(const std::optional<double>& v, const char* spec) {
    return v ? fmt::format(fmt::runtime(spec), *v) : std::string("–");
}

std::string bound_label(const profile::diagnosis& d) {
    using namespace profile;
    std::string s = to_string(d.kind);
    if (d.level) s += fmt::format(" ({})", d.level == memory_level::dram ? "DRAM" : "L1/L2");
    return s;
}

std::string evidence_value(const profile::evidence_item& e) {
    using profile::format_duration_ns;
    if (e.unit == "ns") return format_duration_ns(e.value);
    if (e.unit == "%") return fmt::format("{:.1f} %", e.value);
    if (e.unit == "% of stall cycles") return fmt::format("{:.0f} % of stall cycles", e.value);
    return e.unit.empty() ? fmt::format("{:.4g}", e.value) : fmt::format("{:.4g} {}", e.value, e.unit);
}

}  // namespace

std::string to_markdown(const profile::profile_summary& s) {
    using namespace profile;
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

json to_json(const eval::profile_step_result& r) {
    json entries = json::array();
    for (const auto& e : r.entries) {
        json j = {{"mode", e.capture.mode},
                  {"shape", e.capture.shape},
                  {"set", e.capture.set},
                  {"status", e.capture.status},
                  {"reason", e.capture.reason},
                  {"report", e.capture.report.filename().string()},
                  {"raw_csv", e.capture.raw_csv.filename().string()},
                  {"log", e.capture.log.filename().string()},
                  {"ncu_argv", e.capture.ncu_argv},
                  {"wall_s", e.capture.wall_s},
                  {"spec_bytes", e.spec_bytes ? json(*e.spec_bytes) : json()},
                  {"spec_flops", e.spec_flops ? json(*e.spec_flops) : json()},
                  {"measured_ns", e.measured_ns ? json(*e.measured_ns) : json()},
                  {"parse_error", e.parse_error.empty() ? json() : json(e.parse_error)},
                  {"summary", e.summary ? profile::to_json(*e.summary) : json()}};
        entries.push_back(std::move(j));
    }
    return {{"schema", "kloop.profile_step"},
            {"schema_version", 1},
            {"status", r.status},
            {"note", r.note},
            {"bound", r.bound.empty() ? json() : json(r.bound)},
            {"headline", r.headline},
            {"suspect", r.suspect},
            {"suspect_reasons", r.suspect_reasons},
            {"captures", entries}};
}

std::string to_markdown(const eval::profile_step_result& r) {
    std::string out = "# Profile summary\n\n";
    out += fmt::format("- Status: **{}** — {}\n", r.status, r.note.empty() ? "-" : r.note);
    if (r.suspect) {
        out += "- **SUSPECT** (cannot be promoted until re-checked):\n";
        for (const auto& s : r.suspect_reasons) out += "  - " + s + "\n";
    }
    out += "\n| mode | shape | set | status | note |\n|---|---|---|---|---|\n";
    for (const auto& e : r.entries)
        out += fmt::format("| {} | {} | {} | {} | {} |\n", e.capture.mode, e.capture.shape, e.capture.set,
                           e.capture.status,
                           !e.parse_error.empty() ? e.parse_error
                           : e.capture.ok()       ? e.capture.raw_csv.filename().string()
                                                  : e.capture.reason);
    for (const auto& e : r.entries) {
        if (!e.summary) continue;
        out += fmt::format("\n## {} {} — {} set\n\n", e.capture.mode, e.capture.shape, e.capture.set);
        out += to_markdown(*e.summary);
    }
    return out;
}

void write_profile_summary(const std::filesystem::path& out_dir, const eval::profile_step_result& r) {
    platform::write_file_atomic(out_dir / "profile_summary.json", to_json(r).dump(2) + "\n");
    platform::write_file_atomic(out_dir / "profile_summary.md", to_markdown(r));
}

}  // namespace kloop::report
