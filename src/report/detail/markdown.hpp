// kloop report (detail): small Markdown formatting helpers shared by the report's documents.
#pragma once

#include <string>

#include <fmt/format.h>

namespace kloop::report::detail {

// A table cell: '|' escaped, newlines folded to spaces.
inline std::string md_cell(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '|') out += "\\|";
        else if (c == '\n' || c == '\r') out += ' ';
        else out += c;
    }
    return out;
}

// Seconds as milliseconds with 4 significant digits: "0.1234".
inline std::string ms(double seconds) { return fmt::format("{:.4g}", seconds * 1e3); }

}  // namespace kloop::report::detail
