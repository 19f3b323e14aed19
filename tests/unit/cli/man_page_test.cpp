// Unit under test: cli/man_page — kloop(1) generated from the command line's model: every verb
// and option, the exit codes, roff escaping, and a page groff and man read without a warning
// (when they are installed).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/cli.hpp"
#include "cli/man_page.hpp"
#include "kloop/version.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
namespace kc = kloop::cli;
namespace kp = kloop::platform;

namespace {

kp::process_result run(std::vector<std::string> argv, std::vector<std::pair<std::string, std::string>> env = {}) {
    kp::process_request r;
    r.argv = std::move(argv);
    r.env_overrides = std::move(env);
    r.timeout_s = 60;
    kp::posix_command_runner runner;
    return runner.run(r);
}

bool have(const std::string& tool) {
    return run({"sh", "-c", "command -v " + tool + " >/dev/null"}).succeeded();
}

std::string page() { return kc::man_page(kc::describe_command_line(), kloop::build_info::version); }

}  // namespace

TEST(ManPageTest, RoffEscape) {
    EXPECT_EQ(kc::roff_escape("plain text"), "plain text");
    EXPECT_EQ(kc::roff_escape(".starts with a dot"), "\\&.starts with a dot");
    EXPECT_EQ(kc::roff_escape("'quote"), "\\&'quote");
    EXPECT_EQ(kc::roff_escape("a\n.b"), "a\n\\&.b");
    EXPECT_EQ(kc::roff_escape("a.b"), "a.b");
    EXPECT_EQ(kc::roff_escape("back\\slash"), "back\\eslash");
    EXPECT_EQ(kc::roff_escape("--json-out"), "--json-out");
    EXPECT_EQ(kc::roff_escape("--json-out", true), "\\-\\-json\\-out");
    EXPECT_EQ(kc::roff_escape("a \xE2\x80\x94 b"), "a \\[u2014] b");  // an em dash
    EXPECT_EQ(kc::roff_escape("\xC3\xA9"), "\\[u00E9]");
    EXPECT_EQ(kc::roff_escape("\xF0\x9F\x98\x80"), "\\[u1F600]");
    EXPECT_EQ(kc::roff_escape("bad \xFF byte"), "bad \\[uFFFD] byte");
    EXPECT_EQ(kc::roff_escape("cut \xE2\x80"), "cut \\[uFFFD]\\[uFFFD]");  // truncated sequence
}

TEST(ManPageTest, EveryVerbOptionAndExitCode) {
    const auto m = kc::describe_command_line();
    const std::string p = page();
    EXPECT_EQ(p.find(".TH KLOOP 1 \"\" \"kloop " + std::string(kloop::build_info::version) + "\""), p.find(".TH "));
    EXPECT_NE(p.find(".SH NAME\nkloop \\- the disciplined optimisation loop for one kernel\n"), std::string::npos);
    for (const auto& v : m.verbs) {
        EXPECT_NE(p.find(".SS " + v.name + "\n"), std::string::npos) << v.name;
        for (const auto& o : v.options)
            for (const auto& n : o.names)
                EXPECT_NE(p.find("\\fB" + kc::roff_escape(n, true) + "\\fR"), std::string::npos) << v.name << " " << n;
        for (const auto& pos : v.positionals)
            EXPECT_NE(p.find("\\fI" + pos.positional + "\\fR"), std::string::npos) << v.name;
    }
    EXPECT_NE(p.find("default: 120"), std::string::npos);   // verify --timeout
    EXPECT_NE(p.find(".SH \"EXIT STATUS\"\n.TP\n.B 0\nsuccess (gate green)\n"), std::string::npos);
    EXPECT_NE(p.find(".TP\n.B 130\ninterrupted\n"), std::string::npos);
    EXPECT_NE(p.find(".B KLOOP_DATA_DIR\n"), std::string::npos);
    EXPECT_EQ(p.find("\\-\\-generate"), std::string::npos);  // the generators are not options of kloop
    // Nothing but ASCII reaches groff.
    for (unsigned char c : p) ASSERT_LT(c, 0x80) << "a non-ASCII byte in the page";
}

TEST(ManPageTest, PrintedForTheGeneratorCommandLine) {
    std::ostringstream out, err;
    ASSERT_EQ(kc::run({"--generate-man"}, out, err), 0) << err.str();
    EXPECT_EQ(out.str(), page());
}

TEST(ManPageTest, GroffReadsItWithoutWarnings) {
    if (!have("groff")) GTEST_SKIP() << "groff is not installed";
    kp::scoped_temp_dir dir("kloop-man-test");
    kp::write_file_atomic(dir.path() / "kloop.1", page());
    const auto r = run({"groff", "-man", "-z", "-ww", (dir.path() / "kloop.1").string()});
    EXPECT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(r.stderr_text, "");
}

TEST(ManPageTest, ManReadsItWithoutWarnings) {
    if (!have("man")) GTEST_SKIP() << "man is not installed";
    kp::scoped_temp_dir dir("kloop-man-test");
    kp::write_file_atomic(dir.path() / "kloop.1", page());
    const auto r = run({"man", "--warnings", "-l", (dir.path() / "kloop.1").string()},
                       {{"MANWIDTH", "100"}, {"MANPAGER", "cat"}, {"PAGER", "cat"}});
    EXPECT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
    EXPECT_EQ(r.stderr_text, "");
    EXPECT_NE(r.stdout_text.find("VERBS"), std::string::npos) << r.stdout_text.substr(0, 400);
    EXPECT_NE(r.stdout_text.find("EXIT STATUS"), std::string::npos);
}
