// kloop report: the SVG chart writer (see svg_chart.hpp).
#include "report/svg_chart.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/statistics.hpp"

namespace kloop::report::svg {

namespace {

constexpr double char_px = 6.2;  // the average width of an 11 px sans-serif character

bool is_colour(const std::string& c) {
    if (c.size() != 7 || c[0] != '#') return false;
    return std::all_of(c.begin() + 1, c.end(), [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
}

std::string colour_of(const style& s) { return is_colour(s.colour) ? s.colour : "#888888"; }

std::string stroke_attrs(const style& s) {
    return fmt::format(R"(stroke="{}" stroke-width="{:.2f}"{}{})", colour_of(s), s.stroke_width,
                       s.dashed ? R"( stroke-dasharray="6 4")" : "",
                       s.opacity < 1 ? fmt::format(R"( stroke-opacity="{:.2f}")", std::clamp(s.opacity, 0.0, 1.0)) : "");
}

std::string title_of(const std::string& tooltip) {
    return tooltip.empty() ? std::string() : "<title>" + escape_xml(tooltip) + "</title>";
}

// Liang–Barsky: the part of the segment inside the rectangle, or nothing.
std::optional<std::pair<std::pair<double, double>, std::pair<double, double>>> clip(double x0, double y0, double x1, double y1,
                                                                                     const chart::rect& r) {
    double t0 = 0, t1 = 1;
    const double dx = x1 - x0, dy = y1 - y0;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {x0 - r.x0, r.x1 - x0, y0 - r.y0, r.y1 - y0};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0) {
            if (q[i] < 0) return std::nullopt;
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0) t0 = std::max(t0, t);
        else t1 = std::min(t1, t);
        if (t0 > t1) return std::nullopt;
    }
    return std::make_pair(std::make_pair(x0 + t0 * dx, y0 + t0 * dy), std::make_pair(x0 + t1 * dx, y0 + t1 * dy));
}

std::string marker_svg(marker m, double x, double y, double size, const style& s, const std::string& tooltip,
                       const char* cls = "mark") {
    const auto c = colour_of(s);
    switch (m) {
    case marker::cross:
        return fmt::format(R"(<path class="{6}" d="M{0:.1f},{1:.1f}L{2:.1f},{3:.1f}M{0:.1f},{3:.1f}L{2:.1f},{1:.1f}" stroke="{4}" stroke-width="2.2">{5}</path>)",
                           x - size, y - size, x + size, y + size, c, title_of(tooltip), cls);
    case marker::square:
        return fmt::format(R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" fill-opacity="{:.2f}">{}</rect>)",
                           cls, x - size, y - size, 2 * size, 2 * size, c, std::clamp(s.opacity, 0.0, 1.0), title_of(tooltip));
    case marker::circle:
    default:
        return fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="{:.1f}" fill="{}" fill-opacity="{:.2f}">{}</circle>)", cls, x,
                           y, size, c, std::clamp(s.opacity, 0.0, 1.0), title_of(tooltip));
    }
}

std::vector<tick> axis_ticks(const axis& a) {
    if (a.kind == scale_kind::category) {
        std::vector<tick> t;
        for (std::size_t i = 0; i < a.categories.size(); ++i) t.push_back({static_cast<double>(i), a.categories[i]});
        return t;
    }
    return a.kind == scale_kind::log ? log_ticks(a.min, a.max, a.si) : linear_ticks(a.min, a.max, 5, a.si);
}

}  // namespace

std::string escape_xml(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
            // Control characters other than tab and newline are not allowed in XML 1.0.
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
            else out += c;
        }
    }
    return out;
}

std::string format_number(double v, bool si) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == 0) return "0";
    const double a = std::fabs(v);
    if (si) {
        static constexpr const char* prefixes[] = {"p", "n", "µ", "m", "", "k", "M", "G", "T", "P"};
        int k = static_cast<int>(std::floor(std::log10(a) / 3 + 1e-9));
        k = std::clamp(k, -4, 5);
        return fmt::format("{:.3g}{}", v / std::pow(1000.0, k), prefixes[k + 4]);
    }
    if (a >= 1000 && a < 1e6) return fmt::format("{:.0f}", v);
    if (a >= 1e-3 && a < 1000) return fmt::format("{:.4g}", v);
    return fmt::format("{:.3g}", v);
}

