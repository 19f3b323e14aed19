// Tests of cli/progress_display: the live progress on stderr — its text, its two styles, colour.
#include "cli/progress_display.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

namespace {

using kloop::cli::format_progress;
using kloop::cli::progress_display;
using kloop::cli::progress_style;
using kloop::eval::progress_update;

progress_update timed_shape() {
    progress_update u;
    u.step = "bench";
    u.subject = "fwd/4096x4096";
    u.index = 2;
    u.count = 5;
    u.state = "timing";
    u.samples = 124;
    u.timed_s = 1.02;
    u.rel_stdev = 0.0093;
    u.target_rel_stdev = 0.005;
    return u;
}

TEST(ProgressDisplayTest, ATimedShapeShowsItsSamplesAndTheStoppingRulesSpreadAgainstItsTarget) {
    const auto line = format_progress(timed_shape(), false);
    EXPECT_EQ(line, "[bench 2/5] fwd/4096x4096: timing, 124 samples, 1.02 s, spread 0.9 % \u2192 0.5 %");
    EXPECT_EQ(line.find('\033'), std::string::npos);
    const auto coloured = format_progress(timed_shape(), true);
    EXPECT_NE(coloured.find("\033["), std::string::npos);

    progress_update build;
    build.step = "build";
    build.subject = "v1.cu";
    build.state = "built";
    build.timed_s = 41.25;
    build.finished = true;
    EXPECT_EQ(format_progress(build, false), "[build] v1.cu: built in 41.2 s");
}

TEST(ProgressDisplayTest, WithoutATerminalOneLinePerFinishedStep) {
    std::ostringstream err;
    progress_display d(err, progress_style::lines, false);
    ASSERT_NE(d.sink(), nullptr);
    d.sink()->update(timed_shape());  // in flight: not a line of its own
    auto done = timed_shape();
    done.finished = true;
    done.state = "done";
    d.sink()->update(done);
    d.finish();
    EXPECT_EQ(err.str(), "[bench 2/5] fwd/4096x4096: done, 124 samples, 1.02 s\n");
}

TEST(ProgressDisplayTest, OnATerminalOneLineRedrawnInPlaceThenCleared) {
    std::ostringstream err;
    {
        progress_display d(err, progress_style::redraw, false, 40);
        d.sink()->update(timed_shape());
        const auto drawn = err.str();
        ASSERT_EQ(drawn.rfind("\r\033[K", 0), 0u) << drawn;
        EXPECT_EQ(drawn.find('\n'), std::string::npos);
        // Cut to the width, less one column: 39 characters (here all one byte each).
        EXPECT_EQ(drawn.size(), 4 + 39u);
        d.finish();
        EXPECT_EQ(err.str().substr(drawn.size()), "\r\033[K");
    }
    // Cleared once: destroying the display after finish() writes nothing more.
    EXPECT_EQ(err.str().size(), 4 + 39u + 4);
}

TEST(ProgressDisplayTest, QuietOrJsonMeansNoProgressAndNoColourWithoutATerminal) {
    std::ostringstream err;
    progress_display off(err, true);
    EXPECT_EQ(off.sink(), nullptr);
    EXPECT_EQ(kloop::cli::progress_style_for(err, true), progress_style::off);
    EXPECT_EQ(kloop::cli::progress_style_for(err, false), progress_style::lines);  // not a terminal
    EXPECT_FALSE(kloop::cli::progress_colour_for(progress_style::lines));
}

TEST(ProgressDisplayTest, NoColorTurnsColourOff) {
    const char* before = std::getenv("NO_COLOR");
    const std::string saved = before ? before : "";
    ::setenv("NO_COLOR", "1", 1);
    EXPECT_FALSE(kloop::cli::progress_colour_for(progress_style::redraw));
    ::setenv("NO_COLOR", "", 1);  // empty: as if unset (no-color.org)
    EXPECT_TRUE(kloop::cli::progress_colour_for(progress_style::redraw));
    ::unsetenv("NO_COLOR");
    EXPECT_TRUE(kloop::cli::progress_colour_for(progress_style::redraw));
    if (before) ::setenv("NO_COLOR", saved.c_str(), 1);
}

}  // namespace
