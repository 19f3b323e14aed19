// kloop loop: the workspace's HTML page (see report_page.hpp).
#include "loop/report_page.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_number.hpp"
#include "eval/calibration.hpp"
#include "loop/loop_session.hpp"
#include "loop/ranking.hpp"
#include "platform/file_io.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<double> opt_number(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return std::nullopt;
    return number_from_json(j.at(key));
}

// report/ab_json's statistics object (milliseconds) → a summary in seconds.
measure::sample_summary stats_from_ms(const json& j) {
    auto s_of = [&](const char* key) { return opt_number(j, key).value_or(0) / 1e3; };
    measure::sample_summary s;
    s.n = j.value("n", std::size_t{0});
    s.median = s_of("median_ms");
    s.mean = s_of("mean_ms");
    s.stdev = s_of("std_ms");
    s.min = s_of("min_ms");
    s.max = s_of("max_ms");
    s.p10 = s_of("p10_ms");
    s.p90 = s_of("p90_ms");
    s.q1 = s_of("q1_ms");
    s.q3 = s_of("q3_ms");
    s.iqr = s_of("iqr_ms");
    s.cv = opt_number(j, "cv").value_or(0);
    return s;
}

std::vector<double> seconds_of(const json& ms_array) {
    std::vector<double> out;
    if (!ms_array.is_array()) return out;
    for (const auto& x : ms_array)
        if (x.is_number()) out.push_back(x.get<double>() / 1e3);
    return out;
}

fs::path absolute_normal(const fs::path& p) { return fs::weakly_canonical(fs::absolute(p)); }

std::string relative_href(const fs::path& target, const fs::path& page_dir) {
    return absolute_normal(target).lexically_relative(absolute_normal(page_dir)).generic_string();
}

// Every regular file under `dir` (symbolic links are not followed), sorted, as links.
std::vector<report::html_link> folder_links(const fs::path& dir, const fs::path& page_dir) {
    std::vector<std::pair<std::string, fs::path>> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const auto st = it->symlink_status(ec);
        if (ec) break;
        if (fs::is_regular_file(st)) files.emplace_back(it->path().lexically_relative(dir).generic_string(), it->path());
    }
    std::sort(files.begin(), files.end());
    std::vector<report::html_link> out;
    for (const auto& [label, path] : files) out.push_back({label, relative_href(path, page_dir)});
    return out;
}

json read_json_or_null(const fs::path& file) {
    if (!fs::exists(file)) return nullptr;
    return json::parse(platform::read_file(file), nullptr, false);  // discarded → is_discarded()
}

// v0's raw samples from `kloop init` (iter_v0's evaluation), by mode/shape.
std::map<std::string, std::vector<double>> init_samples(const json& record) {
    std::map<std::string, std::vector<double>> out;
    if (!record.is_object() || !record.contains("evaluation") || !record.at("evaluation").is_object()) return out;
    const auto& bench = record.at("evaluation").value("bench", json::object());
    for (const auto& s : bench.value("shapes", json::array()))
        out[s.value("mode", "") + "/" + s.value("shape", "")] = seconds_of(s.value("samples_ms", json::array()));
    return out;
}

// A version's raw samples from its own iteration's A/B (the candidate side), by mode/shape.
std::map<std::string, std::vector<double>> iteration_samples(const json& record) {
    std::map<std::string, std::vector<double>> out;
    if (!record.is_object() || !record.contains("ab") || !record.at("ab").is_object()) return out;
    for (const auto& s : record.at("ab").value("shapes", json::array()))
        out[s.value("mode", "") + "/" + s.value("shape", "")] = seconds_of(s.value("candidate_samples_ms", json::array()));
    return out;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : sep) + x;
    return s;
}

}  // namespace

