// kloop cli: the table of verbs (ninja's kTools idiom). Add a verb here and in its own file.
#include "cli/command.hpp"
#include "cli/verify_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/noise_command.hpp"
#include "cli/init_command.hpp"
#include "cli/iterate_command.hpp"
#include "cli/run_command.hpp"
#include "cli/tune_command.hpp"
#include "cli/status_command.hpp"
#include "cli/best_command.hpp"
#include "cli/report_command.hpp"
#include "cli/show_command.hpp"
#include "cli/new_command.hpp"
#include "cli/nogo_command.hpp"
#include "cli/dispatch_command.hpp"
#include "cli/demo_command.hpp"
#include "cli/preflight_command.hpp"
#include "cli/profile_command.hpp"
#include "cli/evaluate_sibling_command.hpp"

namespace kloop::cli {

const std::vector<command_entry>& command_table() {
    static const std::vector<command_entry> table = {
        {"new", "Write a black-box op.toml for an op of an FLA-style registry (--from-fla OP): no spec or bench to write", &make_new_command},
        {"verify", "Gate a candidate against the op's reference, then benchmark it", &make_verify_command},
        {"init", "Start a loop: freeze the contract, measure the baseline v0, write the workspace", &make_init_command},
        {"iterate", "One iteration: gate, A/B against the current best, classify, log, snapshot, commit", &make_iterate_command},
        {"run", "The loop unattended: a proposer command writes each candidate and proposal, kloop iterates until a stop rule", &make_run_command},
        {"tune", "Parameter search over the candidate's kloop:tune values, each point gated and raced; ends in one iteration", &make_tune_command},
        {"status", "Where the loop stands: iterations, best, stall, blocked/preferred strategies, next step", &make_status_command},
        {"best", "Rank the eligible versions (median, then mean, then earliest)", &make_best_command},
        {"report", "Re-measure best vs baseline side by side; write final_summary.md with the promotion verdict", &make_report_command},
        {"show", "Write the loop's HTML page (report.html) from the workspace's records, without measuring", &make_show_command},
        {"nogo", "Check the no-go bar and list what is missing", &make_nogo_command},
        {"dispatch", "Record a shape-specialised path and its evidence in dispatch.md", &make_dispatch_command},
        {"demo", "Run the whole loop on the bundled example in a scratch repository", &make_demo_command},
        {"compare", "A/B: gate two versions, time them interleaved in one runner, verdict per shape and overall", &make_compare_command},
        {"noise", "A against A, N times: the noise floor and the false-verdict rate of the A/B verdicts", &make_noise_command},
        {"profile", "Nsight Compute captures of a candidate, parsed into facts and explained against the roofline", &make_profile_command},
        {"evaluate-sibling", "A Slurm task of `kloop run --parallel --slurm`: one sibling's evaluation on its node", &make_evaluate_sibling_command, true},
        {"preflight", "GPU, driver, clocks, throttling, tools (nvcc, ncu, compute-sanitizer, torch): is this machine fit to time and profile?", &make_preflight_command},
    };
    return table;
}

}  // namespace kloop::cli
