// Unit under test: report/svg_chart — ticks on linear and log axes, the data → pixel map, the
// marks it draws and skips, Tukey box statistics, and the escaping of every text it writes.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <stdexcept>
#include <string>

#include "report/svg_chart.hpp"

using namespace kloop::report::svg;

namespace {

std::vector<double> values_of(const std::vector<tick>& ts) {
    std::vector<double> v;
    for (const auto& t : ts) v.push_back(t.value);
    return v;
}

std::vector<std::string> labels_of(const std::vector<tick>& ts) {
    std::vector<std::string> v;
    for (const auto& t : ts) v.push_back(t.label);
    return v;
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

axis log_axis(double lo, double hi) {
    axis a;
    a.kind = scale_kind::log;
    a.min = lo;
    a.max = hi;
    return a;
}

axis lin_axis(double lo, double hi) {
    axis a;
    a.min = lo;
    a.max = hi;
    return a;
}

}  // namespace

TEST(SvgChartTest, LogTicksArePowersOfTenOverSeveralDecades) {
    const auto t = log_ticks(1, 1e4);
    EXPECT_EQ(values_of(t), (std::vector<double>{1, 10, 100, 1000, 10000}));
    EXPECT_EQ(labels_of(t), (std::vector<std::string>{"1", "10", "100", "1000", "10000"}));
    // A range that does not start on a decade: only the decades inside it.
    EXPECT_EQ(values_of(log_ticks(0.03, 40)), (std::vector<double>{0.1, 1, 10}));
    // SI labels for FLOP/s axes.
    EXPECT_EQ(labels_of(log_ticks(1e9, 1e13, true)), (std::vector<std::string>{"1G", "10G", "100G", "1T", "10T"}));
}

TEST(SvgChartTest, LogTicksUseOneTwoFiveWithinADecadeAndThinManyDecades) {
    EXPECT_EQ(values_of(log_ticks(0.5, 3)), (std::vector<double>{0.5, 1, 2}));
    EXPECT_EQ(values_of(log_ticks(0.8, 12)), (std::vector<double>{1, 2, 5, 10}));
    // Inside one 1-2-5 gap: linear ticks, still inside the range.
    const auto narrow = log_ticks(1.1, 1.6);
    ASSERT_GE(narrow.size(), 2u);
    for (const auto& t : narrow) {
        EXPECT_GE(t.value, 1.1 - 1e-12);
        EXPECT_LE(t.value, 1.6 + 1e-12);
    }
    // 21 decades: thinned to at most about eight labels, still powers of ten.
    const auto wide = log_ticks(1e-9, 1e12);
    EXPECT_LE(wide.size(), 8u);
    EXPECT_GE(wide.size(), 4u);
    for (const auto& t : wide) EXPECT_NEAR(std::log10(t.value), std::round(std::log10(t.value)), 1e-9);
    EXPECT_TRUE(log_ticks(0, 10).empty());   // no log of 0
    EXPECT_TRUE(log_ticks(10, 1).empty());
}

TEST(SvgChartTest, LinearTicksAreRoundNumbersInsideTheRange) {
    EXPECT_EQ(values_of(linear_ticks(0, 1, 5)), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
    EXPECT_EQ(labels_of(linear_ticks(0, 1, 5)), (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
    EXPECT_EQ(values_of(linear_ticks(-0.07, 0.23, 3)), (std::vector<double>{0, 0.1, 0.2}));
    EXPECT_EQ(labels_of(linear_ticks(0, 3000, 3, true)), (std::vector<std::string>{"0", "1k", "2k", "3k"}));
}

TEST(SvgChartTest, PointsMapInsideThePlotAreaAndLogMidpointsToTheCentre) {
    chart c("t", log_axis(1, 100), lin_axis(0, 10), 600, 300);
    const auto a = c.plot_area();
    ASSERT_LT(a.x0, a.x1);
    ASSERT_LT(a.y0, a.y1);
    EXPECT_NEAR(*c.map_x(1), a.x0, 1e-9);
    EXPECT_NEAR(*c.map_x(100), a.x1, 1e-9);
    EXPECT_NEAR(*c.map_x(10), (a.x0 + a.x1) / 2, 1e-9);  // the geometric midpoint
    EXPECT_NEAR(*c.map_y(0), a.y1, 1e-9);                // y grows upwards
    EXPECT_NEAR(*c.map_y(10), a.y0, 1e-9);
    EXPECT_FALSE(c.map_x(0).has_value());                // not on a log axis
    EXPECT_FALSE(c.map_x(-3).has_value());
    EXPECT_FALSE(c.map_x(1000).has_value());             // outside the range

    c.add_point(3, 4, {});
    c.add_point(0, 4, {});     // cannot be placed
    c.add_point(50, 11, {});   // above the range
    EXPECT_EQ(c.drawn_marks(), 1);
    EXPECT_EQ(c.skipped_marks(), 2);
    const auto svg = c.render();
    const std::regex circle(R"re(<circle class="mark" cx="([0-9.]+)" cy="([0-9.]+)")re");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, circle)) << svg;
    const double cx = std::stod(m[1]), cy = std::stod(m[2]);
    EXPECT_GT(cx, a.x0);
    EXPECT_LT(cx, a.x1);
    EXPECT_GT(cy, a.y0);
    EXPECT_LT(cy, a.y1);
    EXPECT_NEAR(cx, *c.map_x(3), 0.06);
    EXPECT_NEAR(cy, *c.map_y(4), 0.06);
    EXPECT_EQ(count(svg, "class=\"mark\""), 1);
}

TEST(SvgChartTest, CategoriesSitAtTheCentresOfTheirBands) {
    axis x;
    x.kind = scale_kind::category;
    x.categories = {"v1", "v2", "v3", "v4"};
    chart c("t", x, lin_axis(0, 1), 500, 300);
    const auto a = c.plot_area();
    const double band = (a.x1 - a.x0) / 4;
    EXPECT_NEAR(*c.map_x(0), a.x0 + band / 2, 1e-9);
    EXPECT_NEAR(*c.map_x(3), a.x1 - band / 2, 1e-9);
    const auto svg = c.render();
    for (const auto& label : x.categories) EXPECT_NE(svg.find(">" + label + "</text>"), std::string::npos) << label;
}

TEST(SvgChartTest, LinesAreClippedToThePlotArea) {
    chart c("roof", log_axis(0.1, 100), log_axis(1, 1000), 600, 300);
    // From far outside (bottom-left) to far outside (top-right): drawn, clipped to the area.
    c.add_line({{0.001, 0.01}, {1e4, 1e5}}, {});
    // Entirely outside: nothing drawn.
    c.add_line({{1e3, 1e4}, {1e4, 1e5}}, {});
    EXPECT_EQ(c.drawn_marks(), 1);
    EXPECT_EQ(c.skipped_marks(), 1);
    const auto svg = c.render();
    const std::regex path(R"re(<path class="mark" d="M([0-9.]+),([0-9.]+)L([0-9.]+),([0-9.]+)")re");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, path)) << svg;
    const auto a = c.plot_area();
    for (int i : {1, 3}) {
        EXPECT_GE(std::stod(m[i]), a.x0 - 0.06);
        EXPECT_LE(std::stod(m[i]), a.x1 + 0.06);
    }
    for (int i : {2, 4}) {
        EXPECT_GE(std::stod(m[i]), a.y0 - 0.06);
        EXPECT_LE(std::stod(m[i]), a.y1 + 0.06);
    }
}