eval::ab_evaluation ab_from_json(const json& j) {
    eval::ab_evaluation ab;
    ab.op = j.value("op", "");
    ab.ok = j.value("ok", false);
    ab.reason = j.value("reason", "");
    ab.timed = j.value("timed", false);
    ab.command_line = j.value("command_line", std::vector<std::string>{});
    if (j.contains("base") && j.at("base").is_object()) ab.base_label = j.at("base").value("label", "");
    if (j.contains("candidate") && j.at("candidate").is_object()) ab.candidate_label = j.at("candidate").value("label", "");
    const auto config = j.value("config", json::object());
    ab.config.min_effect = opt_number(config, "min_effect").value_or(ab.config.min_effect);
    ab.config.resamples = config.value("resamples", ab.config.resamples);
    ab.config.confidence = opt_number(config, "confidence").value_or(ab.config.confidence);
    const auto env = j.value("env", json::object());
    ab.env.host_cpu = env.value("host_cpu", "");
    ab.env.logical_cpus = env.value("logical_cpus", 0u);
    ab.env.llc_bytes = env.value("llc_bytes", std::uint64_t{0});
    ab.env.compiler = env.value("compiler", "");
    ab.env.flags = env.value("flags", std::vector<std::string>{});
    for (const auto& s : j.value("shapes", json::array())) {
        eval::ab_shape_result r;
        r.mode = s.value("mode", "");
        r.shape = s.value("shape", "");
        r.ok = s.value("ok", false);
        r.error = s.value("error", "");
        if (s.contains("base") && s.at("base").is_object()) r.base_s = stats_from_ms(s.at("base"));
        if (s.contains("candidate") && s.at("candidate").is_object()) r.candidate_s = stats_from_ms(s.at("candidate"));
        if (s.contains("verdict") && s.at("verdict").is_string())
            r.verdict = measure::ab_result{opt_number(s, "speedup").value_or(0), opt_number(s, "ci_low").value_or(0),
                                           opt_number(s, "ci_high").value_or(0), measure::ab_verdict_from_string(s.at("verdict"))};
        r.base_samples_s = seconds_of(s.value("base_samples_ms", json::array()));
        r.candidate_samples_s = seconds_of(s.value("candidate_samples_ms", json::array()));
        ab.shapes.push_back(std::move(r));
    }
    if (j.contains("overall") && j.at("overall").is_object()) {
        const auto& o = j.at("overall");
        ab.overall = measure::ab_result{opt_number(o, "geomean_speedup").value_or(0), opt_number(o, "ci_low").value_or(0),
                                        opt_number(o, "ci_high").value_or(0), measure::ab_verdict_from_string(o.at("verdict"))};
    }
    return ab;
}

std::optional<report::html_final_claim> read_final_claim(const fs::path& final_result_file) {
    if (!fs::exists(final_result_file)) return std::nullopt;
    const json j = read_record(final_result_file, "kloop.final_result");
    try {
        report::html_final_claim f;
        f.written_at = j.value("written_at", "");
        f.command_line = j.value("command_line", std::vector<std::string>{});
        const auto& v = j.at("verdict");
        f.promote = v.at("promote");
        f.best = v.at("best");
        f.verdict = v.at("text");
        f.criteria = v.at("criteria").get<std::vector<std::string>>();
        if (j.contains("ab") && j.at("ab").is_object()) f.ab = ab_from_json(j.at("ab"));
        return f;
    } catch (const std::exception& e) {
        throw usage_error(fmt::format("final result '{}': {} (run `kloop report` again to rewrite it)", final_result_file.string(),
                                      e.what()));
    }
}

