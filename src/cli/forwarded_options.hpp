// kloop cli: the options of one verb's command line that a per-evaluation `kloop compare` takes.
//
// Responsibility: a verb that runs its evaluations as separate kloop processes (Slurm tasks:
// `kloop noise --slurm`, `kloop tune --slurm`) passes them the options that decide how an
// evaluation is timed and judged (the stopping rule, --min-effect, --held-out, the limits), as
// the user gave them, and drops those only the whole verb takes. `argv` is the full command line;
// everything after `verb` is kept except `positional` (its first occurrence, when not empty), the
// `drop_flags` and the `drop_with_value` options with their values ("--runs 4" and "--runs=4").
#pragma once

#include <string>
#include <vector>

namespace kloop::cli {

[[nodiscard]] std::vector<std::string> forwarded_options(const std::vector<std::string>& argv, const std::string& verb,
                                                         const std::string& positional,
                                                         const std::vector<std::string>& drop_with_value,
                                                         const std::vector<std::string>& drop_flags);

}  // namespace kloop::cli
