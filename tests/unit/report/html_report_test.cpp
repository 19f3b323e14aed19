// Unit under test: report/html_report — report.html from a hand-made input: every section and
// chart present with drawn marks, missing data said in words, text from records escaped (no
// HTML or script injection through any field), links relative and percent-encoded, nothing
// that loads a remote resource or runs a script.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>
#include <vector>

#include "report/html_report.hpp"

using namespace kloop;
using namespace kloop::report;
using kloop::loop::iteration_record;
using kloop::loop::iteration_status;

namespace {

const std::string evil = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";

measure::sample_summary stats_ms(double median_ms) {
    measure::sample_summary s;
    s.n = 30;
    s.median = median_ms / 1e3;
    s.mean = median_ms * 1.01 / 1e3;
    s.stdev = median_ms * 0.02 / 1e3;
    s.min = median_ms * 0.97 / 1e3;
    s.max = median_ms * 1.2 / 1e3;
    s.p10 = median_ms * 0.98 / 1e3;
    s.p90 = median_ms * 1.05 / 1e3;
    return s;
}

std::vector<double> samples_s(double median_ms, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(median_ms * (0.95 + 0.1 * i / n) / 1e3);
    v.push_back(median_ms * 1.6 / 1e3);  // one outlier
    return v;
}

iteration_record version(int n, iteration_status st) {
    iteration_record r;
    r.number = n;
    r.status = st;
    r.candidate_file = "kernel.cpp";
    r.candidate_source = "ops/kernel.cpp";
    r.candidate_sha256 = "ab12";
    r.gate_pass = st != iteration_status::rejected;
    r.bench_ok = r.gate_pass;
    r.vs_best = n == 0 ? -1 : 0;
    r.profile_status = "full";
    r.profile_note = "memory-bound (DRAM): 3.9 TB/s";
    r.recorded_at = "2025-01-01T00:00:0" + std::to_string(n) + "Z";
    if (r.bench_ok) {
        r.bench.push_back({"fwd", "small", stats_ms(1.0 / (n + 1))});
        r.bench.push_back({"fwd", "large", stats_ms(4.0 / (n + 1))});
    }
    if (n > 0 && st != iteration_status::rejected) {
        const double sp = st == iteration_status::positive ? 1.8 : 0.97;
        const auto v = st == iteration_status::positive ? measure::ab_verdict::faster : measure::ab_verdict::same;
        r.overall = measure::ab_result{sp, sp * 0.95, sp * 1.05, v};
        r.min_effect = 0.02;
        for (const char* shape : {"small", "large"})
            r.ab.push_back({"fwd", shape, true, "", stats_ms(1.0), stats_ms(1.0 / sp), measure::ab_result{sp, sp * 0.95, sp * 1.05, v}});
    }
    if (st == iteration_status::rejected) {
        r.rejection = loop::rejection_kind::gate;
        r.reason = "wrong result in output 'y'";
    }
    return r;
}

html_report_input full_input() {
    html_report_input in;
    in.op = "rmsnorm";
    in.backend = "cuda";
    in.device = "cuda:0";
    in.workspace = "/repo/profile/rmsnorm-opt";
    in.generated_at = "2025-01-02T00:00:00Z";
    in.command_line = {"kloop", "show"};
    in.max_iterations = 8;
    in.target_speedup = 2.0;
    in.versions = {{version(0, iteration_status::baseline), {{"kernel.cpp", "iter_v0/kernel.cpp"}}},
                   {version(1, iteration_status::positive), {{"kernel.cpp", "iter_v1/kernel.cpp"}}},
                   {version(2, iteration_status::rejected), {{"kernel.cpp", "iter_v2/kernel.cpp"}}},
                   {version(3, iteration_status::negative), {{"kernel.cpp", "iter_v3/kernel.cpp"}}}};
    in.versions[3].record.vs_best = 1;
    in.best = 1;
    in.best_rule = "ranked by geomean median";
    in.workspace_files = {{"final_summary.md", "final_summary.md"}, {"OPT_LOG.md", "OPT_LOG.md"}};

    html_final_claim f;
    f.written_at = "2025-01-01T00:01:00Z";
    f.promote = true;
    f.best = 1;
    f.verdict = "PROMOTE v1 — a full green gate and a repeatable win over v0";
    f.criteria = {"[x] full green gate for v1 in this run"};
    f.command_line = {"kloop", "report", "--html"};
    eval::ab_evaluation ab;
    ab.ok = true;
    for (const char* shape : {"small", "large"}) {
        eval::ab_shape_result s;
        s.mode = "fwd";
        s.shape = shape;
        s.ok = true;
        s.base_s = stats_ms(1.0);
        s.candidate_s = stats_ms(0.55);
        s.verdict = measure::ab_result{1.82, 1.75, 1.9, measure::ab_verdict::faster};
        ab.shapes.push_back(s);
    }
    ab.overall = measure::ab_result{1.82, 1.76, 1.88, measure::ab_verdict::faster};
    ab.env.host_cpu = "Test CPU";
    ab.env.logical_cpus = 2;
    f.ab = ab;
    in.final_claim = f;

    in.distribution_source = "From the side-by-side re-measurement of `kloop report`.";
    in.best_label = "v1";
    in.distributions = {{"fwd", "small", samples_s(1.0, 30), samples_s(0.55, 30), ""},
                        {"fwd", "large", samples_s(4.0, 30), samples_s(2.2, 30), ""}};

    profile::device_peaks ds{"NVIDIA H200", 4.8e12, 67e12, 989e12, profile::peak_source::datasheet};
    profile::device_peaks cal{"NVIDIA H200", 4.4e12, 55e12, 600e12, profile::peak_source::calibrated};
    in.datasheet = ds;
    in.calibrated = cal;
    in.roofline = {{0, "fwd", "large", "full", "NVIDIA H200", 4 * 16384.0 * 8192, 4 * (2 * 16384.0 * 8192), false, 900e3, 880e3, 1.6e9},
                   {1, "fwd", "large", "full", "NVIDIA H200", 4 * 16384.0 * 8192, 4 * (2 * 16384.0 * 8192), false, 260e3, 250e3, 1.1e9}};
    in.diagnoses = {{1, "fwd", "large", "full", "rmsnorm_fwd", "memory-bound (dram)", "DRAM 92 % of peak",
                     {"TMA — DRAM 92 % (docs/knowledge-base.md#mem-tma)"}}};
    return in;
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The <svg>…</svg> elements of a page.
std::vector<std::string> svgs_of(const std::string& page) {
    std::vector<std::string> out;
    for (auto p = page.find("<svg"); p != std::string::npos; p = page.find("<svg", p + 1)) {
        const auto end = page.find("</svg>", p);
        out.push_back(page.substr(p, end == std::string::npos ? std::string::npos : end - p));
    }
    return out;
}

// Nothing may run and nothing may be fetched: every real tag (text from records has its '<'
// escaped, so it opens none) is one that loads nothing, carries no event handler and no src,
// and names only in-page anchors or relative, encoded paths.
void expect_inert(const std::string& page) {
    EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
    const std::regex tag(R"re(<([A-Za-z][A-Za-z0-9]*)([^>]*)>)re");
    const std::regex handler(R"re(\s(on[a-z]+|src|srcset|action|formaction|xlink:href|style)\s*=)re", std::regex::icase);
    const std::regex href(R"re(\shref="([^"]*)")re");
    const std::regex relative(R"re(#[a-z-]+|[A-Za-z0-9._~%-][A-Za-z0-9._~%/-]*)re");
    int tags = 0;
    for (auto it = std::sregex_iterator(page.begin(), page.end(), tag); it != std::sregex_iterator(); ++it, ++tags) {
        const std::string name = lower((*it)[1]);
        const std::string attrs = (*it)[2];
        // The attribute names, with every (quoted, escaped) value emptied.
        const std::string names = std::regex_replace(attrs, std::regex(R"re("[^"]*")re"), "\"\"");
        for (const char* banned : {"script", "img", "iframe", "object", "embed", "link", "base", "form", "image", "use",
                                   "foreignobject", "audio", "video", "source"})
            EXPECT_NE(name, banned) << (*it)[0];
        EXPECT_FALSE(std::regex_search(names, handler)) << (*it)[0];
        std::smatch m;
        if (std::regex_search(attrs, m, href)) {
            EXPECT_TRUE(std::regex_match(std::string(m[1]), relative)) << (*it)[0];
        }
    }
    EXPECT_GT(tags, 50);
    const auto l = lower(page);
    EXPECT_EQ(l.find("<script"), std::string::npos);
    EXPECT_EQ(l.find("url("), std::string::npos);
    EXPECT_EQ(l.find("@import"), std::string::npos);
    EXPECT_EQ(l.find("javascript:"), std::string::npos);
}

}  // namespace

TEST(HtmlReportTest, EverySectionAndChartIsPresentWithDrawnMarks) {
    const auto page = html_report(full_input());
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(page.find("</html>"), std::string::npos);
    for (const char* id : {"final-claim", "history", "shapes", "distributions", "roofline", "profile", "files"})
        EXPECT_EQ(count(page, std::string("<section id=\"") + id + "\">"), 1) << id;
    // history 1, final per-shape bars 1, distributions 2 (one per shape), roofline 1
    const auto svgs = svgs_of(page);
    ASSERT_EQ(svgs.size(), 5u);
    for (const auto& s : svgs) EXPECT_GE(count(s, "class=\"mark"), 2) << s.substr(0, 200);
    // the history: three timed or rejected iterations, the rejected one as a cross
    EXPECT_GE(count(svgs[0], "class=\"mark\""), 5);  // 2 points + 2 whiskers + 1 cross
    // the distributions: two boxes per shape
    EXPECT_EQ(count(svgs[2], "class=\"mark box\""), 2);
    // the roofline: two ceilings and two points
    EXPECT_EQ(count(svgs[4], "<circle class=\"mark\""), 2);
    EXPECT_EQ(count(svgs[4], "<path class=\"mark\""), 2);
    // numbers of the final claim and the tables
    EXPECT_NE(page.find("x1.820 [1.760, 1.880] FASTER"), std::string::npos);
    EXPECT_NE(page.find("Promotion verdict: PROMOTE v1"), std::string::npos);
    EXPECT_NE(page.find("x1.800 [1.710, 1.890] FASTER vs v0"), std::string::npos);
    EXPECT_NE(page.find("rejected (gate): wrong result in output &#39;y&#39;"), std::string::npos);
    EXPECT_NE(page.find("DRAM 92 % of peak"), std::string::npos);
    EXPECT_NE(page.find("href=\"iter_v2/kernel.cpp\""), std::string::npos);
    EXPECT_NE(page.find("href=\"final_summary.md\""), std::string::npos);
    EXPECT_EQ(count(page, "class=\"missing\""), 0);  // nothing is missing in this input
    expect_inert(page);
    EXPECT_EQ(page.find("http://"), std::string::npos);   // no address of anything outside the page
    EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST(HtmlReportTest, MissingDataIsSaidInWords) {
    html_report_input in;
    in.op = "rmsnorm";
    in.backend = "cpu";
    in.max_iterations = 4;
    auto v0 = version(0, iteration_status::baseline);
    v0.profile_status = "n/a";
    v0.profile_note = "not a CUDA op";
    in.versions = {{v0, {}}};
    in.distribution_source = "v0's samples from `kloop init`.";
    in.roofline_notes = {"No roofline: rmsnorm is not a CUDA op (backend cpu)."};
    const auto page = html_report(in);
    EXPECT_TRUE(svgs_of(page).empty());  // no empty chart anywhere
    EXPECT_NE(page.find("No final report yet"), std::string::npos);
    EXPECT_NE(page.find("No iteration yet"), std::string::npos);
    EXPECT_NE(page.find("No iteration was timed against a best yet"), std::string::npos);
    EXPECT_NE(page.find("No raw samples were found"), std::string::npos);
    EXPECT_NE(page.find("No roofline: rmsnorm is not a CUDA op (backend cpu)."), std::string::npos);
    EXPECT_NE(page.find("No diagnosis: this op is not a CUDA op (backend cpu)"), std::string::npos);
    EXPECT_NE(page.find("The folder holds no file."), std::string::npos);
    EXPECT_GE(count(page, "class=\"missing\""), 7);
    for (const char* id : {"final-claim", "history", "shapes", "distributions", "roofline", "profile", "files"})
        EXPECT_EQ(count(page, std::string("<section id=\"") + id + "\">"), 1) << id;
    expect_inert(page);

    // A final report that found no better version: no speedup chart, said so; v0's own numbers.
    html_final_claim f;
    f.verdict = "NO PROMOTION: no version beat the baseline v0 in the loop";
    in.final_claim = f;
    const auto page2 = html_report(in);
    EXPECT_NE(page2.find("No version beat v0 in the loop"), std::string::npos);
    EXPECT_NE(page2.find("found no version better than v0, so it measured no speedup"), std::string::npos);
    EXPECT_NE(page2.find("verdict nopromote"), std::string::npos);

    // A roofline point the log axes cannot hold (no flops) is listed, not silently dropped.
    in.roofline = {{0, "fwd", "copy", "full", "NVIDIA H200", 0, 1e9, false, 3e5, std::nullopt, std::nullopt}};
    in.roofline_notes.clear();
    const auto page3 = html_report(in);
    EXPECT_NE(page3.find("v0 fwd/copy: the spec gives no flops for this shape"), std::string::npos);
}

TEST(HtmlReportTest, RecordTextCannotInjectMarkupOrScript) {
    auto in = full_input();
    in.op = evil;
    in.workspace = evil;
    in.command_line = {"kloop", evil};
    auto& r1 = in.versions[1].record;
    r1.direction = evil + " see https://evil.example/x.js";
    r1.expected = evil;
    r1.warnings = {evil};
    r1.profile_note = evil;
    r1.profile_bound = evil;
    r1.suspect = true;
    r1.suspect_reasons = {evil};
    r1.ab[0].shape = evil;
    in.versions[2].record.reason = evil;
    in.versions[1].files = {{evil, "iter_v1/" + evil},
                            {"js", "javascript:alert(1)"},
                            {"abs", "/etc/passwd"},
                            {"remote", "https://evil.example/x"}};
    in.workspace_files.push_back({evil, "//evil.example/x"});
    in.final_claim->verdict = evil;
    in.final_claim->criteria = {evil};
    in.final_claim->ab->shapes[0].shape = evil;
    in.final_claim->ab->env.host_cpu = evil;
    in.distributions[0].shape = evil;
    in.distribution_source = evil;
    in.roofline[0].shape = evil;
    in.roofline[0].set = evil;
    in.roofline_notes = {evil};
    in.diagnoses[0].kernel = evil;
    in.diagnoses[0].headline = evil;
    in.diagnoses[0].directions = {evil};
    in.best_rule = evil;
    const auto page = html_report(in);
    expect_inert(page);
    EXPECT_EQ(page.find(evil), std::string::npos);
    EXPECT_GE(count(page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;"), 20);
    EXPECT_NE(page.find("href=\"javascript%3Aalert%281%29\""), std::string::npos);
    EXPECT_NE(page.find("href=\"%2Fetc/passwd\""), std::string::npos);
    EXPECT_NE(page.find("href=\"https%3A//evil.example/x\""), std::string::npos);
    EXPECT_NE(page.find("href=\"%2F/evil.example/x\""), std::string::npos);
    // The page still has its five charts: hostile text does not break them.
    EXPECT_EQ(svgs_of(page).size(), 5u);
}

TEST(HtmlReportTest, HrefsAreRelativeAndPercentEncoded) {
    EXPECT_EQ(href_of("iter_v1/kernel.cpp"), "iter_v1/kernel.cpp");
    EXPECT_EQ(href_of("../rmsnorm-opt/iter_v1/a b:c.cpp"), "../rmsnorm-opt/iter_v1/a%20b%3Ac.cpp");
    EXPECT_EQ(href_of("/etc/passwd"), "%2Fetc/passwd");
    EXPECT_EQ(href_of("x\"><y"), "x%22%3E%3Cy");
    EXPECT_EQ(href_of("ü"), "%C3%BC");
}
