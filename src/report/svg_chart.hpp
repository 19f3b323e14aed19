// kloop report: a small SVG chart writer for the HTML report (report/html_report).
//
// Responsibility: turn data-space marks into one self-contained inline <svg> element — linear,
// logarithmic and categorical axes with tick marks and labels, points, interval whiskers, bars,
// box plots, polylines (roofline ceilings) and reference lines, text labels and a legend — and
// nothing else: no layout of a page, no data gathering, no script. Every text it writes
// (title, axis labels, tick labels, tooltips, legend entries) is XML-escaped here, so a caller
// may pass text taken from a workspace record; colours are accepted only as "#rrggbb".
//
// Why a writer of our own: kloop is C++, the page must open with no network and no JavaScript,
// and the charts it needs are a handful of mark types on two axes; a plotting library in
// another language (matplotlib) would be a heavier dependency than this file.
//
// Coordinates: marks are given in data units. On a categorical axis the i-th category sits at
// x = i (a box or a bar of width 0.3 at x = i - 0.2 sits left of the category's centre). On a
// logarithmic axis values <= 0 cannot be placed: such a mark is not drawn and is counted in
// skipped_marks() (the caller says so in words). Marks outside the axis range are not drawn
// either (lines are clipped to the plot area).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kloop::report::svg {

enum class scale_kind { linear, log, category };

struct axis {
    std::string label;
    scale_kind kind = scale_kind::linear;
    double min = 0;                        // data range (linear and log; log needs 0 < min < max)
    double max = 1;
    std::vector<std::string> categories;   // category axis: positions 0 .. n-1
    bool si = false;                       // tick labels with SI prefixes (2.5k, 1G, 4T)
};

struct tick {
    double value = 0;
    std::string label;
};

// Round-number ticks (steps of 1, 2 or 5 × 10^k) covering [lo, hi], about `target` of them.
[[nodiscard]] std::vector<tick> linear_ticks(double lo, double hi, int target = 5, bool si = false);
// Ticks of a log axis on [lo, hi] (0 < lo < hi): every power of ten in range; where that gives
// fewer than three, the 1-2-5 series; where that still gives fewer than two, linear ticks.
[[nodiscard]] std::vector<tick> log_ticks(double lo, double hi, bool si = false);

// A linear axis over the values (and `include`, e.g. 0 or 1), padded by 5 % on each side.
[[nodiscard]] axis fit_linear(std::string label, const std::vector<double>& values, std::optional<double> include = {});
// A log axis over the positive values, widened to whole powers of ten when the values span more
// than one; nullopt when no value is positive.
[[nodiscard]] std::optional<axis> fit_log(std::string label, const std::vector<double>& values);

// A number for a tick or a tooltip: 4 significant digits, SI prefixes on request.
[[nodiscard]] std::string format_number(double v, bool si = false);

// & < > " ' as character references: safe in XML/HTML text and in quoted attributes.
[[nodiscard]] std::string escape_xml(std::string_view text);

struct style {
    std::string colour = "#1f77b4";        // "#rrggbb"; anything else is drawn grey
    double stroke_width = 1.5;
    bool dashed = false;
    double opacity = 1.0;
};

enum class marker { circle, cross, square };

// Tukey's box: the quartiles, the whiskers at the most extreme samples within 1.5 IQR of the
// box, and the samples beyond them.
struct box_stats {
    double whisker_low = 0, q1 = 0, median = 0, q3 = 0, whisker_high = 0;
    std::vector<double> outliers;
};
// Throws std::invalid_argument for no samples (measure::percentile_of's rule for NaN/Inf too).
[[nodiscard]] box_stats box_stats_of(std::vector<double> samples);

class chart {
public:
    chart(std::string title, axis x, axis y, int width_px = 640, int height_px = 320);

    void add_point(double x, double y, const style& s, std::string tooltip = {}, marker m = marker::circle);
    // A vertical whisker from lo to hi with caps, at x.
    void add_interval(double x, double lo, double hi, const style& s, std::string tooltip = {});
    // A bar from y_from to y_to, centred on x, `width` in x data units.
    void add_bar(double x, double width, double y_from, double y_to, const style& s, std::string tooltip = {});
    void add_box(double x, double width, const box_stats& b, const style& s, std::string tooltip = {});
    void add_line(std::vector<std::pair<double, double>> points, const style& s, std::string tooltip = {});
    // A horizontal line across the plot area, with an optional label at its right end.
    void add_hline(double y, const style& s, std::string label = {});
    void add_label(double x, double y, std::string text, const std::string& colour = "#333333");
    void add_legend(std::string text, const style& s, marker m = marker::circle);

    [[nodiscard]] std::string render() const;

    struct rect {
        double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // pixels, y0 at the top
    };
    [[nodiscard]] rect plot_area() const { return m_area; }
    // Data → pixel; nullopt where a value cannot be placed (<= 0 on a log axis, outside the range).
    [[nodiscard]] std::optional<double> map_x(double x) const;
    [[nodiscard]] std::optional<double> map_y(double y) const;
    [[nodiscard]] int skipped_marks() const { return m_skipped; }
    [[nodiscard]] int drawn_marks() const { return m_drawn; }

private:
    [[nodiscard]] std::optional<double> map(const axis& a, double v, double p0, double p1) const;
    void mark(std::string svg);

    std::string m_title;
    axis m_x, m_y;
    int m_width, m_height;
    rect m_area;
    bool m_rotate_x = false;               // long category labels are drawn slanted
    std::string m_marks;
    struct legend_entry {
        std::string text;
        style s;
        marker m;
    };
    std::vector<legend_entry> m_legend;
    int m_skipped = 0;
    int m_drawn = 0;
};

}  // namespace kloop::report::svg