std::vector<tick> linear_ticks(double lo, double hi, int target, bool si) {
    std::vector<tick> out;
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || target < 1) return out;
    const double raw = (hi - lo) / target;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag * 10;
    for (double f : {1.0, 2.0, 5.0, 10.0})
        if (raw <= f * mag * (1 + 1e-9)) {
            step = f * mag;
            break;
        }
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) {
        const double scale = std::pow(10.0, decimals);
        double v = std::round(k * step * scale) / scale;  // 0.6, not 3 × 0.2 = 0.6000000000000001
        if (std::fabs(v) < step * 1e-9) v = 0;
        out.push_back({v, si ? format_number(v, true) : fmt::format("{:.{}f}", v, decimals)});
    }
    return out;
}

std::vector<tick> log_ticks(double lo, double hi, bool si) {
    std::vector<tick> out;
    if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return out;
    const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
    const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    if (last - first + 1 >= 3) {
        const int every = std::max(1, (last - first + 1 + 7) / 8);  // at most about 8 labels
        for (int e = first; e <= last; ++e)
            if ((e - first) % every == 0) out.push_back({std::pow(10.0, e), format_number(std::pow(10.0, e), si)});
        return out;
    }
    for (int e = first - 1; e <= last; ++e)
        for (double f : {1.0, 2.0, 5.0}) {
            const double v = f * std::pow(10.0, e);
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back({v, format_number(v, si)});
        }
    if (out.size() >= 2) return out;
    return linear_ticks(lo, hi, 4, si);
}

axis fit_linear(std::string label, const std::vector<double>& values, std::optional<double> include) {
    axis a;
    a.label = std::move(label);
    double lo = include.value_or(INFINITY), hi = include.value_or(-INFINITY);
    for (double v : values)
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
    if (hi == lo) {
        const double d = lo == 0 ? 1 : std::fabs(lo) * 0.1;
        lo -= d;
        hi += d;
    }
    const double pad = (hi - lo) * 0.05;
    a.min = lo - pad;
    a.max = hi + pad;
    return a;
}

