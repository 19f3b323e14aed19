// kloop profile: the reader of Nsight Compute's details CSV page
// (`ncu -i X.ncu-rep --csv --page details`).
//
// Responsibility: ncu's own rule results (SOLBottleneck, CPIStall, LaunchConfiguration, …) with
// their advice text and estimated speedup, and the section metrics as ncu's report shows them. The
// raw page (ncu_csv) is where kloop takes its facts from; the details page adds ncu's words.
//
// Columns (by name; `--print-details all` inserts "Body Item Label"): the 11 ID columns, then
// "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
// "Rule Description", "Estimated Speedup Type", "Estimated Speedup". A row with a rule name is a
// rule result (its "Section Name" is the section identifier, e.g. "SpeedOfLight"); any other row is
// a metric (its "Section Name" is the section's display name).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::profile {

struct ncu_rule_result {
    std::string kernel_id;    // "ID" column, as in the raw page
    std::string kernel_name;
    std::string section;      // "SpeedOfLight"
    std::string rule;         // "SOLBottleneck"
    std::string type;         // "OPT" (optimisation advice), "WRN", "INF", …
    std::string description;
    std::string speedup_type;                   // "global", "local" or empty
    std::optional<double> estimated_speedup_pct;  // ncu's estimate of the time saved, %
};

struct ncu_details_metric {
    std::string kernel_id;
    std::string section;  // "GPU Speed Of Light Throughput"
    std::string name;     // "Memory Throughput"
    std::string text;     // the value as written
    std::optional<double> number;  // in base units (normalise_unit)
    std::string unit;              // base unit (or ncu's spelling when unknown)
};

struct ncu_details {
    std::vector<ncu_rule_result> rules;
    std::vector<ncu_details_metric> metrics;
};

// Throws ncu_csv_error (a usage_error naming the source, line and column): no header, the raw page
// given instead, a required column missing ("ID", "Kernel Name", "Section Name", "Metric Name",
// "Metric Value", "Rule Name"), ragged rows, bad quoting.
[[nodiscard]] ncu_details parse_ncu_details_csv(std::string_view text, const std::string& source);

// {"kernel_id", "section", "rule", "type", "description", "speedup_type", "estimated_speedup_pct"}
[[nodiscard]] nlohmann::json to_json(const ncu_rule_result& r);

}  // namespace kloop::profile
