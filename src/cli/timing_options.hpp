// kloop cli: the timing options every verb that measures shares, declared once.
//
// Responsibility: one declaration, one validation and one help text per option, whichever verb
// takes it — the stopping rule (--min-samples, --min-time, --max-time, --target-rsd), the checked
// calls (--check-every), the A/B noise margin (--min-effect, a fraction in [0, 0.99]) and
// --no-early-verdict. A verb that times two sides (compare, noise) says "per side" in the help;
// the names, types, checks and defaults are the same everywhere (docs/cli.md).
#pragma once

#include "eval/record/evaluation_options.hpp"
#include "measure/ab_comparison.hpp"
#include "platform/host_load.hpp"

namespace CLI {
class App;
}

namespace kloop::cli {

enum class timed_sides { one, two };  // verify and the loop's verbs / compare and noise

// --min-samples, --min-time, --max-time, --target-rsd into `stop`.
void add_stopping_rule_options(CLI::App& sub, measure::stopping_config& stop, timed_sides sides);
// --check-every N: a timed call is checked with probability 1/N (0: none).
void add_check_every_option(CLI::App& sub, int& check_every, timed_sides sides);
// --min-effect X (a fraction in [0, 0.99]) and --no-early-verdict.
void add_min_effect_options(CLI::App& sub, measure::ab_config& ab);
// --no-early-verdict alone: measure/early_verdict.hpp off.
void add_early_verdict_option(CLI::App& sub, measure::ab_config& ab);
// --require-quiet: numbers timed while other work was runnable (platform/host_load) are refused;
// `effect` says how the verb refuses them.
void add_require_quiet_option(CLI::App& sub, bool& require_quiet, const std::string& effect);
// With --require-quiet and a busy timing: says so on `err` (naming the load) and returns exit 2;
// else `otherwise`. The report is printed before, so nothing is lost.
[[nodiscard]] int refuse_busy(bool require_quiet, const platform::host_load_report& load, std::ostream& err, int otherwise);

}  // namespace kloop::cli