std::optional<axis> fit_log(std::string label, const std::vector<double>& values) {
    double lo = INFINITY, hi = 0;
    for (double v : values)
        if (v > 0 && std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (!(hi > 0)) return std::nullopt;
    axis a;
    a.label = std::move(label);
    a.kind = scale_kind::log;
    if (hi / lo > 10) {
        a.min = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
        a.max = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
    } else if (hi == lo) {
        a.min = lo / 2;
        a.max = hi * 2;
    } else {
        a.min = lo / 1.15;
        a.max = hi * 1.15;
    }
    return a;
}

box_stats box_stats_of(std::vector<double> samples) {
    if (samples.empty()) throw std::invalid_argument("box_stats_of: no samples");
    std::sort(samples.begin(), samples.end());
    box_stats b;
    b.q1 = measure::percentile_sorted(samples, 0.25);
    b.median = measure::percentile_sorted(samples, 0.5);
    b.q3 = measure::percentile_sorted(samples, 0.75);
    const double iqr = b.q3 - b.q1;
    const double lo_fence = b.q1 - 1.5 * iqr, hi_fence = b.q3 + 1.5 * iqr;
    b.whisker_low = b.q1;
    b.whisker_high = b.q3;
    bool low_set = false;
    for (double x : samples) {
        if (x < lo_fence || x > hi_fence) {
            b.outliers.push_back(x);
            continue;
        }
        if (!low_set) b.whisker_low = std::min(x, b.q1), low_set = true;
        b.whisker_high = std::max(x, b.q3);
    }
    return b;
}

chart::chart(std::string title, axis x, axis y, int width_px, int height_px)
    : m_title(std::move(title)), m_x(std::move(x)), m_y(std::move(y)), m_width(width_px), m_height(height_px) {
    if (m_x.kind == scale_kind::category && m_x.categories.empty()) m_x.categories.push_back("");
    if (m_y.kind == scale_kind::category && m_y.categories.empty()) m_y.categories.push_back("");
    double left = 62, bottom = 40;
    if (m_x.kind == scale_kind::category) {
        std::size_t longest = 0;
        for (const auto& c : m_x.categories) longest = std::max(longest, c.size());
        const double band = (m_width - left - 16) / static_cast<double>(m_x.categories.size());
        if (static_cast<double>(longest) * char_px > band) {
            m_rotate_x = true;
            bottom = 34 + std::min(110.0, static_cast<double>(longest) * char_px * 0.6);
        }
    }
    m_area = {left, 30, static_cast<double>(m_width) - 16, static_cast<double>(m_height) - bottom};
}

std::optional<double> chart::map(const axis& a, double v, double p0, double p1) const {
    if (!std::isfinite(v)) return std::nullopt;
    double lo = a.min, hi = a.max, t = v;
    if (a.kind == scale_kind::category) {
        lo = -0.5;
        hi = static_cast<double>(a.categories.size()) - 0.5;
    } else if (a.kind == scale_kind::log) {
        if (v <= 0 || a.min <= 0) return std::nullopt;
        lo = std::log10(a.min);
        hi = std::log10(a.max);
        t = std::log10(v);
    }
    if (!(hi > lo)) return std::nullopt;
    const double eps = (hi - lo) * 1e-9;
    if (t < lo - eps || t > hi + eps) return std::nullopt;
    return p0 + (t - lo) / (hi - lo) * (p1 - p0);
}

std::optional<double> chart::map_x(double x) const { return map(m_x, x, m_area.x0, m_area.x1); }
std::optional<double> chart::map_y(double y) const { return map(m_y, y, m_area.y1, m_area.y0); }

void chart::mark(std::string svg) {
    m_marks += svg;
    m_marks += '\n';
    ++m_drawn;
}

void chart::add_point(double x, double y, const style& s, std::string tooltip, marker m) {
    const auto px = map_x(x), py = map_y(y);
    if (!px || !py) {
        ++m_skipped;
        return;
    }
    mark(marker_svg(m, *px, *py, 4.5, s, tooltip));
}

void chart::add_interval(double x, double lo, double hi, const style& s, std::string tooltip) {
    const auto px = map_x(x), plo = map_y(lo), phi = map_y(hi);
    if (!px || !plo || !phi) {
        ++m_skipped;
        return;
    }
    mark(fmt::format(R"(<path class="mark" d="M{0:.1f},{1:.1f}L{0:.1f},{2:.1f}M{3:.1f},{1:.1f}L{4:.1f},{1:.1f}M{3:.1f},{2:.1f}L{4:.1f},{2:.1f}" fill="none" {5}>{6}</path>)",
                     *px, *plo, *phi, *px - 5, *px + 5, stroke_attrs(s), title_of(tooltip)));
}

void chart::add_bar(double x, double width, double y_from, double y_to, const style& s, std::string tooltip) {
    const auto pl = map_x(x - width / 2), pr = map_x(x + width / 2), p0 = map_y(y_from), p1 = map_y(y_to);
    if (!pl || !pr || !p0 || !p1) {
        ++m_skipped;
        return;
    }
    mark(fmt::format(R"(<rect class="mark" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" fill-opacity="{:.2f}">{}</rect>)",
                     std::min(*pl, *pr), std::min(*p0, *p1), std::max(1.0, std::fabs(*pr - *pl)), std::max(1.0, std::fabs(*p1 - *p0)),
                     colour_of(s), std::clamp(s.opacity, 0.0, 1.0), title_of(tooltip)));
}

