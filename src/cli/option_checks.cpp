// kloop cli: option value checks (see option_checks.hpp).
#include "cli/option_checks.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace kloop::cli {

namespace {
// The value of `text` when all of it is a finite number.
bool finite_number(const std::string& text, double& v) {
    char* end = nullptr;
    v = std::strtod(text.c_str(), &end);
    return !text.empty() && end == text.c_str() + text.size() && std::isfinite(v);
}
}  // namespace

CLI::Validator seconds_option(bool allow_zero) {
    const std::string range = fmt::format("{}0 - {:.0f}]", allow_zero ? "[" : "(", max_option_seconds);
    return CLI::Validator(
        [allow_zero, range](std::string& text) -> std::string {
            double v = 0;
            if (!finite_number(text, v) || v > max_option_seconds || v < 0 || (v == 0 && !allow_zero))
                return fmt::format("'{}' is not a number of seconds in {}", text, range);
            return {};
        },
        "FLOAT in " + range);
}

CLI::Validator positive_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double v = 0;
            if (!finite_number(text, v) || v <= 0) return fmt::format("'{}' is not a finite number above 0", text);
            return {};
        },
        "POSITIVE");
}

CLI::Validator number_in(double lo, double hi) {
    const std::string range = fmt::format("[{} - {}]", lo, hi);
    return CLI::Validator(
        [lo, hi, range](std::string& text) -> std::string {
            double v = 0;
            if (!finite_number(text, v) || v < lo || v > hi) return fmt::format("'{}' is not a number in {}", text, range);
            return {};
        },
        "FLOAT in " + range);
}

namespace {
std::string seed_problem(const std::string& text) {
    std::uint64_t value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, value, 10);
    const bool digits_only = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits_only || ec != std::errc() || end != last)
        return fmt::format("'{}' is not a seed: a decimal integer from 0 to {}", text, UINT64_MAX);
    return {};
}
}  // namespace

std::uint64_t parse_seed(const std::string& text, const std::string& option) {
    if (auto problem = seed_problem(text); !problem.empty()) throw CLI::ValidationError(option, problem);
    std::uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value, 10);
    return value;
}

CLI::Validator seed_option() {
    return CLI::Validator([](std::string& text) { return seed_problem(text); }, "");
}

}  // namespace kloop::cli
