// Unit under test: `kloop show` and `kloop report --html` end to end on a real loop (the CPU
// rmsnorm example: init, a faster version, a rejected one) — the page is written from the
// records without measuring, has one chart per expected plot with drawn marks, says in words
// what is missing (no profile on a CPU op, no final report yet), links the workspace's files by
// relative paths that resolve; `kloop report --html` draws the distributions from its own
// re-measurement. Then headless Chromium renders both pages: its DOM holds the expected plots,
// it logs no console error, and its screenshot shows every plot frame with coloured marks in it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kloop_process.hpp"
#include "integration/scratch_loop_repo.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "png_image.hpp"
#include "report/svg_chart.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::kloop_run;
using kloop::testing::quick_bench;
using nlohmann::json;

namespace {

std::string kloop_binary() { return std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"; }

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

// The <svg class="plot"> elements of a page (or of a DOM Chromium dumped).
std::vector<std::string> plots_of(const std::string& page) {
    std::vector<std::string> out;
    for (auto p = page.find("<svg class=\"plot\""); p != std::string::npos; p = page.find("<svg class=\"plot\"", p + 1))
        out.push_back(page.substr(p, page.find("</svg>", p) - p));
    return out;
}

std::string percent_decode(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    return out;
}

// The links of a page to files (not in-page anchors), decoded.
std::vector<std::string> file_links(const std::string& page) {
    std::vector<std::string> out;
    const std::regex href(R"re(href="([^"#][^"]*)")re");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator(); ++it)
        out.push_back(percent_decode((*it)[1]));
    return out;
}

// The plots a page of this workspace must have: the history (iterations exist), the final
// claim's per-shape bars (a final report that timed best against v0), and one box-plot chart per
// bench shape with samples (v0's bench shapes). A CPU op has no roofline.
int expected_plots(const fs::path& ws) {
    const auto v0 = json::parse(kloop::platform::read_file(ws / "iter_v0" / "benchmark_result.json"));
    int n = static_cast<int>(v0.at("iteration").at("bench").size());
    if (fs::exists(ws / "iter_v1")) ++n;
    if (fs::exists(ws / "final_result.json")) {
        const auto f = json::parse(kloop::platform::read_file(ws / "final_result.json"));
        if (f.at("ab").is_object()) ++n;
    }
    return n;
}

// Chromium from Debian (package `chromium`), or $KLOOP_TEST_CHROMIUM; "" when there is none.
std::string find_chromium() {
    if (const char* e = std::getenv("KLOOP_TEST_CHROMIUM"); e && *e) return ::access(e, X_OK) == 0 ? e : "";
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const auto end = dirs.find(':', start);
        const fs::path dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
        for (const char* name : {"chromium", "chromium-browser"})
            if (!dir.empty() && ::access((dir / name).c_str(), X_OK) == 0) return (dir / name).string();
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

struct chromium_result {
    kloop::platform::process_result run;
    std::vector<std::string> console_errors;  // lines of the page's console and script errors
};

// Headless Chromium on a local file, logging to stderr, with a throwaway profile.
chromium_result chromium(const std::string& browser, const fs::path& page, std::vector<std::string> mode_args,
                         const fs::path& profile_dir) {
    kloop::platform::process_request req;
    req.argv = {browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                "--force-device-scale-factor=1", "--force-color-profile=srgb", "--enable-logging=stderr", "--v=0",
                "--user-data-dir=" + profile_dir.string()};
    req.argv.insert(req.argv.end(), mode_args.begin(), mode_args.end());
    req.argv.push_back("file://" + fs::absolute(page).string());
    req.env_overrides = {{"HOME", profile_dir.string()}};
    req.timeout_s = 120;
    req.max_capture_bytes = 64 << 20;
    kloop::platform::posix_command_runner runner;
    chromium_result r{runner.run(req), {}};
    std::size_t start = 0;
    const auto& err = r.run.stderr_text;
    while (start < err.size()) {
        auto end = err.find('\n', start);
        if (end == std::string::npos) end = err.size();
        const auto line = err.substr(start, end - start);
        if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
            line.find("Refused to") != std::string::npos || line.find("Content Security Policy") != std::string::npos)
            r.console_errors.push_back(line);
        start = end + 1;
    }
    return r;
}

class ShowTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-show-test"};
    fs::path m_repo, m_op, m_kernel, m_ws;

