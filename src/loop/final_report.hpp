// kloop loop: `kloop report` — the promotion verdict and final_summary.md.
//
// Responsibility: the end of the loop. The best version (loop/ranking) is re-measured against
// the baseline v0 side by side (eval::compare_candidates: both gated, then interleaved in one
// runner) — the final claim never combines numbers from different runs. final_summary.md
// (printed by report/final_summary from what this gathers) holds:
// the promotion verdict with each criterion; the final-claim block (per shape n / median / mean
// / std / min / p10 / p90 for baseline and best, the equal-weight geomean speedup with its
// interval, the exact commands, baseline commit and candidate SHA, machine identity); every
// iteration with its prediction and score; rejected versions and why; the proposer's
// calibration over the loop (loop/record/proposer_calibration); the strategy memory's
// conclusions (preferred and blocked fingerprints). final_result.json keeps the verdict, the
// calibration and the full A/B record (with the raw samples of both sides). With `html`, report.html (loop/report_page) follows, its
// distributions drawn from this re-measurement's samples.
// Promotion: best is not v0, its gate is full and green in this run, and the overall A/B
// verdict is FASTER. The profile criterion is reported as missing (kloop does not profile yet).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/ab_evaluation.hpp"
#include "eval/record/evaluation_options.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/strategy_memory.hpp"
#include "measure/ab_comparison.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

struct loop_session;

struct promotion {
    bool promote = false;
    int best = 0;
    std::string verdict;                 // one line: "PROMOTE v2 ..." / "NO PROMOTION: ..."
    std::vector<std::string> criteria;   // "[x] full green gate ..." lines
};

// The profile evidence of the version to promote: its status, note (bound and numbers) and
// whether the promotion rule was relaxed with --allow-unprofiled.
struct profile_evidence {
    std::string status = "missing";      // iteration_record::profile_status
    std::string note;
    bool allow_unprofiled = false;
};

// Pure: the verdict from the best's number, the report's A/B (nullopt when best is v0) and the
// best's profile evidence.
[[nodiscard]] promotion decide_promotion(int best, const std::optional<eval::ab_evaluation>& ab,
                                         std::optional<double> target_speedup, const profile_evidence& profile = {});

struct report_request {
    std::filesystem::path workspace;
    eval::evaluation_options options;
    measure::ab_config ab;
    std::vector<std::string> command_line;
    std::filesystem::path memory_db;
    bool allow_unprofiled = false;       // promote without a full profile; stated in the summary
    bool html = false;                   // also write report.html (loop/report_page) from this measurement
};

struct report_outcome {
    promotion verdict;
    std::filesystem::path summary_file;
    std::string summary;                 // the Markdown written
    std::optional<std::filesystem::path> page_file;  // report.html, when asked for
};

[[nodiscard]] report_outcome write_final_report(const report_request& req, platform::command_runner_base& runner);

}  // namespace kloop::loop
