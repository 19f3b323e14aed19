// kloop report: report.html (see html_report.hpp).
#include "report/html_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/svg_chart.hpp"

namespace kloop::report {

using namespace kloop::loop;
using svg::escape_xml;

namespace {

std::string h(const std::string& s) { return escape_xml(s); }

// Escaped text whose `quoted` spans become <code>: the page's sentences name commands that way.
std::string prose(const std::string& s) {
    std::string out = escape_xml(s), result;
    bool open = false;
    for (char c : out) {
        if (c == '`') {
            result += open ? "</code>" : "<code>";
            open = !open;
        } else {
            result += c;
        }
    }
    if (open) result += "</code>";
    return result;
}

// Seconds as milliseconds with 4 significant digits.
std::string ms(double seconds) { return fmt::format("{:.4g}", seconds * 1e3); }

std::string interval_text(const measure::ab_result& r) {
    return fmt::format("x{:.3f} [{:.3f}, {:.3f}] {}", r.speedup, r.ci_low, r.ci_high, measure::to_string(r.verdict));
}

std::string verdict_class(measure::ab_verdict v) {
    switch (v) {
    case measure::ab_verdict::faster: return "faster";
    case measure::ab_verdict::slower: return "slower";
    case measure::ab_verdict::same: return "same";
    default: return "ambiguous";
    }
}

// One colour per classification, the same in the charts and their legends.
std::string status_colour(iteration_status s) {
    switch (s) {
    case iteration_status::baseline: return "#4c72b0";
    case iteration_status::positive: return "#2e8b3d";
    case iteration_status::negative: return "#e08a1e";
    default: return "#c8302c";
    }
}

// The bars of a per-shape verdict: FASTER green, SAME steel blue, AMBIGUOUS amber, SLOWER red.
std::string verdict_colour(measure::ab_verdict v) {
    switch (v) {
    case measure::ab_verdict::faster: return "#2e8b3d";
    case measure::ab_verdict::slower: return "#c8302c";
    case measure::ab_verdict::same: return "#6b8fb8";
    default: return "#d9a030";
    }
}

constexpr const char* base_colour = "#4c72b0";
constexpr const char* best_colour = "#2e8b3d";
const std::vector<std::string> version_palette = {"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
                                                  "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"};

svg::style colour(const std::string& c) {
    svg::style s;
    s.colour = c;
    return s;
}

std::string missing(const std::string& words) { return "<p class=\"missing\">" + prose(words) + "</p>\n"; }

std::string shape_key(const std::string& mode, const std::string& shape) { return mode + "/" + shape; }

const char* page_style = R"(body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4;padding:0 12px}
h1{font-size:1.5em;margin-bottom:4px}h2{border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:8px 0;font-size:0.88em}td,th{border:1px solid #d0d0d0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}code{background:#f4f4f4;padding:0 3px}
.missing{color:#6a5a00;background:#fff8d8;border-left:4px solid #e8c800;padding:6px 10px}
.stale{color:#7a2a00;background:#ffece0;border-left:4px solid #e07000;padding:6px 10px}
.verdict{font-size:1.15em;font-weight:bold;padding:8px 12px}.verdict.promote{background:#e3f4e3;border-left:5px solid #2e8b3d}
.verdict.nopromote{background:#f7e6e6;border-left:5px solid #c8302c}
.faster{background:#e3f4e3}.slower{background:#f7e1e1}.same{background:#f0f0f0}.ambiguous{background:#fff4d6}
.st-baseline{color:#4c72b0;font-weight:bold}.st-positive{color:#2e8b3d;font-weight:bold}.st-negative{color:#b86a00;font-weight:bold}
.st-rejected{color:#c8302c;font-weight:bold}.charts{display:flex;flex-wrap:wrap;gap:12px}.howto{color:#555;font-size:0.92em}
nav a{margin-right:12px}ul.files{columns:2;font-size:0.9em}svg.plot{background:#fff;border:1px solid #e0e0e0;margin:4px 0}
)";

// ---------------------------------------------------------------- sections

std::string header_section(const html_report_input& in) {
    std::string out = fmt::format("<h1>kloop — {}</h1>\n", h(in.op));
    const int iterations = in.versions.empty() ? 0 : static_cast<int>(in.versions.size()) - 1;
    out += "<table class=\"meta\">\n";
    out += fmt::format("<tr><th>workspace</th><td><code>{}</code></td></tr>\n", h(in.workspace));
    out += fmt::format("<tr><th>backend / device</th><td>{} / {}</td></tr>\n", h(in.backend), h(in.device));
    out += fmt::format("<tr><th>iterations</th><td>{} of {}</td></tr>\n", iterations, in.max_iterations);
    out += fmt::format("<tr><th>target</th><td>{}</td></tr>\n",
                       in.target_speedup ? fmt::format("x{:.2f} over v0 (informative)", *in.target_speedup) : std::string("none stated"));
    out += fmt::format("<tr><th>current best</th><td>{} ({})</td></tr>\n", version_label(in.best), prose(in.best_rule));
    std::string cmd;
    for (const auto& a : in.command_line) cmd += (cmd.empty() ? "" : " ") + a;
    out += fmt::format("<tr><th>page written</th><td>{} by <code>{}</code>, from the workspace's records (nothing re-measured for "
                       "it)</td></tr>\n",
                       h(in.generated_at), h(cmd));
    out += "</table>\n";
    out += "<nav><a href=\"#final-claim\">final claim</a><a href=\"#history\">history</a><a href=\"#shapes\">per-shape "
           "speedups</a><a href=\"#distributions\">distributions</a><a href=\"#roofline\">roofline</a><a "
           "href=\"#profile\">profile diagnosis</a><a href=\"#files\">files</a></nav>\n";
    return out;
}

std::string stats_cells(const measure::sample_summary& s) {
    return fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
                       "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                       s.n, ms(s.median), ms(s.mean), ms(s.stdev), ms(s.min), ms(s.p10), ms(s.p90));
}

const html_version* version_of(const html_report_input& in, int n) {
    for (const auto& v : in.versions)
        if (v.record.number == n) return &v;
    return nullptr;
}

std::string final_claim_section(const html_report_input& in) {
    std::string out = "<section id=\"final-claim\">\n<h2>Final claim</h2>\n";
    out += "<p class=\"howto\">What <code>kloop report</code> measured: the best version against the baseline v0, both gated "
           "again, then timed interleaved in one runner process (same inputs, same cache flush). A speedup is median(v0) / "
           "median(best): above 1 the best is faster; its 95% interval comes from the bootstrap, and the verdict is FASTER only "
           "when the whole interval clears the noise margin.</p>\n";
    if (!in.final_claim) {
        out += missing("No final report yet: `kloop report` has not been run on this workspace. Run `kloop report` (or `kloop "
                       "report --html`) to re-measure the best against v0 side by side; the verdict, the final-claim block and the "
                       "side-by-side distributions appear here then.");
        return out + "</section>\n";
    }
    const auto& f = *in.final_claim;
    if (!f.stale.empty()) out += "<p class=\"stale\">" + prose(f.stale) + "</p>\n";
    out += fmt::format("<p class=\"verdict {}\">Promotion verdict: {}</p>\n", f.promote ? "promote" : "nopromote", h(f.verdict));
    out += "<ul>\n";
    for (const auto& c : f.criteria) out += "<li>" + prose(c) + "</li>\n";
    out += "</ul>\n";
    if (f.ab) {
        const auto& ab = *f.ab;
        out += fmt::format("<p>Measured at {} by <code>{}</code>. Times in ms.</p>\n", h(f.written_at), h([&] {
                               std::string s;
                               for (const auto& a : f.command_line) s += (s.empty() ? "" : " ") + a;
                               return s;
                           }()));
        out += "<table><tr><th>mode/shape</th><th>version</th><th>n</th><th>median</th><th>mean</th><th>std</th><th>min</th><th>"
               "p10</th><th>p90</th><th>speedup [95% CI] verdict</th></tr>\n";
        for (const auto& s : ab.shapes) {
            if (!s.ok || !s.base_s || !s.candidate_s || !s.verdict) {
                out += fmt::format("<tr><td>{}</td><td colspan=\"9\">not timed: {}</td></tr>\n", h(shape_key(s.mode, s.shape)),
                                   h(s.error));
                continue;
            }
            out += fmt::format("<tr><td rowspan=\"2\">{}</td><td>v0</td>{}<td rowspan=\"2\" class=\"{}\">{}</td></tr>\n",
                               h(shape_key(s.mode, s.shape)), stats_cells(*s.base_s), verdict_class(s.verdict->verdict),
                               interval_text(*s.verdict));
            out += fmt::format("<tr><td>{}</td>{}</tr>\n", version_label(f.best), stats_cells(*s.candidate_s));
        }
        out += "</table>\n";
        if (ab.overall)
            out += fmt::format("<p class=\"{}\"><b>Equal-weight geomean speedup over {} shapes: {}</b> (noise margin {:.0f}%, {} "
                               "bootstrap resamples)</p>\n",
                               verdict_class(ab.overall->verdict), ab.shapes.size(), interval_text(*ab.overall),
                               ab.config.min_effect * 100, ab.config.resamples);
        if (!ab.ok && !ab.reason.empty()) out += missing("The side-by-side A/B is incomplete: " + ab.reason);
        if (!ab.env.host_cpu.empty())
            out += fmt::format("<p>Machine: {} ({} logical CPUs){}</p>\n", h(ab.env.host_cpu), ab.env.logical_cpus,
                               ab.env.compiler.empty() ? std::string() : "; compiler " + h(ab.env.compiler));
    } else {
        out += "<p>No version beat v0 in the loop, so nothing was re-measured; the baseline's own numbers (from <code>kloop "
               "init</code>, ms):</p>\n";
        if (const auto* v0 = version_of(in, 0); v0 && !v0->record.bench.empty()) {
            out += "<table><tr><th>mode/shape</th><th>n</th><th>median</th><th>mean</th><th>std</th><th>min</th><th>p10</th><th>p90</th></tr>\n";
            for (const auto& b : v0->record.bench)
                out += fmt::format("<tr><td>{}</td>{}</tr>\n", h(shape_key(b.mode, b.shape)), stats_cells(b.s));
            out += "</table>\n";
        }
    }
    const auto* base = version_of(in, 0);
    const auto* best = version_of(in, f.best);
    if (base)
        out += fmt::format("<p>Baseline v0: <code>{}</code> sha256 <code>{}</code>.", h(base->record.candidate_source),
                           h(base->record.candidate_sha256));
    if (best && f.best != 0)
        out += fmt::format(" Candidate {}: <code>iter_{}/{}</code> sha256 <code>{}</code>{}.", version_label(f.best),
                           version_label(f.best), h(best->record.candidate_file), h(best->record.candidate_sha256),
                           best->record.git.committed ? ", commit <code>" + h(best->record.git.commit) + "</code>" : std::string());
    if (base) out += "</p>\n";
    for (const auto& l : in.workspace_files)
        if (l.label == "final_summary.md")
            out += "<p>The full block, with every command of the loop: <a href=\"" + href_of(l.href) + "\">final_summary.md</a>.</p>\n";
    return out + "</section>\n";
}

std::string history_section(const html_report_input& in) {
    std::string out = "<section id=\"history\">\n<h2>Loop history</h2>\n";
    out += "<p class=\"howto\">Each iteration was timed against the best version of its time (not against v0), interleaved in "
           "one runner. A point is its equal-weight geomean speedup over the bench shapes, the whisker its 95% bootstrap "
           "interval. Green: positive (the interval clears the noise margin: it became the best); orange: negative (slower, "
           "the same, or ambiguous); red crosses at the bottom: rejected before or while timing (build, gate, crash, timeout, "
           "integrity) — no speedup exists for them.</p>\n";
    std::vector<std::string> cats;
    std::vector<double> values = {1.0};
    double min_effect = 0;
    for (const auto& v : in.versions) {
        const auto& r = v.record;
        if (r.number == 0) continue;
        cats.push_back(version_label(r.number));
        if (r.overall) {
            for (double x : {r.overall->speedup, r.overall->ci_low, r.overall->ci_high}) values.push_back(x);
            min_effect = std::max(min_effect, r.min_effect);
        }
    }
    if (cats.empty()) {
        out += missing("No iteration yet: only the baseline v0 is recorded. `kloop iterate` adds one.");
    } else {
        values.push_back(1 + min_effect);
        auto y = svg::fit_log("speedup vs the best of its time (log)", values);
        y->min /= 1.08;  // room for the rejected marks under every interval
        svg::axis x;
        x.kind = svg::scale_kind::category;
        x.label = "iteration";
        x.categories = cats;
        svg::chart c("Speedup of each iteration against the best of its time", x, *y, 760, 320);
        svg::style ref = colour("#777777");
        ref.stroke_width = 1;
        c.add_hline(1.0, ref);
        if (min_effect > 0) {
            ref.dashed = true;
            c.add_hline(1 + min_effect, ref, fmt::format("noise margin +{:.0f}%", min_effect * 100));
        }
        double i = 0;
        for (const auto& v : in.versions) {
            const auto& r = v.record;
            if (r.number == 0) continue;
            const auto st = colour(status_colour(r.status));
            if (r.overall) {
                const auto tip = fmt::format("{} {} vs {}: {} — {}", version_label(r.number), to_string(r.status),
                                             version_label(r.vs_best), interval_text(*r.overall), r.direction);
                c.add_interval(i, r.overall->ci_low, r.overall->ci_high, st, tip);
                c.add_point(i, r.overall->speedup, st, tip);
            } else {
                c.add_point(i, y->min, st,
                            fmt::format("{} {}{}: {}", version_label(r.number), to_string(r.status),
                                        r.status == iteration_status::rejected ? " (" + to_string(r.rejection) + ")" : std::string(),
                                        r.reason.empty() ? std::string("not timed") : r.reason),
                            svg::marker::cross);
            }
            i += 1;
        }
        c.add_legend("positive", colour(status_colour(iteration_status::positive)));
        c.add_legend("negative", colour(status_colour(iteration_status::negative)));
        c.add_legend("rejected (not timed)", colour(status_colour(iteration_status::rejected)), svg::marker::cross);
        out += "<div class=\"charts\">" + c.render() + "</div>\n";
    }
    out += "<table><tr><th>iter</th><th>status</th><th>vs best of its time</th><th>direction</th><th>predicted</th><th>gate</th><th>"
           "profile</th><th>notes</th></tr>\n";
    for (const auto& v : in.versions) {
        const auto& r = v.record;
        std::string vs = r.number == 0 ? "baseline" : r.overall ? interval_text(*r.overall) + " vs " + version_label(r.vs_best) : "not timed";
        std::string notes;
        if (r.status == iteration_status::rejected) notes += "rejected (" + to_string(r.rejection) + "): " + r.reason;
        for (const auto& w : r.warnings) notes += (notes.empty() ? "" : "; ") + std::string("warning: ") + w;
        out += fmt::format("<tr><td>{}</td><td class=\"st-{}\">{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}"
                           "</td><td>{}</td></tr>\n",
                           version_label(r.number), to_string(r.status), to_string(r.status),
                           r.overall ? verdict_class(r.overall->verdict) : "", h(vs),
                           h(r.number == 0 ? "the kernel as found" : r.direction), h(r.number == 0 ? "—" : r.expected),
                           r.gate_pass ? (r.gate_partial ? "green (partial)" : "green") : "red", h(r.profile_status), h(notes));
    }
    out += "</table>\n";
    return out + "</section>\n";
}

std::string shapes_section(const html_report_input& in) {
    std::string out = "<section id=\"shapes\">\n<h2>Per-shape speedups</h2>\n";
    out += "<p class=\"howto\">Each iteration's speedup per bench shape against the best of its time (median(best) / "
           "median(candidate), 95% bootstrap interval, verdict). The overall verdict of an iteration is the geomean's; a shape "
           "may be FASTER while another is SLOWER.</p>\n";
    std::vector<std::string> keys;
    std::set<std::string> seen;
    auto note_key = [&](const std::string& k) {
        if (seen.insert(k).second) keys.push_back(k);
    };
    for (const auto& v : in.versions) {
        for (const auto& b : v.record.bench) note_key(shape_key(b.mode, b.shape));
        for (const auto& c : v.record.ab) note_key(shape_key(c.mode, c.shape));
    }
    bool any = false;
    for (const auto& v : in.versions) any = any || !v.record.ab.empty();
    if (!any) {
        out += missing("No iteration was timed against a best yet: there are no per-shape speedups to show.");
    } else {
        out += "<table><tr><th>iter</th><th>vs</th>";
        for (const auto& k : keys) out += "<th>" + h(k) + "</th>";
        out += "</tr>\n";
        for (const auto& v : in.versions) {
            const auto& r = v.record;
            if (r.number == 0) continue;
            out += fmt::format("<tr><td class=\"st-{}\">{}</td><td>{}</td>", to_string(r.status), version_label(r.number),
                               r.ab.empty() ? "—" : version_label(r.vs_best));
            if (r.ab.empty()) {
                out += fmt::format("<td colspan=\"{}\">{}</td></tr>\n", keys.size(),
                                   r.status == iteration_status::rejected ? "rejected (" + to_string(r.rejection) + "): not timed"
                                                                          : std::string("not timed"));
                continue;
            }
            for (const auto& k : keys) {
                const shape_comparison* c = nullptr;
                for (const auto& x : r.ab)
                    if (shape_key(x.mode, x.shape) == k) c = &x;
                if (c == nullptr) out += "<td>—</td>";
                else if (!c->ok || !c->verdict) out += "<td class=\"slower\">not timed: " + h(c->error) + "</td>";
                else out += fmt::format("<td class=\"{}\">{}</td>", verdict_class(c->verdict->verdict), interval_text(*c->verdict));
            }
            out += "</tr>\n";
        }
        out += "</table>\n";
    }
    out += "<h3>Final claim per shape (best against v0, side by side)</h3>\n";
    const eval::ab_evaluation* ab = in.final_claim && in.final_claim->ab ? &*in.final_claim->ab : nullptr;
    std::vector<const eval::ab_shape_result*> timed;
    if (ab)
        for (const auto& s : ab->shapes)
            if (s.ok && s.verdict) timed.push_back(&s);
    if (!in.final_claim) {
        out += missing("No final report yet: the per-shape speedups of the best against v0 appear after `kloop report`.");
    } else if (!ab) {
        out += missing("The final report found no version better than v0, so it measured no speedup.");
    } else if (timed.empty()) {
        out += missing("The final report's A/B timed no shape: " + ab->reason);
    } else {
        svg::axis x;
        x.kind = svg::scale_kind::category;
        x.label = "mode/shape";
        std::vector<double> values = {1.0};
        for (const auto* s : timed) {
            x.categories.push_back(shape_key(s->mode, s->shape));
            for (double v : {s->verdict->speedup, s->verdict->ci_low, s->verdict->ci_high}) values.push_back(v);
        }
        auto y = svg::fit_linear(fmt::format("speedup of {} over v0", version_label(in.final_claim->best)), values, 0.0);
        y.min = 0;
        svg::chart c(fmt::format("Per-shape speedup of {} over v0 (final report)", version_label(in.final_claim->best)), x, y, 760, 320);
        double i = 0;
        for (const auto* s : timed) {
            const auto tip = fmt::format("{}: {}", shape_key(s->mode, s->shape), interval_text(*s->verdict));
            svg::style bar = colour(verdict_colour(s->verdict->verdict));
            bar.opacity = 0.75;
            c.add_bar(i, 0.55, 0, s->verdict->speedup, bar, tip);
            c.add_interval(i, s->verdict->ci_low, s->verdict->ci_high, colour("#222222"), tip);
            i += 1;
        }
        svg::style ref = colour("#555555");
        ref.dashed = true;
        ref.stroke_width = 1;
        c.add_hline(1.0, ref, "x1");
        for (const auto v : {measure::ab_verdict::faster, measure::ab_verdict::same, measure::ab_verdict::ambiguous,
                             measure::ab_verdict::slower})
            c.add_legend(measure::to_string(v), colour(verdict_colour(v)), svg::marker::square);
        out += "<div class=\"charts\">" + c.render() + "</div>\n";
    }
    return out + "</section>\n";
}

std::string distributions_section(const html_report_input& in) {
    std::string out = "<section id=\"distributions\">\n<h2>Sample distributions</h2>\n";
    out += "<p class=\"howto\">Every timed sample of one call, per shape, for the baseline and the best. The box spans the "
           "quartiles (IQR) with the median as a thick line; the whiskers reach the most extreme samples within 1.5 IQR of the "
           "box; circles beyond them are outliers. Overlapping boxes mean the difference is small against the noise; the "
           "verdict itself comes from the bootstrap of the medians.</p>\n";
    out += "<p>" + prose(in.distribution_source) + "</p>\n";
    if (in.distributions.empty()) {
        out += missing("No raw samples were found for the baseline or the best.");
        return out + "</section>\n";
    }
    std::string charts, table;
    table = "<table><tr><th>mode/shape</th><th>version</th><th>n</th><th>median ms</th><th>q1 ms</th><th>q3 ms</th><th>IQR ms</th>"
            "<th>whiskers ms</th><th>outliers</th></tr>\n";
    std::string notes;
    for (const auto& d : in.distributions) {
        const bool same = in.best_label == in.base_label;
        std::vector<std::pair<std::string, const std::vector<double>*>> sides;
        if (!d.base_s.empty()) sides.emplace_back(in.base_label, &d.base_s);
        if (!same && !d.best_s.empty()) sides.emplace_back(in.best_label, &d.best_s);
        if (!d.note.empty()) notes += "<li>" + h(shape_key(d.mode, d.shape)) + ": " + h(d.note) + "</li>\n";
        if (sides.empty()) continue;
        svg::axis x;
        x.kind = svg::scale_kind::category;
        x.label = "version";
        std::vector<double> all;
        for (const auto& [label, xs] : sides) {
            x.categories.push_back(label);
            for (double v : *xs) all.push_back(v * 1e3);
        }
        const auto y = svg::fit_linear("ms per call", all);
        svg::chart c(shape_key(d.mode, d.shape), x, y, 330, 260);
        double i = 0;
        for (const auto& [label, xs] : sides) {
            std::vector<double> msv;
            for (double v : *xs) msv.push_back(v * 1e3);
            const auto b = svg::box_stats_of(msv);
            c.add_box(i, 0.5, b, colour(label == in.base_label ? base_colour : best_colour),
                      fmt::format("{} {}: median {:.4g} ms, IQR [{:.4g}, {:.4g}] ms, {} samples, {} outliers", label,
                                  shape_key(d.mode, d.shape), b.median, b.q1, b.q3, msv.size(), b.outliers.size()));
            table += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.4g}</td><td "
                                 "class=\"num\">{:.4g}</td><td class=\"num\">{:.4g}</td><td class=\"num\">{:.4g}</td><td "
                                 "class=\"num\">{:.4g} – {:.4g}</td><td class=\"num\">{}</td></tr>\n",
                                 h(shape_key(d.mode, d.shape)), h(label), msv.size(), b.median, b.q1, b.q3, b.q3 - b.q1,
                                 b.whisker_low, b.whisker_high, b.outliers.size());
            i += 1;
        }
        charts += c.render();
    }
    out += "<div class=\"charts\">\n" + charts + "</div>\n";
    if (!notes.empty()) out += "<ul>\n" + notes + "</ul>\n";
    out += table + "</table>\n";
    return out + "</section>\n";
}

std::string roofline_section(const html_report_input& in) {
    std::string out = "<section id=\"roofline\">\n<h2>Roofline</h2>\n";
    out += "<p class=\"howto\">Each point is one profiled shape of one version: its arithmetic intensity (the spec's FLOP per "
           "byte of one call) against the FLOP/s it attained (spec FLOP / kloop's bench median, or ncu's time of the call when "
           "the bench did not time that shape). The ceilings are min(bandwidth × intensity, compute rate): dashed from the "
           "datasheet, solid from this machine's calibration (<code>kloop preflight --calibrate</code>). A point near its "
           "ceiling is at the hardware's limit for that intensity; one above the datasheet ceiling did less work than the spec "
           "says.</p>\n";
    for (const auto& n : in.roofline_notes) out += missing(n);
    struct placed {
        const html_roofline_point* p;
        double intensity, rate, time_ns;
        bool from_bench;
    };
    std::vector<placed> pts;
    std::vector<std::string> unplaced;
    for (const auto& p : in.roofline) {
        const auto t = p.measured_ns ? p.measured_ns : p.profiled_ns;
        const std::string who = fmt::format("{} {}", version_label(p.version), shape_key(p.mode, p.shape));
        if (!(p.flops > 0) || !(p.bytes > 0)) {
            unplaced.push_back(who + ": the spec gives " + (p.flops > 0 ? "no bytes" : "no flops") +
                               " for this shape, so its intensity cannot be placed on a log axis");
            continue;
        }
        if (!t || !(*t > 0)) {
            unplaced.push_back(who + ": neither a bench median nor an ncu time");
            continue;
        }
        pts.push_back({&p, p.flops / p.bytes, p.flops / (*t * 1e-9), *t, p.measured_ns.has_value()});
    }
    if (in.roofline.empty()) {
        if (in.roofline_notes.empty()) out += missing("No version has a parsed profile with a roofline: nothing to plot.");
        return out + "</section>\n";
    }
    for (const auto& u : unplaced) out += missing(u);
    const bool tensor = std::any_of(in.roofline.begin(), in.roofline.end(), [](const auto& p) { return p.uses_tensor_cores; });
    auto rate_of = [&](const profile::device_peaks& pk) { return tensor ? pk.tensor_flops_per_s : pk.fp32_flops_per_s; };
    if (!pts.empty()) {
        std::vector<double> xs, ys;
        for (const auto& p : pts) {
            xs.push_back(p.intensity);
            ys.push_back(p.rate);
        }
        for (const auto* pk : {in.datasheet ? &*in.datasheet : nullptr, in.calibrated ? &*in.calibrated : nullptr})
            if (pk && pk->dram_bytes_per_s > 0 && rate_of(*pk) > 0) {
                xs.push_back(rate_of(*pk) / pk->dram_bytes_per_s);  // the ridge
                ys.push_back(rate_of(*pk));
            }
        auto x = svg::fit_log("arithmetic intensity (FLOP/B)", xs);
        auto y = svg::fit_log("attained FLOP/s", ys);
        x->min /= 4, x->max *= 4, y->min /= 4;
        y->si = true;  // FLOP/s in k, M, G, T; the intensity stays plain (0.1, 1, 10 FLOP/B)
        svg::chart c("Roofline: every profiled version", *x, *y, 760, 380);
        auto ceiling = [&](const profile::device_peaks& pk, bool dashed, const std::string& what) {
            const double bw = pk.dram_bytes_per_s, rate = rate_of(pk);
            if (!(bw > 0) || !(rate > 0)) return;
            svg::style s = colour(dashed ? "#888888" : "#333333");
            s.dashed = dashed;
            s.stroke_width = dashed ? 1.5 : 2;
            const double ridge = rate / bw;
            const auto tip = fmt::format("{} ({}): DRAM {}B/s, {} {}FLOP/s, ridge {:.3g} FLOP/B", what, pk.device_name,
                                         svg::format_number(bw, true), tensor ? "tensor" : "FP32", svg::format_number(rate, true), ridge);
            c.add_line({{x->min, bw * x->min}, {ridge, rate}, {x->max, rate}}, s, tip);
            c.add_legend(tip.substr(0, tip.find(':')), s, svg::marker::square);
        };
        if (in.datasheet) ceiling(*in.datasheet, true, "datasheet");
        if (in.calibrated) ceiling(*in.calibrated, false, "calibrated");
        std::map<int, std::string> colours;
        for (const auto& p : pts) {
            if (!colours.count(p.p->version)) {
                colours[p.p->version] = version_palette[colours.size() % version_palette.size()];
                c.add_legend(version_label(p.p->version), colour(colours[p.p->version]));
            }
            c.add_point(p.intensity, p.rate, colour(colours[p.p->version]),
                        fmt::format("{} {} ({} set): {:.3g} FLOP/B, {}FLOP/s from the {}", version_label(p.p->version),
                                    shape_key(p.p->mode, p.p->shape), p.p->set, p.intensity, svg::format_number(p.rate, true),
                                    p.from_bench ? "bench median" : "ncu time"));
        }
        out += "<div class=\"charts\">" + c.render() + "</div>\n";
        if (!in.calibrated)
            out += missing("No calibration of this device is cached: only the datasheet ceiling is drawn. `kloop preflight "
                           "--calibrate` measures this machine's attainable peaks.");
        if (!in.datasheet) out += missing("The datasheet table does not know this device: no datasheet ceiling.");
    }
    out += "<table><tr><th>version</th><th>mode/shape</th><th>set</th><th>intensity FLOP/B</th><th>time</th><th>attained "
           "FLOP/s</th><th>attained B/s (spec bytes)</th><th>% of floor (datasheet)</th><th>% of floor (calibrated)</th><th>ncu DRAM "
           "bytes / spec</th></tr>\n";
    auto pct = [&](const std::optional<profile::device_peaks>& pk, const html_roofline_point& p, double t_ns) -> std::string {
        if (!pk || !(pk->dram_bytes_per_s > 0)) return "–";
        const double rate = p.uses_tensor_cores ? pk->tensor_flops_per_s : pk->fp32_flops_per_s;
        const double floor_s = std::max(p.bytes / pk->dram_bytes_per_s, rate > 0 ? p.flops / rate : 0.0);
        return fmt::format("{:.1f} %", floor_s / (t_ns * 1e-9) * 100);
    };
    for (const auto& p : in.roofline) {
        const auto t = p.measured_ns ? p.measured_ns : p.profiled_ns;
        const bool ok_t = t && *t > 0;
        out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
                           "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
                           "class=\"num\">{}</td></tr>\n",
                           version_label(p.version), h(shape_key(p.mode, p.shape)), h(p.set),
                           p.bytes > 0 ? fmt::format("{:.3g}", p.flops / p.bytes) : "–",
                           ok_t ? fmt::format("{} ms ({})", ms(*t * 1e-9), p.measured_ns ? "bench" : "ncu") : "–",
                           ok_t ? svg::format_number(p.flops / (*t * 1e-9), true) : "–",
                           ok_t ? svg::format_number(p.bytes / (*t * 1e-9), true) : "–", ok_t ? pct(in.datasheet, p, *t) : "–",
                           ok_t ? pct(in.calibrated, p, *t) : "–",
                           p.dram_bytes && p.bytes > 0 ? fmt::format("{:.2f}", *p.dram_bytes / p.bytes) : "–");
    }
    out += "</table>\n";
    return out + "</section>\n";
}

std::string profile_section(const html_report_input& in) {
    std::string out = "<section id=\"profile\">\n<h2>Profile diagnosis</h2>\n";
    out += "<p class=\"howto\">The loop's Nsight Compute step per version: its status (full, targeted, unavailable, failed, "
           "missing for --no-profile, n/a for an op that is not CUDA), the bound of its dominant kernel with the numbers, and "
           "whether the profile fails to explain its time (suspect: never promoted). Below, each capture's dominant kernel with "
           "the diagnosis and the next directions it points to.</p>\n";
    out += "<table><tr><th>version</th><th>status</th><th>bound</th><th>note</th><th>suspect</th></tr>\n";
    for (const auto& v : in.versions) {
        const auto& r = v.record;
        std::string suspect = r.suspect ? "SUSPECT" : "no";
        for (const auto& s : r.suspect_reasons) suspect += "; " + s;
        out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", version_label(r.number),
                           h(r.profile_status), h(r.profile_bound.empty() ? "–" : r.profile_bound), h(r.profile_note), h(suspect));
    }
    out += "</table>\n";
    if (in.diagnoses.empty()) {
        bool all_na = !in.versions.empty();
        for (const auto& v : in.versions) all_na = all_na && v.record.profile_status == "n/a";
        out += missing(all_na ? "No diagnosis: this op is not a CUDA op (backend " + in.backend +
                                    "), and Nsight Compute profiles CUDA kernels only. The timings above are the evidence."
                              : "No diagnosis: no version's folder holds a parsed profile summary (see each version's status "
                                "above).");
        return out + "</section>\n";
    }
    for (const auto& d : in.diagnoses) {
        out += fmt::format("<h3>{} {} ({} set): <code>{}</code> — {}</h3>\n", version_label(d.version), h(shape_key(d.mode, d.shape)),
                           h(d.set), h(d.kernel), h(d.bound));
        out += "<p>" + h(d.headline) + "</p>\n";
        if (!d.directions.empty()) {
            out += "<ol>\n";
            for (const auto& x : d.directions) out += "<li>" + h(x) + "</li>\n";
            out += "</ol>\n";
        }
    }
    return out + "</section>\n";
}

std::string files_section(const html_report_input& in) {
    std::string out = "<section id=\"files\">\n<h2>Files</h2>\n";
    out += "<p class=\"howto\">Links relative to this page: they work while the page stays where it was written, beside the "
           "workspace's files.</p>\n";
    auto list = [](const std::vector<html_link>& links) {
        std::string s = "<ul class=\"files\">\n";
        for (const auto& l : links) s += fmt::format("<li><a href=\"{}\">{}</a></li>\n", href_of(l.href), h(l.label));
        return s + "</ul>\n";
    };
    out += "<h3>Workspace</h3>\n" + (in.workspace_files.empty() ? missing("No document found.") : list(in.workspace_files));
    for (const auto& v : in.versions) {
        out += fmt::format("<h3>{} <span class=\"st-{}\">{}</span></h3>\n", version_label(v.record.number), to_string(v.record.status),
                           to_string(v.record.status));
        out += v.files.empty() ? missing("The folder holds no file.") : list(v.files);
    }
    return out + "</section>\n";
}

}  // namespace

std::string href_of(const std::string& relative_path) {
    std::string out;
    for (std::size_t i = 0; i < relative_path.size(); ++i) {
        const auto c = static_cast<unsigned char>(relative_path[i]);
        const bool keep = std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || (c == '/' && !out.empty());
        out += keep ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
    }
    return out;
}

std::string html_report(const html_report_input& in) {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    // No script may run and nothing may be fetched, whatever a record holds.
    out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out += fmt::format("<title>kloop — {}</title>\n<style>\n{}</style>\n</head>\n<body>\n", h(in.op), page_style);
    out += header_section(in);
    out += final_claim_section(in);
    out += history_section(in);
    out += shapes_section(in);
    out += distributions_section(in);
    out += roofline_section(in);
    out += profile_section(in);
    out += files_section(in);
    out += "</body>\n</html>\n";
    return out;
}

}  // namespace kloop::report
