// kloop cli: the live progress of long work, on stderr (see progress_display.hpp).
#include "cli/progress_display.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <ostream>

#include <fmt/format.h>

namespace kloop::cli {

namespace {

constexpr const char* k_bold_cyan = "\033[1;36m";
constexpr const char* k_red = "\033[31m";
constexpr const char* k_green = "\033[32m";
constexpr const char* k_reset = "\033[0m";

int terminal_width() {
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

// The first `columns` characters of `s` (UTF-8 aware enough: never cuts inside a sequence;
// escape sequences count as zero columns).
std::string fit(const std::string& s, int columns) {
    std::string out;
    int shown = 0;
    bool in_escape = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (in_escape) {
            out += s[i];
            if (c == 'm') in_escape = false;
            continue;
        }
        if (c == 0x1b) {
            in_escape = true;
            out += s[i];
            continue;
        }
        const bool starts_character = (c & 0xC0) != 0x80;
        if (starts_character && shown == columns) break;
        if (starts_character) ++shown;
        out += s[i];
    }
    return out;
}

}  // namespace

progress_style progress_style_for(const std::ostream& err, bool silent) {
    if (silent) return progress_style::off;
    const char* term = std::getenv("TERM");
    const bool dumb = term != nullptr && std::string(term) == "dumb";
    if (&err == &std::cerr && ::isatty(STDERR_FILENO) == 1 && !dumb) return progress_style::redraw;
    return progress_style::lines;
}

bool progress_colour_for(progress_style style) {
    const char* no_colour = std::getenv("NO_COLOR");
    return style == progress_style::redraw && (no_colour == nullptr || *no_colour == '\0');
}

std::string format_progress(const eval::progress_update& u, bool colour) {
    std::string head = u.step;
    if (u.count > 0) head += fmt::format(" {}/{}", u.index, u.count);
    std::string line = colour ? fmt::format("{}[{}]{}", k_bold_cyan, head, k_reset) : "[" + head + "]";
    if (!u.subject.empty()) line += " " + u.subject;
    std::string state = u.state;
    if (u.samples) state += fmt::format("{}{} sample{}", state.empty() ? "" : ", ", *u.samples, *u.samples == 1 ? "" : "s");
    if (u.timed_s && u.step != "build") state += fmt::format(", {:.2f} s", *u.timed_s);
    if (u.timed_s && u.step == "build") state += fmt::format(" in {:.1f} s", *u.timed_s);
    if (u.rel_stdev && !u.finished) {
        state += fmt::format(", spread {:.1f} %", 100 * *u.rel_stdev);
        if (u.target_rel_stdev) state += fmt::format(" \u2192 {:.1f} %", 100 * *u.target_rel_stdev);
    }
    if (colour && u.finished) {
        const char* c = u.state == "failed" ? k_red : k_green;
        state = fmt::format("{}{}{}{}", c, u.state, k_reset, state.substr(u.state.size()));
    }
    if (!state.empty()) line += ": " + state;
    return line;
}

progress_display::progress_display(std::ostream& err, progress_style style, bool colour, int width)
    : m_err(err), m_style(style), m_colour(colour), m_width(width) {}

progress_display::progress_display(std::ostream& err, bool silent)
    : progress_display(err, progress_style_for(err, silent), false) {
    m_colour = progress_colour_for(m_style);
}

progress_display::~progress_display() { finish(); }

void progress_display::finish() {
    std::lock_guard lock(m_mutex);
    if (m_style == progress_style::redraw && m_line_shown) {
        m_err << "\r\033[K" << std::flush;
        m_line_shown = false;
    }
}

void progress_display::do_update(const eval::progress_update& u) {
    std::lock_guard lock(m_mutex);
    switch (m_style) {
        case progress_style::off: return;
        case progress_style::lines:
            if (u.finished) m_err << format_progress(u, m_colour) << "\n" << std::flush;
            return;
        case progress_style::redraw: {
            // At most ~20 redraws a second, but every finished step is drawn.
            const auto now = std::chrono::steady_clock::now();
            if (!u.finished && m_line_shown && now - m_last_draw < std::chrono::milliseconds(50)) return;
            m_last_draw = now;
            const int width = m_width > 0 ? m_width : terminal_width();
            m_err << "\r\033[K" << fit(format_progress(u, m_colour), width - 1) << std::flush;
            m_line_shown = true;
            return;
        }
    }
}

}  // namespace kloop::cli
