// kloop report: final_summary.md — the end of the loop on one page.
//
// Responsibility: print what `kloop report` gathered (loop/final_report): the promotion verdict
// with each criterion; the final-claim block (per shape n / median / mean / std / min / p10 /
// p90 for baseline and best from one side-by-side A/B, the equal-weight geomean speedup with
// its interval — or the baseline's own numbers when no version beat it), the baseline and the
// candidate (source, SHA-256, local files, commit), the machine and the exact commands; every
// iteration with its prediction and score; the rejected versions and why; the proposer's
// calibration (loop/record/proposer_calibration); the strategy memory's conclusions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/record/ab_result.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/record/proposer_calibration.hpp"

namespace kloop::report {

// One fingerprint of the strategy memory, with what the loops learnt of it.
struct memory_line {
    enum class standing { preferred, blocked, open };
    std::string fingerprint;
    std::vector<std::string> tags;
    int positive = 0, negative = 0, rejected = 0, runs = 0;
    standing where = standing::open;
};

struct final_summary_input {
    std::string op;
    std::string verdict;                              // "PROMOTE v2 …" / "NO PROMOTION: …"
    std::vector<std::string> criteria;                // "[x] …" lines
    int best = 0;
    std::string eligibility_rule;                     // how the best was chosen (loop/ranking)
    const eval::ab_evaluation* ab = nullptr;          // v0 against the best, measured now; null when best is v0
    const std::vector<loop::iteration_record>* records = nullptr;  // v0 first
    std::string baseline_commit;                      // "" when not in git
    bool baseline_dirty = false;
    std::string machine;                              // one line
    std::vector<std::pair<std::string, std::string>> commands;  // exact command lines, each with its note (or "")
    std::string memory_key;                           // "op `x`, backend `y`, …"
    std::vector<memory_line> memory;
    const loop::proposer_calibration* calibration = nullptr;  // the predictions over the loop; null: no section
};

[[nodiscard]] std::string final_summary_md(const final_summary_input& in);

}  // namespace kloop::report
