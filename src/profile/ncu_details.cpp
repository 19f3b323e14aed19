// kloop profile: the reader of Nsight Compute's details CSV page (see ncu_details.hpp).
#include "profile/ncu_details.hpp"

#include "profile/ncu_csv.hpp"

namespace kloop::profile {

ncu_details parse_ncu_details_csv(std::string_view text, const std::string& source) {
    const ncu_csv_table csv = read_ncu_csv_table(text, source, "details");
    const std::size_t header_line = csv.header.line;
    if (!csv.find_column("Metric Name") && !csv.find_column("Rule Name"))
        throw ncu_csv_error(source, header_line, "",
                            "this is not the details page (no \"Metric Name\"/\"Rule Name\" columns; the raw page?): "
                            "export it with ncu -i <report> --csv --page details");
    auto require = [&](const char* name) {
        const auto c = csv.find_column(name);
        if (!c) throw ncu_csv_error(source, header_line, name, "missing from the header (not a details-page ncu CSV?)");
        return *c;
    };
    const std::size_t c_id = require("ID");
    const std::size_t c_kernel = require("Kernel Name");
    const std::size_t c_section = require("Section Name");
    const std::size_t c_metric = require("Metric Name");
    const std::size_t c_value = require("Metric Value");
    const std::size_t c_rule = require("Rule Name");
    const auto c_unit = csv.find_column("Metric Unit");
    const auto c_type = csv.find_column("Rule Type");
    const auto c_desc = csv.find_column("Rule Description");
    const auto c_speedup_type = csv.find_column("Estimated Speedup Type");
    const auto c_speedup = csv.find_column("Estimated Speedup");
    check_row_widths(csv, source, true);
    // Metric rows stop after "Metric Value" (ncu omits the empty rule columns): cells past the end
    // of a row are empty.
    auto cell = [](const csv_record& r, std::size_t c) { return c < r.fields.size() ? r.fields[c] : std::string(); };
    auto opt_cell = [&](const csv_record& r, const std::optional<std::size_t>& c) {
        return c ? cell(r, *c) : std::string();
    };

    ncu_details out;
    for (const auto& r : csv.rows) {
        if (!cell(r, c_rule).empty()) {
            ncu_rule_result rule;
            rule.kernel_id = cell(r, c_id);
            rule.kernel_name = cell(r, c_kernel);
            rule.section = cell(r, c_section);
            rule.rule = cell(r, c_rule);
            rule.type = opt_cell(r, c_type);
            rule.description = opt_cell(r, c_desc);
            rule.speedup_type = opt_cell(r, c_speedup_type);
            rule.estimated_speedup_pct = parse_ncu_number(opt_cell(r, c_speedup));
            out.rules.push_back(std::move(rule));
        } else if (!cell(r, c_metric).empty()) {
            ncu_details_metric m;
            m.kernel_id = cell(r, c_id);
            m.section = cell(r, c_section);
            m.name = cell(r, c_metric);
            m.text = cell(r, c_value);
            const std::string unit = opt_cell(r, c_unit);
            const auto v = parse_ncu_number(m.text);
            const unit_value u = normalise_unit(v.value_or(0.0), unit);
            if (v) m.number = u.value;
            m.unit = u.unit;
            out.metrics.push_back(std::move(m));
        }
    }
    return out;
}

nlohmann::json to_json(const ncu_rule_result& r) {
    return {{"kernel_id", r.kernel_id},
            {"section", r.section},
            {"rule", r.rule},
            {"type", r.type},
            {"description", r.description},
            {"speedup_type", r.speedup_type},
            {"estimated_speedup_pct",
             r.estimated_speedup_pct ? nlohmann::json(*r.estimated_speedup_pct) : nlohmann::json(nullptr)}};
}

}  // namespace kloop::profile