TEST(SvgChartTest, BoxStatsFollowTukey) {
    // 1..9 and one far outlier: quartiles of the ten values (R type 7), whiskers within 1.5 IQR.
    const auto b = box_stats_of({5, 1, 2, 3, 4, 6, 7, 8, 9, 100});
    EXPECT_DOUBLE_EQ(b.q1, 3.25);
    EXPECT_DOUBLE_EQ(b.median, 5.5);
    EXPECT_DOUBLE_EQ(b.q3, 7.75);
    EXPECT_DOUBLE_EQ(b.whisker_low, 1);
    EXPECT_DOUBLE_EQ(b.whisker_high, 9);
    ASSERT_EQ(b.outliers.size(), 1u);
    EXPECT_DOUBLE_EQ(b.outliers[0], 100);
    const auto one = box_stats_of({2.0});
    EXPECT_DOUBLE_EQ(one.whisker_low, 2.0);
    EXPECT_DOUBLE_EQ(one.whisker_high, 2.0);
    EXPECT_TRUE(one.outliers.empty());
    EXPECT_THROW((void)box_stats_of({}), std::invalid_argument);

    axis x;
    x.kind = scale_kind::category;
    x.categories = {"v0"};
    chart c("box", x, lin_axis(0, 110), 300, 260);
    c.add_box(0, 0.5, b, {});
    const auto svg = c.render();
    EXPECT_EQ(count(svg, "class=\"mark box\""), 1);
    EXPECT_EQ(count(svg, "r=\"2.5\""), 1);  // the one outlier's circle
}

TEST(SvgChartTest, EveryTextIsEscapedAndColoursAreChecked) {
    const std::string evil = "<script>alert('x')</script> & \"quoted\"";
    axis x = lin_axis(0, 1);
    x.label = evil;
    axis y;
    y.kind = scale_kind::category;
    y.categories = {evil};
    chart c(evil, x, y, 400, 300);
    style s;
    s.colour = "red\" onload=\"alert(1)";
    c.add_point(0.5, 0, s, evil);
    c.add_hline(0, {}, evil);
    c.add_label(0.5, 0, evil);
    c.add_legend(evil, s);
    const auto svg = c.render();
    EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("onload"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("alert('x')"), std::string::npos);
    EXPECT_NE(svg.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"), std::string::npos);
    EXPECT_NE(svg.find("fill=\"#888888\""), std::string::npos);  // the bad colour replaced
    EXPECT_EQ(escape_xml("a\x01" "b"), "a b");                  // no control characters in XML
}

TEST(SvgChartTest, FitAxesCoverTheirValues) {
    const auto l = fit_linear("y", {2, 4, 3}, 0.0);
    EXPECT_LT(l.min, 0);
    EXPECT_GT(l.max, 4);
    const auto g = fit_log("y", {0.002, 0.5, -1, 0});
    ASSERT_TRUE(g.has_value());
    EXPECT_DOUBLE_EQ(g->min, 0.001);
    EXPECT_DOUBLE_EQ(g->max, 1);
    const auto narrow = fit_log("y", {0.9, 1.2});
    ASSERT_TRUE(narrow.has_value());
    EXPECT_LT(narrow->min, 0.9);
    EXPECT_GT(narrow->max, 1.2);
    EXPECT_FALSE(fit_log("y", {0, -2}).has_value());
    EXPECT_EQ(format_number(2.5e12, true), "2.5T");
    EXPECT_EQ(format_number(0.25), "0.25");
    EXPECT_EQ(format_number(12345), "12345");
}
