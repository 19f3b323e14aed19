// kloop loop/record: what one `kloop tune` did — every point of its search, in order.
//
// Responsibility: plain data the search (loop/tune_search) fills and the printers
// (report/tune_table) and the tune memory (loop/tune_memory) read. A point is one configuration
// of the candidate's tunables: built, gated and raced against the incumbent of its time
// (eval::compare_candidates), or skipped (its build is byte-identical to a point already
// evaluated), or stopped at its build or its gate. Only a FASTER race moves the incumbent (in a
// batch raced on several devices at once, the FASTER point with the largest speedup).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "measure/ab_comparison.hpp"

namespace kloop::loop {

enum class tune_point_status {
    start,         // the declared values: the first incumbent
    faster,        // raced, FASTER than the incumbent (it became the incumbent unless a point of
                   // its batch was faster still: `became_incumbent`)
    not_faster,    // raced: SAME, SLOWER or AMBIGUOUS
    red,           // built, but its gate (or a checked timed call) failed
    build_failed,  // did not build
    duplicate,     // its build is byte-identical to an evaluated point's: not raced
};
[[nodiscard]] std::string to_string(tune_point_status s);

struct tune_point {
    int index = 0;                        // order of evaluation; 0 is the start
    std::vector<std::string> config;      // one value per tunable, in declaration order
    std::string label;                    // "BLOCK=256, WARPS=4"
    tune_point_status status = tune_point_status::start;
    std::string reason;                   // why red / failed / which point it duplicates
    std::string incumbent;                // the label of the configuration it was raced against
    std::optional<measure::ab_result> verdict;  // the race's overall geomean verdict
    bool became_incumbent = false;        // the start, and the FASTER point a batch moved to
    std::string device;                   // the device slot its race ran on; "" unbound
};

struct tune_result {
    std::vector<std::string> names;       // the tunables, in declaration order
    std::string search;                   // "exhaustive" | "coordinate"
    std::size_t space_size = 0;           // points in the whole space
    int budget = 0;
    std::vector<tune_point> points;       // every point visited, the start first
    std::vector<std::string> start;       // the declared values
    std::vector<std::string> best;        // the incumbent at the end
    std::string best_label;
    std::string start_label;
    // The best against the start: the race that made it the incumbent when that was against the
    // start, else one more race (best vs start) after the search. Empty when the start stayed.
    std::optional<measure::ab_result> best_vs_start;
    std::vector<std::string> devices;     // the device slots raced on (empty: one, unbound)
    std::size_t batch = 1;                // points raced at once against one incumbent
    std::string engine = "local";         // "local" (this host's device slots) | "slurm" (job arrays)
    bool interrupted = false;             // Ctrl-C: the points so far are kept
    std::string stop_reason;              // why the search ended
};

}  // namespace kloop::loop
