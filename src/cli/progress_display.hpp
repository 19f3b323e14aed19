// kloop cli: the live progress of long work, on stderr.
//
// Responsibility: show the pipelines' progress updates (eval/record/progress.hpp) to the person
// waiting: on a terminal, one status line redrawn in place (the build, the gate case, the bench
// or A/B shape with its samples so far and the stopping rule's spread against its target, the
// profile); elsewhere (a log, a pipe) one line per finished step. Colour only on a terminal and
// never with NO_COLOR set (https://no-color.org). Nothing at all with --quiet or --json: stdout
// stays the record alone, and stderr is left to errors. The status line is cleared before the
// verb prints its report (finish()).
#pragma once

#include <chrono>
#include <iosfwd>
#include <mutex>
#include <string>

#include "eval/record/progress.hpp"

namespace kloop::cli {

enum class progress_style { off, lines, redraw };

// The style for `err`: off when `silent` (--quiet, --json), redraw when `err` is std::cerr on a
// terminal whose TERM is not "dumb", lines otherwise.
[[nodiscard]] progress_style progress_style_for(const std::ostream& err, bool silent);
// Colour for `style`: only when redrawing on a terminal and NO_COLOR is unset or empty.
[[nodiscard]] bool progress_colour_for(progress_style style);

// One update as a line of text, without a newline. Pure.
[[nodiscard]] std::string format_progress(const eval::progress_update& u, bool colour);

class progress_display final : public eval::progress_sink {
public:
    progress_display(std::ostream& err, progress_style style, bool colour, int width = 0);
    // The style and colour `err` calls for (progress_style_for, progress_colour_for).
    progress_display(std::ostream& err, bool silent);
    ~progress_display() override;
    progress_display(const progress_display&) = delete;
    progress_display& operator=(const progress_display&) = delete;

    // The sink to give the pipelines (evaluation_options::progress): null when off.
    [[nodiscard]] eval::progress_sink* sink() { return m_style == progress_style::off ? nullptr : this; }
    // Clears the status line (redraw). Call before printing the report; idempotent.
    void finish();

protected:
    void do_update(const eval::progress_update& u) override;

private:
    std::ostream& m_err;
    progress_style m_style;
    bool m_colour;
    int m_width;                   // columns of the status line (redraw); 0: the terminal's
    std::mutex m_mutex;
    bool m_line_shown = false;
    std::chrono::steady_clock::time_point m_last_draw{};
};

}  // namespace kloop::cli
