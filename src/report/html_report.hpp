// kloop report: report.html — one self-contained page of a loop's workspace.
//
// Responsibility: print what loop/report_page gathered from a workspace as one HTML file that
// opens with no network and no JavaScript (inline CSS, inline SVG charts from report/svg_chart,
// a Content-Security-Policy that forbids scripts and remote loads), in sections:
//   final claim      the promotion verdict and criteria of `kloop report`, its per-shape
//                    statistics of v0 and the best side by side, the geomean speedup with its
//                    interval, the machine and the commands — or, before any report, a sentence
//                    saying so;
//   loop history     each iteration's speedup against the best of its time with its interval,
//                    coloured by classification (rejected ones marked at the bottom), and a table;
//   per-shape        every iteration's per-shape speedup and verdict, and the final claim's
//                    per-shape speedups as bars with interval whiskers;
//   distributions    per shape, box plots (median, IQR, 1.5 IQR whiskers, outliers) of the raw
//                    samples of the baseline and the best, with where they come from;
//   roofline         each version's profiled shapes against the calibrated and datasheet peaks;
//   profile          each version's profile status and bound, and the dominant kernels' diagnoses;
//   files            relative links to the workspace's documents and each iteration's files.
// Missing data (no profile on a CPU op, no final report yet, a shape not timed) is said in
// words, never left as an empty chart. Every text taken from the workspace (proposal text,
// file and kernel names, reasons) is escaped; links are relative, percent-encoded paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/record/ab_result.hpp"
#include "loop/record/iteration_record.hpp"
#include "profile/roofline.hpp"

namespace kloop::report {

// A link to a file of the workspace: `href` is a relative path from the page's folder (written
// percent-encoded), `label` the text shown.
struct html_link {
    std::string label;
    std::string href;
};

struct html_version {
    loop::iteration_record record;
    std::vector<html_link> files;          // the iteration folder's files
};

// One profiled shape of one version: the spec's work of a call and the times that place it.
struct html_roofline_point {
    int version = 0;
    std::string mode, shape, set;
    std::string device;
    double flops = 0;                      // spec flops of one call
    double bytes = 0;                      // spec bytes of one call (fewest DRAM bytes)
    bool uses_tensor_cores = false;
    std::optional<double> measured_ns;     // kloop's bench median of the call
    std::optional<double> profiled_ns;     // ncu: the call's kernels
    std::optional<double> dram_bytes;      // ncu: DRAM bytes the call moved
};

// The dominant kernel of one capture, as its profile summary diagnosed it.
struct html_diagnosis {
    int version = 0;
    std::string mode, shape, set;
    std::string kernel;                    // short name
    std::string bound;
    std::string headline;
    std::vector<std::string> directions;   // "technique — signal (docs/knowledge-base.md#anchor)"
};

// The raw samples (seconds) of one shape for the baseline and the best.
struct html_distribution {
    std::string mode, shape;
    std::vector<double> base_s, best_s;
    std::string note;                      // why a side has none ("" when both have samples)
};

struct html_final_claim {
    std::string written_at;
    std::string stale;                     // "" or why it predates the loop's latest iterations
    bool promote = false;
    int best = 0;
    std::string verdict;
    std::vector<std::string> criteria;
    std::optional<eval::ab_evaluation> ab; // v0 against the best side by side; none when best is v0
    std::vector<std::string> command_line; // the `kloop report` that measured it
};

struct html_report_input {
    std::string op, backend, device;
    std::string workspace;                 // the workspace folder, as shown
    std::string generated_at;              // UTC
    std::vector<std::string> command_line; // the command that wrote the page
    int max_iterations = 0;
    std::optional<double> target_speedup;
    std::vector<html_version> versions;    // v0 first
    int best = 0;                          // the loop's current best (loop/ranking)
    std::string best_rule;
    std::vector<html_link> workspace_files;

    std::optional<html_final_claim> final_claim;  // none before `kloop report`

    std::string distribution_source;       // where the samples come from, in words
    std::string base_label = "v0", best_label;
    std::vector<html_distribution> distributions;

    std::vector<html_roofline_point> roofline;
    std::optional<profile::device_peaks> datasheet, calibrated;
    std::vector<std::string> roofline_notes;  // why there is no roofline, or what it leaves out
    std::vector<html_diagnosis> diagnoses;
};

[[nodiscard]] std::string html_report(const html_report_input& in);

// A relative path as an href: each byte outside [A-Za-z0-9-._~/] percent-encoded (':' too, so
// no segment reads as a URL scheme), and a leading '/' as well, so the link stays relative.
[[nodiscard]] std::string href_of(const std::string& relative_path);

}  // namespace kloop::report