void chart::add_box(double x, double width, const box_stats& b, const style& s, std::string tooltip) {
    const auto pl = map_x(x - width / 2), pr = map_x(x + width / 2), pc = map_x(x);
    const auto wl = map_y(b.whisker_low), q1 = map_y(b.q1), md = map_y(b.median), q3 = map_y(b.q3), wh = map_y(b.whisker_high);
    if (!pl || !pr || !pc || !wl || !q1 || !md || !q3 || !wh) {
        ++m_skipped;
        return;
    }
    const auto c = colour_of(s);
    const double cap = std::fabs(*pr - *pl) / 4;
    std::string g = fmt::format(R"(<g class="mark box">{})", title_of(tooltip));
    g += fmt::format(R"(<path d="M{0:.1f},{1:.1f}L{0:.1f},{2:.1f}M{0:.1f},{3:.1f}L{0:.1f},{4:.1f}M{5:.1f},{1:.1f}L{6:.1f},{1:.1f}M{5:.1f},{4:.1f}L{6:.1f},{4:.1f}" stroke="{7}" stroke-width="1.2" fill="none"/>)",
                     *pc, *wl, *q1, *q3, *wh, *pc - cap, *pc + cap, c);
    g += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" fill-opacity="0.25" stroke="{}" stroke-width="1.2"/>)",
                     std::min(*pl, *pr), std::min(*q1, *q3), std::fabs(*pr - *pl), std::max(1.0, std::fabs(*q1 - *q3)), c, c);
    g += fmt::format(R"(<path d="M{:.1f},{:.1f}L{:.1f},{:.1f}" stroke="{}" stroke-width="2.5"/>)", std::min(*pl, *pr), *md,
                     std::max(*pl, *pr), *md, c);
    for (double o : b.outliers)
        if (const auto po = map_y(o))
            g += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="none" stroke="{}" stroke-width="1"/>)", *pc, *po, c);
    g += "</g>";
    mark(std::move(g));
}

void chart::add_line(std::vector<std::pair<double, double>> points, const style& s, std::string tooltip) {
    // Map without the range check, then clip each segment to the plot area.
    auto raw = [](const axis& a, double v, double p0, double p1) -> std::optional<double> {
        if (!std::isfinite(v)) return std::nullopt;
        double lo = a.min, hi = a.max, t = v;
        if (a.kind == scale_kind::log) {
            if (v <= 0 || a.min <= 0) return std::nullopt;
            lo = std::log10(a.min), hi = std::log10(a.max), t = std::log10(v);
        } else if (a.kind == scale_kind::category) {
            lo = -0.5, hi = static_cast<double>(a.categories.size()) - 0.5;
        }
        if (!(hi > lo)) return std::nullopt;
        return p0 + (t - lo) / (hi - lo) * (p1 - p0);
    };
    std::string d;
    std::optional<std::pair<double, double>> prev;
    for (const auto& [x, y] : points) {
        const auto px = raw(m_x, x, m_area.x0, m_area.x1), py = raw(m_y, y, m_area.y1, m_area.y0);
        if (!px || !py) {
            prev.reset();
            continue;
        }
        if (prev)
            if (const auto seg = clip(prev->first, prev->second, *px, *py, m_area))
                d += fmt::format("M{:.1f},{:.1f}L{:.1f},{:.1f}", seg->first.first, seg->first.second, seg->second.first,
                                 seg->second.second);
        prev = std::make_pair(*px, *py);
    }
    if (d.empty()) {
        ++m_skipped;
        return;
    }
    mark(fmt::format(R"(<path class="mark" d="{}" fill="none" {}>{}</path>)", d, stroke_attrs(s), title_of(tooltip)));
}

void chart::add_hline(double y, const style& s, std::string label) {
    const auto py = map_y(y);
    if (!py) return;
    m_marks += fmt::format(R"(<path class="ref" d="M{:.1f},{:.1f}L{:.1f},{:.1f}" {}/>)", m_area.x0, *py, m_area.x1, *py, stroke_attrs(s));
    if (!label.empty())
        m_marks += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="{}">{}</text>)", m_area.x1 - 2, *py - 3,
                               colour_of(s), escape_xml(label));
    m_marks += '\n';
}

void chart::add_label(double x, double y, std::string text, const std::string& colour) {
    const auto px = map_x(x), py = map_y(y);
    if (!px || !py) return;
    m_marks += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="{}">{}</text>)", *px + 6, *py - 6,
                           is_colour(colour) ? colour : "#333333", escape_xml(text)) + "\n";
}

