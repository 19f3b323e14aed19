// kloop cli: the scale-out options of the verbs that spread their evaluations.
//
// Responsibility: one declaration of --devices D (the device pool's slots, eval/visible_devices),
// shared by `kloop noise`, `kloop tune` and `kloop run`, and of --slurm DIR and the sbatch options that go with it
// (--slurm-gres, --slurm-partition, --slurm-time, --slurm-arg), shared by `kloop noise` and
// `kloop tune` (docs/scale-out.md); `what` is the verb's help for --slurm itself. The names a
// per-task `kloop compare` must not get are k_slurm_option_names.
#pragma once

#include <string>
#include <vector>

#include "platform/slurm_array.hpp"

namespace CLI {
class App;
}

namespace kloop::cli {

// Every option add_slurm_options declares (each takes a value).
extern const std::vector<std::string> k_slurm_option_names;

// --devices, its help `what` followed by the values it takes.
void add_devices_option(CLI::App& sub, std::string& devices, const std::string& what);

void add_slurm_options(CLI::App& sub, std::string& dir, platform::slurm_options& slurm, const std::string& what);

}  // namespace kloop::cli
