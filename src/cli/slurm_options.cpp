// kloop cli: the Slurm options (see slurm_options.hpp).
#include "cli/slurm_options.hpp"

#include <CLI/CLI.hpp>

namespace kloop::cli {

const std::vector<std::string> k_slurm_option_names = {"--slurm", "--slurm-gres", "--slurm-partition", "--slurm-time",
                                                       "--slurm-arg"};

void add_devices_option(CLI::App& sub, std::string& devices, const std::string& what) {
    sub.add_option("--devices", devices,
                   what + ": all, N (the first N), or a list of UUIDs or indices (default 1: one slot, no binding; "
                          "docs/scale-out.md)")
        ->capture_default_str();
}

void add_slurm_options(CLI::App& sub, std::string& dir, platform::slurm_options& slurm, const std::string& what) {
    sub.add_option("--slurm", dir, what);
    sub.add_option("--slurm-gres", slurm.gres, "With --slurm: sbatch --gres per task (\"\" for none)")->capture_default_str();
    sub.add_option("--slurm-partition", slurm.partition, "With --slurm: sbatch --partition");
    sub.add_option("--slurm-time", slurm.time_limit, "With --slurm: sbatch --time per task, e.g. 00:30:00");
    sub.add_option("--slurm-arg", slurm.extra_args, "With --slurm: one more sbatch argument (repeatable)");
}

}  // namespace kloop::cli