version_profile_data read_version_profile(const fs::path& profile_summary_json, int version) {
    version_profile_data out;
    const json j = read_json_or_null(profile_summary_json);
    if (!j.is_object()) return out;
    // Per mode/shape: the full capture's summary where there is one, else the first parsed one.
    std::map<std::string, const json*> chosen;  // into j, which outlives them
    std::vector<std::string> order;
    if (!j.contains("captures") || !j.at("captures").is_array()) return out;
    for (const auto& c : j.at("captures")) {
        if (!c.is_object() || !c.contains("summary") || !c.at("summary").is_object()) continue;
        const auto key = c.value("mode", "") + "/" + c.value("shape", "");
        if (!chosen.count(key)) {
            chosen[key] = &c;
            order.push_back(key);
        } else if (c.value("set", "") == "full" && chosen[key]->value("set", "") != "full") {
            chosen[key] = &c;
        }
    }
    for (const auto& key : order) {
        const json& c = *chosen[key];
        const json& s = c.at("summary");
        const std::string mode = c.value("mode", ""), shape = c.value("shape", ""), set = c.value("set", "");
        if (s.contains("roofline") && s.at("roofline").is_object()) {
            const auto& r = s.at("roofline");
            report::html_roofline_point p;
            p.version = version;
            p.mode = mode;
            p.shape = shape;
            p.set = set;
            p.device = s.value("device", "");
            p.flops = opt_number(r, "flops").value_or(0);
            p.bytes = opt_number(r, "bytes").value_or(0);
            p.uses_tensor_cores = r.value("uses_tensor_cores", false);
            p.measured_ns = opt_number(r, "measured_ns");
            p.profiled_ns = opt_number(r, "profiled_ns");
            p.dram_bytes = opt_number(r, "dram_bytes");
            out.points.push_back(p);
            if (r.contains("peaks") && r.at("peaks").is_object() && !out.peaks_used) {
                try {
                    auto peaks = profile::device_peaks_from_json(r.at("peaks"));
                    if (r.at("peaks").contains("source"))
                        peaks.source = profile::peak_source_from_string(r.at("peaks").at("source").get<std::string>());
                    out.peaks_used = peaks;
                } catch (const std::exception&) {
                    // peaks the page cannot read: the ceilings come from the tables instead
                }
            }
        }
        const auto& dom = s.value("dominant_kernel", json(nullptr));
        if (!dom.is_object()) continue;
        const auto index = dom.value("index", std::size_t{0});
        const auto kernels = s.value("kernels", json::array());
        if (index >= kernels.size()) continue;
        const auto& d = kernels.at(index).value("diagnosis", json::object());
        report::html_diagnosis dg;
        dg.version = version;
        dg.mode = mode;
        dg.shape = shape;
        dg.set = set;
        dg.kernel = dom.value("short_name", dom.value("name", ""));
        dg.bound = d.value("bound", dom.value("bound", ""));
        if (d.contains("memory_level") && d.at("memory_level").is_string())
            dg.bound += " (" + d.at("memory_level").get<std::string>() + ")";
        dg.headline = d.value("headline", "");
        for (const auto& x : d.value("directions", json::array()))
            dg.directions.push_back(fmt::format("{} — {} ({})", x.value("technique", ""), x.value("signal", ""), x.value("kb", "")));
        out.diagnoses.push_back(std::move(dg));
    }
    return out;
}

