// kloop cli: the timing options every verb that measures shares (see timing_options.hpp).
#include "cli/timing_options.hpp"

#include <CLI/CLI.hpp>

#include <string>

#include "cli/option_checks.hpp"
#include "core/error.hpp"

namespace kloop::cli {

namespace {

std::string rule(timed_sides sides) { return sides == timed_sides::two ? "Stopping rule, per side: " : "Stopping rule: "; }

}  // namespace

void add_stopping_rule_options(CLI::App& sub, measure::stopping_config& stop, timed_sides sides) {
    sub.add_option("--min-samples", stop.min_samples, rule(sides) + "minimum samples per shape")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub.add_option("--min-time", stop.min_time_s,
                   rule(sides) + "minimum measurement seconds per shape (each sample with its flush and sync)")
        ->check(seconds_option(true))
        ->capture_default_str();
    sub.add_option("--max-time", stop.max_time_s,
                   rule(sides) + "cap in measurement seconds per shape" +
                       (sides == timed_sides::two ? " (the shape ends when either side reaches it)" : ""))
        ->check(seconds_option())
        ->capture_default_str();
    sub.add_option("--target-rsd", stop.target_rel_stdev, rule(sides) + "stop when the relative standard deviation reaches this")
        ->check(positive_number())
        ->capture_default_str();
}

void add_check_every_option(CLI::App& sub, int& check_every, timed_sides sides) {
    sub.add_option("--check-every", check_every,
                   sides == timed_sides::two
                       ? "A timed call of either side is compared with the reference with probability 1/N (drawn in the "
                         "checker), and one more after the last; 0: none"
                       : "A timed call is compared with the reference with probability 1/N (drawn in the checker), and one "
                         "more after the last; 0: none")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
}

void add_min_effect_options(CLI::App& sub, measure::ab_config& ab) {
    sub.add_option("--min-effect", ab.min_effect,
                   "Smallest speedup that counts, as a fraction (0.02 = 2 %): FASTER needs the whole 95 % interval of "
                   "median(base)/median(new) at or above 1 + X, SLOWER at or below 1/(1 + X); SAME when it lies "
                   "between, AMBIGUOUS otherwise")
        ->check(number_in(0.0, 0.99))
        ->capture_default_str();
    add_early_verdict_option(sub, ab);
}

void add_early_verdict_option(CLI::App& sub, measure::ab_config& ab) {
    sub.add_flag_callback(
        "--no-early-verdict", [&ab] { ab.early_verdict = false; },
        "Time every shape until each side's stopping rule says done, even when its verdict was settled "
        "earlier (default: a shape stops at the first look whose corrected interval settles FASTER, SLOWER or SAME)");
}

void add_require_quiet_option(CLI::App& sub, bool& require_quiet, const std::string& effect) {
    sub.add_flag("--require-quiet", require_quiet,
                 "Refuse numbers timed while other work was runnable on the machine: " + effect +
                     " (without it they carry a busy_machine warning)");
}

int refuse_busy(bool require_quiet, const platform::host_load_report& load, std::ostream& err, int otherwise) {
    if (!require_quiet || !load.busy()) return otherwise;
    err << "kloop: --require-quiet: the machine was busy while kloop timed (" << load.describe()
        << "); the numbers above are refused: run again on a quiet machine\n";
    return static_cast<int>(exit_code::usage_error);
}

}  // namespace kloop::cli
