// kloop backend/blackbox: what a black-box bench prints, read back (docs/blackbox.md, "Bench
// output" and "One process, two sides").
//
// Responsibility: the bench protocol's parsing, nothing else. One side: the last stdout line that
// is a JSON object with "shapes". Both sides of an A/B in one process: the last line with
// "sides" ({"sides": {"base": {"shapes": [...]}, "candidate": {...}}}), or "fallback" (the bench
// cannot hold both sides in one process: time them in separate processes) or "error" (with
// "void": true when the bench found one side changing what the other calls). Every shape list
// is checked against the spec's [bench] shapes: each reported once, none missing, raw samples
// finite and > 0.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/op_spec.hpp"

namespace kloop::backend::blackbox {

struct bench_output_shape {
    std::string mode;
    std::string name;
    std::vector<double> samples_s;
    std::optional<double> flops;
    std::optional<double> bytes;
    std::string stop;           // how the bench says the shape stopped ("" = not said), at most 64 chars
    std::string early_verdict;  // with stop "early_verdict": FASTER, SLOWER or SAME
};

// Per expected shape key ("mode/name") the samples in seconds. Throws std::invalid_argument with
// a message naming the problem (missing, unknown or repeated shape, empty or non-finite or
// non-positive samples, no JSON line).
[[nodiscard]] std::vector<bench_output_shape> parse_bench_output(const std::string& stdout_text,
                                                                 const std::vector<spec::blackbox_bench_shape>& expected);

// The last line of `text` that is a JSON object holding one of `keys`, parsed.
[[nodiscard]] std::optional<nlohmann::json> last_json_line(const std::string& text, std::initializer_list<const char*> keys);

struct sides_output {
    enum class kind { sides, fallback, error };
    kind what = kind::error;
    std::string message;                   // the fallback's reason, or the error
    bool void_run = false;                 // "void": true — one side changed what the other calls
    std::string method;                    // "interleaved"
    std::string order;                     // "ABBA per sample"
    std::string idle_threads;              // "python3 x15 (importing side 'base')": threads left idle, watched
    std::map<std::string, std::vector<bench_output_shape>> shapes;  // per side name
};

// The two-sided protocol's last line. A "sides" document must hold every name of `side_names`,
// each with a valid shape list. Throws std::invalid_argument naming the problem (no such line, a
// side missing, a bad shape list).
[[nodiscard]] sides_output parse_sides_output(const std::string& stdout_text, const std::vector<std::string>& side_names,
                                              const std::vector<spec::blackbox_bench_shape>& expected);

}  // namespace kloop::backend::blackbox