    // A scratch git repository holding a copy of examples/rmsnorm with kernel.cpp = v0_naive.
    void make_repo() {
        const auto s = kloop::testing::make_scratch_loop_repo(m_dir.path());
        m_repo = s.repo, m_op = s.op, m_kernel = s.kernel, m_ws = s.ws;
    }

    kloop_run run(std::vector<std::string> args, bool bench = false) {
        if (bench) {
            for (const auto& a : quick_bench()) args.push_back(a);
            args.insert(args.end(), {"--held-out", "0"});
        }
        kloop::platform::process_request req;
        req.argv = {kloop_binary()};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        req.env_overrides = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"},
                             {"KLOOP_MEMORY_DB", (m_dir.path() / "memory.sqlite").string()}};
        req.cwd = m_repo;
        req.timeout_s = 300;
        req.max_capture_bytes = 64 << 20;
        kloop::platform::posix_command_runner runner;
        return kloop::testing::to_kloop_run(runner.run(req));
    }

    kloop_run iterate(const std::string& source, const std::string& direction) {
        fs::copy_file(m_op / source, m_kernel, fs::copy_options::overwrite_existing);
        const auto proposal = m_dir.path() / "proposal.md";
        kloop::platform::write_file_atomic(proposal, "Direction: " + direction + "\nExpected: faster\n\n## Strategy tags\n- " +
                                                         direction + "\n");
        return run({"iterate", "--proposal", proposal.string()}, true);
    }

    // The repository, then v0, a faster version (v1), and one the gate rejects (v2).
    void build_loop() {
        make_repo();
        if (HasFatalFailure()) return;
        const auto i = run({"init", m_op.string(), "--candidate", m_kernel.string(), "--max-iterations", "4"}, true);
        ASSERT_EQ(i.exit_code, 0) << i.err << i.out;
        const auto v1 = iterate("versions/v1_rowwise.cpp", "one pass per row <b>32 lanes</b>");
        ASSERT_EQ(v1.exit_code, 0) << v1.err << v1.out;
        const auto v2 = iterate("broken/partial_write.cpp", "skip the last row");
        ASSERT_EQ(v2.exit_code, 0) << v2.err << v2.out;
        ASSERT_NE(v2.out.find("v2: rejected"), std::string::npos) << v2.out;
    }

    // `kloop show` (--out when given); the page's text.
    std::string show(const std::optional<fs::path>& out = std::nullopt) {
        std::vector<std::string> args = {"show"};
        if (out) args.insert(args.end(), {"--out", out->string()});
        const auto s = run(args);
        EXPECT_EQ(s.exit_code, 0) << s.err << s.out;
        const fs::path page = out ? *out : m_ws / "report.html";
        EXPECT_NE(s.out.find("written: " + page.string()), std::string::npos) << s.out;
        return fs::exists(page) ? kloop::platform::read_file(page) : std::string();
    }
};

}  // namespace

