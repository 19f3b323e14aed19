// kloop eval/record: what a profile step found — plain data the printers read.
//
// Responsibility: the result model of the loop's Nsight Compute step and of `kloop profile`
// (eval/profile_step, eval/profile_capture fill it): one capture per mode × shape × set, its
// parsed summary against the roofline, and the step's judgement. report/profile_report prints
// it (profile_summary.json and profile_summary.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile_summary.hpp"

namespace kloop::eval {

struct profile_capture {
    std::string mode, shape, set;
    std::string status = "missing";          // "captured" | "unavailable" | "failed"
    std::string reason;                      // why not captured (one line)
    std::filesystem::path report;            // <out_dir>/profile_<set>_<mode>_<shape>.ncu-rep
    std::filesystem::path raw_csv;           // …​.raw.csv (ncu -i --csv --page raw)
    std::filesystem::path log;               // ncu's and the runner's output
    std::vector<std::string> ncu_argv;
    double wall_s = 0;
    std::optional<double> profiled_call_wall_s;  // the runner's wall time of the profiled call (not a benchmark)
    [[nodiscard]] bool ok() const { return status == "captured"; }
};

struct profile_entry {
    profile_capture capture;
    std::optional<profile::profile_summary> summary;
    std::string parse_error;
    std::optional<double> measured_ns;
    std::optional<double> spec_bytes, spec_flops;
};

struct profile_step_result {
    std::vector<profile_entry> entries;
    // "full": every target has a parsed full capture; "targeted": parsed captures, no full one
    // for some target; "unavailable": no ncu / no permission / not a CUDA op; "failed": nothing parsed.
    std::string status = "missing";
    std::string note;                        // one line: the bound and its numbers, or why not
    std::string bound;                       // of the first target's dominant kernel ("memory-bound", …)
    std::string headline;
    // The entry the note describes: the first target's dominant kernel, from its fullest parsed
    // capture (an index into entries); nullopt when nothing was parsed.
    std::optional<std::size_t> headline_entry;
    bool suspect = false;
    std::vector<std::string> suspect_reasons;
};

}  // namespace kloop::eval
