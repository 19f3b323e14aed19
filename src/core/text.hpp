// kloop core: small text helpers shared by the parsers of other tools' output (pytest's summary,
// ncu's CSV and messages).
//
// Responsibility: whitespace trimming, line and field splitting, ASCII lower case and joining —
// the few string operations several modules need, written once; no locale beyond the C
// isspace / tolower classes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kloop {

// `s` without leading and trailing whitespace (isspace: space, \t, \n, \v, \f, \r).
[[nodiscard]] std::string_view trim(std::string_view s);

// trim() as a string of its own.
[[nodiscard]] std::string trimmed(std::string_view s);

// The lines of `text` without their "\n" or "\r\n" ending; a text not ending in a newline still
// has its last line; "" gives one empty line.
[[nodiscard]] std::vector<std::string_view> split_lines(std::string_view text);

// The fields of `s` between `sep`s, each trimmed; "" gives one empty field.
[[nodiscard]] std::vector<std::string> split_fields(std::string_view s, char sep);

// `s` in ASCII lower case.
[[nodiscard]] std::string lower(std::string_view s);

// The parts with `sep` between them.
[[nodiscard]] std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace kloop