void chart::add_legend(std::string text, const style& s, marker m) { m_legend.push_back({std::move(text), s, m}); }

std::string chart::render() const {
    const auto& a = m_area;
    std::string out = fmt::format(
        R"(<svg class="plot" viewBox="0 0 {0} {1}" width="{0}" height="{1}" role="img" aria-label="{2}" font-family="sans-serif" font-size="11">)",
        m_width, m_height + (m_legend.empty() ? 0 : 20), escape_xml(m_title));
    out += "\n<title>" + escape_xml(m_title) + "</title>\n";
    out += fmt::format(R"(<text x="{:.1f}" y="18" font-size="13" font-weight="bold" fill="#222222">{}</text>)", a.x0, escape_xml(m_title)) +
           "\n";
    const auto area_rect = fmt::format(R"(x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}")", a.x0, a.y0, a.x1 - a.x0, a.y1 - a.y0);
    out += "<rect " + area_rect + " fill=\"#fbfbfb\"/>\n";
    // x ticks and grid
    for (const auto& t : axis_ticks(m_x)) {
        const auto px = map_x(t.value);
        if (!px) continue;
        if (m_x.kind != scale_kind::category)
            out += fmt::format(R"(<path d="M{0:.1f},{1:.1f}L{0:.1f},{2:.1f}" stroke="#e4e4e4"/>)", *px, a.y0, a.y1);
        out += fmt::format(R"(<path d="M{0:.1f},{1:.1f}L{0:.1f},{2:.1f}" stroke="#555555"/>)", *px, a.y1, a.y1 + 4);
        if (m_rotate_x)
            out += fmt::format(R"svg(<text x="{0:.1f}" y="{1:.1f}" text-anchor="end" transform="rotate(-35 {0:.1f} {1:.1f})" fill="#333333">{2}</text>)svg",
                               *px, a.y1 + 14, escape_xml(t.label));
        else
            out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="#333333">{}</text>)", *px, a.y1 + 15,
                               escape_xml(t.label));
        out += '\n';
    }
    for (const auto& t : axis_ticks(m_y)) {
        const auto py = map_y(t.value);
        if (!py) continue;
        if (m_y.kind != scale_kind::category)
            out += fmt::format(R"(<path d="M{1:.1f},{0:.1f}L{2:.1f},{0:.1f}" stroke="#e4e4e4"/>)", *py, a.x0, a.x1);
        out += fmt::format(R"(<path d="M{1:.1f},{0:.1f}L{2:.1f},{0:.1f}" stroke="#555555"/>)", *py, a.x0 - 4, a.x0);
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="#333333">{}</text>)", a.x0 - 6, *py + 4,
                           escape_xml(t.label)) + "\n";
    }
    out += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle" fill="#222222">{}</text>)", (a.x0 + a.x1) / 2, m_height - 6,
                       escape_xml(m_x.label)) + "\n";
    out += fmt::format(R"svg(<text x="14" y="{0:.1f}" text-anchor="middle" transform="rotate(-90 14 {0:.1f})" fill="#222222">{1}</text>)svg",
                       (a.y0 + a.y1) / 2, escape_xml(m_y.label)) + "\n";
    out += m_marks;
    double lx = a.x0;
    const double ly = m_height + 10;
    for (const auto& e : m_legend) {
        out += marker_svg(e.m, lx + 5, ly, 4, e.s, "", "legend");
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="#333333">{}</text>)", lx + 13, ly + 4, escape_xml(e.text)) + "\n";
        lx += 26 + static_cast<double>(e.text.size()) * char_px;
    }
    // The frame last, over the marks, in one colour nothing else uses: the plot area stays outlined
    // whatever crosses its edges (tests find the plots of a screenshot by it).
    out += "<rect " + area_rect + R"( fill="none" stroke="#bbbbbb" shape-rendering="crispEdges"/>)" + "\n";
    out += "</svg>\n";
    return out;
}

}  // namespace kloop::report::svg
