// kloop cli: the checks on option values that CLI11's stock validators do not make.
//
// Responsibility: refuse, before any work, an option value kloop would otherwise turn into
// another one (exit 2, naming the option):
//   - numbers: finite ("nan" and "inf" are refused, not compared false and let through);
//   - time limits: a finite number of seconds, at most max_option_seconds (a longer deadline
//     would overflow the clock and expire at once), positive or non-negative as the option says;
//   - seeds: a decimal unsigned 64-bit integer and nothing else ("-1", "18446744073709551616",
//     "" and "0x10" are refused, not wrapped, saturated or read as 0).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace kloop::cli {

// The longest time any option accepts: about 11.6 days.
inline constexpr double max_option_seconds = 1e6;

// "FLOAT in (0 - 1000000]" (positive) or "FLOAT in [0 - 1000000]" (zero allowed).
[[nodiscard]] CLI::Validator seconds_option(bool allow_zero = false);

// A finite number above 0 (CLI::PositiveNumber lets "nan" through: every comparison with it is
// false). Described as "POSITIVE", as CLI11's.
[[nodiscard]] CLI::Validator positive_number();
// A finite number in [lo, hi] (CLI::Range lets "nan" through). Described as "FLOAT in [lo - hi]".
[[nodiscard]] CLI::Validator number_in(double lo, double hi);

// The option value of --seed; throws CLI::ValidationError naming `option` for anything that is
// not a decimal integer in [0, 2^64 - 1].
[[nodiscard]] std::uint64_t parse_seed(const std::string& text, const std::string& option = "--seed");
// The same check as a validator (so a bad seed is refused while parsing, before any work).
[[nodiscard]] CLI::Validator seed_option();

}  // namespace kloop::cli