report::html_report_input gather_report_page(const loop_session& s, const fs::path& page_file,
                                             std::optional<report::html_final_claim> final_claim,
                                             const std::vector<std::string>& command_line) {
    const auto& c = s.c;
    const fs::path page_dir = page_file.parent_path().empty() ? fs::path(".") : page_file.parent_path();
    report::html_report_input in;
    in.op = c.op;
    in.backend = c.backend;
    in.device = c.device;
    in.workspace = s.ws.root().string();
    in.generated_at = platform::utc_now_iso8601();
    in.command_line = command_line;
    in.max_iterations = c.max_iterations;
    in.target_speedup = c.target_speedup;
    const auto target_policy = ab_target_policy();
    in.best = best_version(s.records, target_policy).value_or(0);
    in.best_rule = "the version `kloop iterate` compares against: " + eligibility_rule_text(target_policy);

    for (const auto& r : s.records) in.versions.push_back({r, folder_links(s.ws.iteration_dir(r.number), page_dir)});
    for (const auto& f : {s.ws.final_summary_file(), s.ws.final_result_file(), s.ws.opt_log_file(), s.ws.contract_file(),
                          s.ws.draft_file(), s.ws.traps_file(), s.ws.dispatch_file(), s.ws.manifest_file(), s.ws.nogo_file()})
        if (fs::is_regular_file(f))
            in.workspace_files.push_back({f.lexically_relative(s.ws.root()).generic_string(), relative_href(f, page_dir)});

    // The final claim, and whether the loop went on after it.
    in.final_claim = final_claim ? std::move(final_claim) : read_final_claim(s.ws.final_result_file());
    if (in.final_claim) {
        const auto& last = s.records.back();
        if (!last.recorded_at.empty() && last.recorded_at > in.final_claim->written_at)
            in.final_claim->stale = fmt::format("This claim was measured at {}, before {} was recorded at {}: it does not cover the "
                                                "later iterations. Run `kloop report` again.",
                                                in.final_claim->written_at, version_label(last.number), last.recorded_at);
        else if (static_cast<std::size_t>(in.final_claim->best) >= s.records.size())
            in.final_claim->stale =
                fmt::format("This claim names {}, which the workspace does not hold.", version_label(in.final_claim->best));
    }

    // The distributions: the report's side-by-side samples, else separate runs.
    if (in.final_claim && in.final_claim->ab) {
        const auto& ab = *in.final_claim->ab;
        in.best_label = version_label(in.final_claim->best);
        in.distribution_source = fmt::format(
            "From the side-by-side re-measurement of `kloop report` at {}: v0 and {} timed interleaved in one runner, so the two "
            "boxes of a shape saw the same inputs, cache flush and machine state.{}",
            in.final_claim->written_at, in.best_label, in.final_claim->stale.empty() ? "" : " (It predates later iterations.)");
        for (const auto& sh : ab.shapes) {
            report::html_distribution d{sh.mode, sh.shape, sh.base_samples_s, sh.candidate_samples_s, {}};
            if (d.base_s.empty() || d.best_s.empty())
                d.note = "not timed on both sides" + (sh.error.empty() ? std::string() : ": " + sh.error);
            in.distributions.push_back(std::move(d));
        }
    } else {
        const int best = in.final_claim ? 0 : in.best;
        in.best_label = version_label(best);
        const auto base = init_samples(read_json_or_null(s.ws.iteration_dir(0) / "benchmark_result.json"));
        std::map<std::string, std::vector<double>> top;
        if (best != 0) top = iteration_samples(read_json_or_null(s.ws.iteration_dir(best) / "benchmark_result.json"));
        if (in.final_claim)
            in.distribution_source = "The final report found no version better than v0, so it timed nothing side by side: v0's "
                                     "samples from `kloop init`.";
        else if (best == 0)
            in.distribution_source = "No version has beaten v0 yet: v0's samples from `kloop init`.";
        else
            in.distribution_source = fmt::format(
                "No `kloop report` yet, so no side-by-side re-measurement: v0's samples are from `kloop init`, {}'s from its own "
                "iteration's A/B against {}. These are separate runs: a shift between the two boxes may be the machine's as much "
                "as the kernel's. `kloop report` times both in one runner.",
                in.best_label, version_label(s.records[static_cast<std::size_t>(best)].vs_best));
        for (const auto& b : s.records.front().bench) {
            const auto key = b.mode + "/" + b.shape;
            report::html_distribution d{b.mode, b.shape, {}, {}, {}};
            if (auto it = base.find(key); it != base.end()) d.base_s = it->second;
            if (best != 0)
                if (auto it = top.find(key); it != top.end()) d.best_s = it->second;
            if (d.base_s.empty()) d.note = "v0's record holds no samples for this shape";
            else if (best != 0 && d.best_s.empty()) d.note = in.best_label + "'s record holds no samples for this shape";
            in.distributions.push_back(std::move(d));
        }
    }

    // The roofline and the diagnoses, from each version's profile summary.
    std::optional<profile::device_peaks> calibrated_used;
    for (const auto& r : s.records) {
        auto p = read_version_profile(s.ws.iteration_dir(r.number) / "profile_summary.json", r.number);
        in.roofline.insert(in.roofline.end(), p.points.begin(), p.points.end());
        in.diagnoses.insert(in.diagnoses.end(), p.diagnoses.begin(), p.diagnoses.end());
        if (p.peaks_used && p.peaks_used->source == profile::peak_source::calibrated && !calibrated_used) calibrated_used = p.peaks_used;
    }
    std::string device;
    for (const auto& p : in.roofline)
        if (!p.device.empty()) {
            device = p.device;
            break;
        }
    if (!device.empty()) {
        in.datasheet = profile::datasheet_peaks(device);
        in.calibrated = calibrated_used;
        if (!in.calibrated) {
            try {
                in.calibrated = eval::load_calibration(device);
            } catch (const std::exception& e) {
                in.roofline_notes.push_back(std::string("The calibration cache could not be read: ") + e.what());
            }
        }
    }
    if (in.roofline.empty()) {
        bool all_na = true;
        std::vector<std::string> statuses;
        for (const auto& r : s.records) {
            all_na = all_na && r.profile_status == "n/a";
            statuses.push_back(fmt::format("{} {} ({})", version_label(r.number), r.profile_status, r.profile_note));
        }
        in.roofline_notes.push_back(
            all_na ? fmt::format("No roofline: {} is not a CUDA op (backend {}), and Nsight Compute profiles CUDA kernels only, so "
                                 "no version has a profile to place.",
                                 c.op, c.backend)
                   : "No roofline: no version's folder holds a profile summary with a roofline. Profile status per version: " +
                         join(statuses, "; ") + ".");
    }
    return in;
}

fs::path write_report_page(const show_request& req) {
    auto session = open_session(req.workspace, access::read, record_origin{req.command_line, {}});
    const fs::path page = req.out ? fs::absolute(*req.out) : session.ws.report_page_file();
    const auto in = gather_report_page(session, page, std::nullopt, req.command_line);
    platform::write_file_atomic(page, report::html_report(in));
    return page;
}

}  // namespace kloop::loop