TEST_F(ShowTest, PageOfARealLoopFromItsRecords) {
    build_loop();
    if (HasFatalFailure()) return;
    std::set<std::string> before;
    for (const auto& e : fs::recursive_directory_iterator(m_ws)) before.insert(e.path().string());
    const auto v1_record = kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json");

    const auto page = show();
    // It measured nothing and changed no record: the only new file is the page.
    std::set<std::string> after;
    for (const auto& e : fs::recursive_directory_iterator(m_ws)) after.insert(e.path().string());
    before.insert((m_ws / "report.html").string());
    EXPECT_EQ(after, before);
    EXPECT_EQ(kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json"), v1_record);

    for (const char* id : {"final-claim", "history", "shapes", "distributions", "roofline", "profile", "files"})
        EXPECT_EQ(count(page, std::string("<section id=\"") + id + "\">"), 1) << id;
    const auto plots = plots_of(page);
    EXPECT_EQ(static_cast<int>(plots.size()), expected_plots(m_ws));
    for (const auto& p : plots) EXPECT_GE(count(p, "class=\"mark"), 1) << p.substr(0, 300);
    // Missing data in words: no report yet, no profile on a CPU op.
    EXPECT_NE(page.find("No final report yet"), std::string::npos);
    EXPECT_NE(page.find("No roofline: rmsnorm is not a CUDA op (backend cpu)"), std::string::npos);
    EXPECT_NE(page.find("No diagnosis: this op is not a CUDA op"), std::string::npos);
    // Distributions before a report: separate runs, or v0 alone while nothing beat it (a timing
    // verdict, which a busy machine may leave undecided).
    const auto v1 = json::parse(kloop::platform::read_file(m_ws / "iter_v1" / "benchmark_result.json")).at("iteration");
    EXPECT_NE(page.find(v1.at("status") == "positive" ? "These are separate runs" : "No version has beaten v0 yet"), std::string::npos);
    // The proposal's markup is text.
    EXPECT_EQ(page.find("<b>32 lanes</b>"), std::string::npos);
    EXPECT_NE(page.find("&lt;b&gt;32 lanes&lt;/b&gt;"), std::string::npos);
    const auto v2 = json::parse(kloop::platform::read_file(m_ws / "iter_v2" / "benchmark_result.json")).at("iteration");
    EXPECT_NE(page.find("rejected (" + v2.at("rejection").get<std::string>() + "): "), std::string::npos);
    // Every link resolves to a file of the workspace, relative to the page.
    const auto links = file_links(page);
    EXPECT_GE(links.size(), 12u);
    for (const auto& l : links) {
        EXPECT_FALSE(fs::path(l).is_absolute()) << l;
        EXPECT_TRUE(fs::is_regular_file(m_ws / l)) << l;
    }
    for (const char* f : {"iter_v0/kernel.cpp", "iter_v1/optimization_proposal.md", "iter_v2/benchmark_result.json", "OPT_LOG.md"})
        EXPECT_NE(std::find(links.begin(), links.end(), f), links.end()) << f;

    // Elsewhere (--out): the links still lead to the workspace's files.
    const auto elsewhere = m_dir.path() / "pages" / "loop.html";
    const auto page2 = show(elsewhere);
    const auto links2 = file_links(page2);
    EXPECT_EQ(links2.size(), links.size());
    for (const auto& l : links2) EXPECT_TRUE(fs::is_regular_file(elsewhere.parent_path() / l)) << l;

    // `kloop report --html`: the page after the side-by-side re-measurement, from its samples.
    const auto rep = run({"report", "--quiet", "--html"}, true);
    ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
    EXPECT_NE(rep.out.find("written: " + (m_ws / "report.html").string()), std::string::npos) << rep.out;
    const auto final_page = kloop::platform::read_file(m_ws / "report.html");
    const auto final_result = json::parse(kloop::platform::read_file(m_ws / "final_result.json"));
    EXPECT_EQ(static_cast<int>(plots_of(final_page).size()), expected_plots(m_ws));
    EXPECT_EQ(final_page.find("No final report yet"), std::string::npos);
    EXPECT_NE(final_page.find("Promotion verdict: " +
                              kloop::report::svg::escape_xml(final_result.at("verdict").at("text").get<std::string>())),
              std::string::npos);
    const auto& ab = final_result.at("ab");
    if (ab.is_object()) {
        const auto& o = ab.at("overall");
        EXPECT_NE(final_page.find(fmt::format("x{:.3f} [{:.3f}, {:.3f}] {}", o.at("geomean_speedup").get<double>(),
                                              o.at("ci_low").get<double>(), o.at("ci_high").get<double>(),
                                              o.at("verdict").get<std::string>())),
                  std::string::npos);
        EXPECT_NE(final_page.find("From the side-by-side re-measurement of <code>kloop report</code>"), std::string::npos);
        // Each shape's box plot counts the re-measurement's samples of each side.
        for (const auto& s : ab.at("shapes")) {
            const auto key = s.at("mode").get<std::string>() + "/" + s.at("shape").get<std::string>();
            EXPECT_NE(final_page.find(fmt::format("<tr><td>{}</td><td>v0</td><td class=\"num\">{}</td>", key,
                                                  s.at("base_samples_ms").size())),
                      std::string::npos)
                << key;
        }
    }
    // `kloop show` reads the same claim back from final_result.json: the same plots and numbers.
    const auto shown = show();
    EXPECT_EQ(plots_of(shown).size(), plots_of(final_page).size());
    EXPECT_EQ(shown.find("From the side-by-side re-measurement") != std::string::npos,
              final_page.find("From the side-by-side re-measurement") != std::string::npos);
}

TEST_F(ShowTest, ChromiumRendersThePages) {
    const auto browser = find_chromium();
    if (browser.empty()) GTEST_SKIP() << "chromium not found (Debian package `chromium`; or set KLOOP_TEST_CHROMIUM)";

    // The harness itself: a console error on a page is seen.
    const auto probe = m_dir.path() / "probe.html";
    kloop::platform::write_file_atomic(probe, "<!DOCTYPE html><html><body><script>console.error('kloop-probe')</script></body></html>");
    const auto pr = chromium(browser, probe, {"--dump-dom"}, m_dir.path() / "chromium-probe");
    ASSERT_TRUE(pr.run.started && !pr.run.timed_out) << pr.run.stderr_text;
    ASSERT_FALSE(pr.console_errors.empty()) << "the console error of the probe page was not seen:\n" << pr.run.stderr_text;

    build_loop();
    if (HasFatalFailure()) return;
    for (const bool after_report : {false, true}) {
        SCOPED_TRACE(after_report ? "kloop report --html" : "kloop show");
        if (after_report) {
            const auto rep = run({"report", "--quiet", "--html"}, true);
            ASSERT_EQ(rep.exit_code, 0) << rep.err << rep.out;
        } else {
            (void)show();
        }
        const auto page = m_ws / "report.html";
        const int expected = expected_plots(m_ws);

        const auto dom = chromium(browser, page, {"--dump-dom"}, m_dir.path() / "chromium-dom");
        ASSERT_TRUE(dom.run.succeeded()) << dom.run.stderr_text;
        EXPECT_TRUE(dom.console_errors.empty()) << fmt::format("{}", fmt::join(dom.console_errors, "\n"));
        const auto plots = plots_of(dom.run.stdout_text);
        EXPECT_EQ(static_cast<int>(plots.size()), expected) << dom.run.stdout_text.substr(0, 2000);
        for (const auto& p : plots) EXPECT_GE(count(p, "class=\"mark"), 1) << p.substr(0, 300);
        EXPECT_NE(dom.run.stdout_text.find("<section id=\"roofline\">"), std::string::npos);

        const auto png = m_dir.path() / (after_report ? "report.png" : "show.png");
        const auto shot = chromium(browser, page, {"--screenshot=" + png.string(), "--window-size=1200,9000"},
                                   m_dir.path() / "chromium-shot");
        ASSERT_TRUE(shot.run.succeeded()) << shot.run.stderr_text;
        EXPECT_TRUE(shot.console_errors.empty()) << fmt::format("{}", fmt::join(shot.console_errors, "\n"));
        ASSERT_TRUE(fs::exists(png)) << shot.run.stderr_text;
        const auto img = kloop::testing::decode_png(kloop::platform::read_file(png));
        EXPECT_EQ(img.width, 1200);
        // Each plot area is framed in #bbbbbb; every frame holds coloured marks (points, whiskers,
        // boxes, bars), so no plot rendered blank.
        const auto frames = kloop::testing::frames_of(img, {0xbb, 0xbb, 0xbb}, 150, 100);
        EXPECT_EQ(static_cast<int>(frames.size()), expected);
        for (const auto& f : frames)
            EXPECT_GE(kloop::testing::coloured_pixels(img, f), 30)
                << "blank plot at " << f.x0 << "," << f.y0 << " " << f.width() << "x" << f.height();
    }
}
