// Integration tests of the live progress (cli/progress_display, eval/runner_progress): what the
// real kloop shows on stderr while it builds, gates and times — one line per finished step into a
// pipe, one status line redrawn in place on a terminal (a pseudo-terminal made by util-linux's
// `script`), nothing with --json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "integration/kloop_process.hpp"
#include "platform/file_io.hpp"

namespace {

using kloop::testing::example_dir;
using kloop::testing::run_kloop;

const std::string k_candidate = example_dir() + "/versions/v1_rowwise.cpp";

std::vector<std::string> verify_fwd(std::vector<std::string> more = {}, const std::string& max_time = "0.6") {
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", k_candidate, "--mode", "fwd",
                                     "--min-samples", "3", "--min-time", "0", "--max-time", max_time};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

TEST(ProgressTest, IntoAPipeOneLinePerFinishedStepWithoutColour) {
    const auto r = run_kloop(verify_fwd());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("[build] v1_rowwise.cpp: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[gate 1/"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[bench 1/3] "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[bench 3/3] "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\033'), std::string::npos) << "colour or a redraw outside a terminal";
    EXPECT_EQ(r.err.find('\r'), std::string::npos);
    // The steps come in order: every gate case before the first bench shape.
    EXPECT_LT(r.err.rfind("[gate "), r.err.find("[bench "));
    // stdout keeps the report alone.
    EXPECT_EQ(r.out.find("[gate "), std::string::npos);
}

TEST(ProgressTest, JsonMeansNoProgress) {
    const auto r = run_kloop(verify_fwd({"--json"}));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.err.find("[gate "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("[bench "), std::string::npos) << r.err;
}

// Runs kloop on a pseudo-terminal; returns what the terminal received (or nullopt without
// `script`).
std::optional<std::string> on_a_terminal(const std::vector<std::string>& args, const std::string& no_color) {
    if (!std::filesystem::exists("/usr/bin/script")) return std::nullopt;
    kloop::platform::scoped_temp_dir dir("kloop-progress-pty");
    std::string command = std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop";
    for (const auto& a : args) command += " '" + a + "'";
    command += " >/dev/null";
    const auto typescript = (dir.path() / "typescript").string();
    kloop::platform::process_request req;
    req.argv = {"/usr/bin/script", "-qfec", command, typescript};
    req.env_overrides = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"},
                         {"TERM", "xterm"},
                         {"NO_COLOR", no_color}};
    req.timeout_s = 300;
    kloop::platform::posix_command_runner runner;
    const auto res = runner.run(req);
    EXPECT_EQ(res.exit_code, 0) << res.stdout_text << res.stderr_text;
    std::ifstream in(typescript, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(ProgressTest, OnATerminalTheShapeMovesInOneRedrawnLine) {
    const auto tty = on_a_terminal(verify_fwd({}, "1.5"), "");
    if (!tty) GTEST_SKIP() << "no /usr/bin/script (util-linux) to make a terminal";
    // Redrawn in place: carriage return and erase-line, no newline between the steps.
    EXPECT_NE(tty->find("\r\033[K"), std::string::npos);
    // A timed shape's state while it runs: samples so far and the stopping rule's spread against
    // its target — from the runner's progress events, read while it runs.
    EXPECT_NE(tty->find(" samples, "), std::string::npos) << *tty;
    EXPECT_NE(tty->find(", spread "), std::string::npos) << *tty;
    EXPECT_NE(tty->find("\033[1;36m[bench"), std::string::npos) << "colour on a terminal";
    // Cleared at the end: the last thing on the terminal is the erase, not a stale status line.
    const auto last = tty->rfind("\r\033[K");
    EXPECT_EQ(tty->find("[bench", last), std::string::npos);
}

TEST(ProgressTest, NoColorOnATerminalStillRedrawsWithoutColour) {
    const auto tty = on_a_terminal(verify_fwd({"--no-bench"}), "1");
    if (!tty) GTEST_SKIP() << "no /usr/bin/script (util-linux) to make a terminal";
    EXPECT_NE(tty->find("\r\033[K"), std::string::npos);
    EXPECT_NE(tty->find("[gate "), std::string::npos);
    EXPECT_EQ(tty->find("\033[1;36m"), std::string::npos);
    EXPECT_EQ(tty->find("\033[32m"), std::string::npos);
}

}  // namespace
