// kloop core: small text helpers shared by the parsers of other tools' output (pytest's summary,
// ncu's CSV and messages).
//
// Responsibility: whitespace trimming and line splitting on string_views — no allocation of the
// text itself, no locale beyond the C isspace classes.
#pragma once

#include <string_view>
#include <vector>

namespace kloop {

// `s` without leading and trailing whitespace (isspace: space, \t, \n, \v, \f, \r).
[[nodiscard]] std::string_view trim(std::string_view s);

// The lines of `text` without their "\n" or "\r\n" ending; a text not ending in a newline still
// has its last line; "" gives one empty line.
[[nodiscard]] std::vector<std::string_view> split_lines(std::string_view text);

}  // namespace kloop
