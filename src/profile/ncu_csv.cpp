// kloop profile: the reader of Nsight Compute's raw CSV page (see ncu_csv.hpp).
#include "profile/ncu_csv.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/text.hpp"

namespace kloop::profile {

namespace {

std::string format_csv_error(const std::string& source, std::size_t line, const std::string& column,
                             const std::string& why) {
    std::string where = source.empty() ? std::string("<ncu csv>") : source;
    if (line > 0) where += fmt::format(":{}", line);
    if (!column.empty()) where += fmt::format(": column '{}'", column);
    return where + ": " + why;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "1,421,984" or "1,234.5": commas only as thousands separators (groups of three digits).
bool valid_thousands_grouping(std::string_view s) {
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t lead = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++lead;
    if (lead == 0 || lead > 3) return false;
    bool any_group = false;
    while (i < s.size() && s[i] == ',') {
        ++i;
        for (int k = 0; k < 3; ++k, ++i)
            if (i >= s.size() || !is_digit(s[i])) return false;
        any_group = true;
    }
    if (!any_group) return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
    }
    return i == s.size();
}

// Records of `text`, whose first character is on physical line `first_line`.
std::vector<csv_record> read_records(std::string_view text, const std::string& source, std::size_t first_line) {
    std::vector<csv_record> out;
    std::size_t pos = 0;
    std::size_t line = first_line;
    const std::size_t n = text.size();
    while (pos < n) {
        // A blank line gives no record.
        if (text[pos] == '\n') {
            ++pos, ++line;
            continue;
        }
        if (text[pos] == '\r' && pos + 1 < n && text[pos + 1] == '\n') {
            pos += 2, ++line;
            continue;
        }
        csv_record rec;
        rec.line = line;
        std::string field;
        bool in_quotes = false;
        bool quoted = false;       // this field opened with a quote
        bool after_quote = false;  // this field's closing quote has been seen
        std::size_t quote_line = line;
        bool end_of_record = false;
        while (pos < n && !end_of_record) {
            const char c = text[pos];
            if (in_quotes) {
                if (c == '"') {
                    if (pos + 1 < n && text[pos + 1] == '"') {
                        field += '"';
                        pos += 2;
                    } else {
                        in_quotes = false;
                        after_quote = true;
                        ++pos;
                    }
                } else {
                    if (c == '\n') ++line;
                    field += c;
                    ++pos;
                }
                continue;
            }
            if (c == ',') {
                rec.fields.push_back(std::move(field));
                field.clear();
                quoted = after_quote = false;
                ++pos;
            } else if (c == '\n' || (c == '\r' && pos + 1 < n && text[pos + 1] == '\n')) {
                pos += c == '\n' ? 1 : 2;
                ++line;
                end_of_record = true;
            } else if (c == '"') {
                if (quoted || !field.empty())
                    throw ncu_csv_error(source, line, "",
                                        fmt::format("stray quote in field {} (not CSV?)", rec.fields.size() + 1));
                in_quotes = quoted = true;
                quote_line = line;
                ++pos;
            } else {
                if (after_quote)
                    throw ncu_csv_error(source, line, "",
                                        fmt::format("text after the closing quote of field {} (not CSV?)",
                                                    rec.fields.size() + 1));
                field += c;
                ++pos;
            }
        }
        if (in_quotes)
            throw ncu_csv_error(source, quote_line, "",
                                fmt::format("unterminated quoted field {} (truncated file?)", rec.fields.size() + 1));
        rec.fields.push_back(std::move(field));
        out.push_back(std::move(rec));
    }
    return out;
}

// --- units -----------------------------------------------------------------------------------

std::optional<double> byte_scale(std::string_view u) {
    static const std::array<std::pair<std::string_view, double>, 17> table{{
        {"byte", 1.0}, {"bytes", 1.0}, {"b", 1.0},
        {"kbyte", 1e3}, {"mbyte", 1e6}, {"gbyte", 1e9}, {"tbyte", 1e12},
        {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
        {"kib", 1024.0}, {"mib", 1024.0 * 1024}, {"gib", 1024.0 * 1024 * 1024},
        {"tib", 1024.0 * 1024 * 1024 * 1024}, {"kibyte", 1024.0}, {"mibyte", 1024.0 * 1024},
    }};
    const std::string l = lower(u);
    for (const auto& [name, scale] : table)
        if (l == name) return scale;
    return std::nullopt;
}

// Nanoseconds per unit (exact constants: one multiplication, one rounding).
std::optional<double> time_scale_ns(std::string_view u) {
    static const std::array<std::pair<std::string_view, double>, 10> table{{
        {"ns", 1.0}, {"nsecond", 1.0}, {"us", 1e3}, {"usecond", 1e3}, {"ms", 1e6},
        {"msecond", 1e6}, {"s", 1e9}, {"second", 1e9}, {"sec", 1e9}, {"\xC2\xB5s", 1e3},
    }};
    const std::string l = lower(u);
    for (const auto& [name, scale] : table)
        if (l == name) return scale;
    return std::nullopt;
}

std::optional<double> hz_scale(std::string_view u) {
    const std::string l = lower(u);
    if (l == "hz") return 1.0;
    if (l == "khz") return 1e3;
    if (l == "mhz") return 1e6;
    if (l == "ghz") return 1e9;
    return std::nullopt;
}

// Dimensionless counting units ncu writes; they pass through unchanged.
bool is_count_unit(std::string_view u) {
    static const std::set<std::string, std::less<>> words{
        "block", "cluster", "cycle", "inst", "instruction", "pass", "register", "sector", "sm", "thread",
        "warp", "request", "wavefront", "transaction", "operation", "flop", "sample", "tpc", "gpc", "task",
        "ratio", "count", "cta", "lane"};
    return words.count(lower(u)) > 0;
}

// The raw page's header: ncu writes it starting with "ID"; a reordered one (columns are found by
// name) still starts with a quote and has both "ID" and "Kernel Name" cells.
bool is_header_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) == "\"ID\"," || line.substr(0, 4) == "\"ID\"") return true;
    if (line.empty() || line.front() != '"') return false;
    const bool has_id = line.find(",\"ID\",") != std::string_view::npos ||
                        (line.size() >= 5 && line.substr(line.size() - 5) == ",\"ID\"");
    return has_id && line.find("\"Kernel Name\"") != std::string_view::npos;
}

}  // namespace

ncu_csv_error::ncu_csv_error(std::string source, std::size_t line, std::string column, const std::string& why)
    : usage_error(format_csv_error(source, line, column, why)),
      m_source(std::move(source)),
      m_line(line),
      m_column(std::move(column)) {}

std::vector<csv_record> read_csv_records(std::string_view text, const std::string& source) {
    return read_records(text, source, 1);
}

std::optional<double> parse_ncu_number(std::string_view cell) {
    const std::string_view s = trim(cell);
    if (s.empty()) return std::nullopt;
    std::string digits;
    if (s.find(',') != std::string_view::npos) {
        if (!valid_thousands_grouping(s)) return std::nullopt;
        for (char c : s)
            if (c != ',') digits += c;
    } else {
        digits.assign(s);
    }
    std::string_view d = digits;
    if (!d.empty() && d.front() == '+') d.remove_prefix(1);
    // from_chars would take "inf"/"nan"; ncu never writes them, and a metric without a value is
    // spelled "no data"/"n/a", so only plain decimal numbers count.
    if (d.empty() || !(is_digit(d.front()) || d.front() == '-' || d.front() == '.')) return std::nullopt;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (ec != std::errc() || ptr != d.data() + d.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

unit_value normalise_unit(double value, std::string_view unit_in) {
    const std::string_view unit = trim(unit_in);
    if (unit.empty()) return {value, "", true};
    if (unit == "%") return {value, "%", true};
    const auto slash = unit.find('/');
    if (slash == std::string_view::npos) {
        if (auto t = time_scale_ns(unit)) return {value * *t, "ns", true};
        if (auto b = byte_scale(unit)) return {value * *b, "byte", true};
        if (auto h = hz_scale(unit)) return {value * *h, "hz", true};
        if (is_count_unit(unit)) return {value, std::string(unit), true};
        return {value, std::string(unit), false};
    }
    const std::string_view num = trim(unit.substr(0, slash));
    const std::string_view den = trim(unit.substr(slash + 1));
    if (num.empty() || den.empty() || den.find('/') != std::string_view::npos)
        return {value, std::string(unit), false};
    const auto num_bytes = byte_scale(num);
    // Per-time units become per second: "per ms" is × 1e3 (1e9 / ns-per-unit, an exact constant).
    const auto den_ns = time_scale_ns(den);
    const std::optional<double> per_s = den_ns ? std::optional<double>(1e9 / *den_ns) : std::nullopt;
    if (num_bytes && per_s) return {value * (*num_bytes * *per_s), "byte/s", true};
    if (lower(num) == "cycle" && per_s) return {value * *per_s, "hz", true};
    const bool num_count = num == "%" || is_count_unit(num);
    const bool den_count = is_count_unit(den);
    if (num_count && per_s) return {value * *per_s, fmt::format("{}/s", num), true};
    if (num_bytes && den_count) return {value * *num_bytes, fmt::format("byte/{}", den), true};
    if (num_count) {
        if (auto den_bytes = byte_scale(den)) return {value / *den_bytes, fmt::format("{}/byte", num), true};
        if (den_count) return {value, std::string(unit), true};
    }
    return {value, std::string(unit), false};
}

const metric_value* ncu_row::find(std::string_view metric) const {
    const auto it = metrics.find(metric);
    return it == metrics.end() ? nullptr : &it->second;
}

std::optional<double> ncu_row::get_number(std::string_view metric) const {
    const metric_value* m = find(metric);
    return m ? m->number : std::nullopt;
}

std::string ncu_row::get_text(std::string_view metric) const {
    const metric_value* m = find(metric);
    return m ? m->text : std::string();
}

const std::vector<std::string>& ncu_id_columns() {
    static const std::vector<std::string> cols{"ID",     "Process ID", "Process Name", "Host Name",
                                               "Kernel Name", "Context", "Stream",   "Block Size",
                                               "Grid Size",   "Device",  "CC"};
    return cols;
}

std::optional<std::size_t> ncu_csv_table::find_column(std::string_view name) const {
    const auto it = column_of.find(name);
    return it == column_of.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

ncu_csv_table read_ncu_csv_table(std::string_view text, const std::string& source, std::string_view page) {
    // Skip everything before the header: the first line that starts with "ID" (quoted).
    std::size_t pos = 0;
    std::size_t line = 1;
    bool found = false;
    while (pos < text.size()) {
        std::string_view rest = text.substr(pos);
        if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3), pos += 3;  // UTF-8 BOM
        const auto nl = rest.find('\n');
        if (is_header_line(rest.substr(0, nl))) {
            found = true;
            break;
        }
        if (nl == std::string_view::npos) break;
        pos += nl + 1;
        ++line;
    }
    if (!found)
        throw ncu_csv_error(source, 0, "",
                            fmt::format("no header row starting with \"ID\": not the output of `ncu -i <report> --csv "
                                        "--page {}` (empty, or ncu failed: check its log)",
                                        page));

    std::vector<csv_record> records = read_records(text.substr(pos), source, line);
    ncu_csv_table table;
    table.header = std::move(records.front());
    const csv_record& header = table.header;
    for (std::size_t i = 0; i < header.fields.size(); ++i) {
        const std::string& name = header.fields[i];
        if (name.empty())
            throw ncu_csv_error(source, header.line, "", fmt::format("header column {} has no name", i + 1));
        if (!table.column_of.emplace(name, i).second)
            throw ncu_csv_error(source, header.line, name, "appears twice in the header");
    }
    for (std::size_t k = 1; k < records.size(); ++k) table.rows.push_back(std::move(records[k]));
    return table;
}

void check_row_widths(const ncu_csv_table& table, const std::string& source, bool allow_short) {
    const std::size_t width = table.header.fields.size();
    for (const csv_record& r : table.rows) {
        const std::size_t n = r.fields.size();
        if (n == width || (allow_short && n < width && n > 1)) continue;
        const std::string first = r.fields.empty() ? std::string() : r.fields.front().substr(0, 40);
        throw ncu_csv_error(
            source, r.line, "",
            fmt::format("expected {} fields (as in the header), found {} (starts '{}'): a ragged row, or the "
                        "program's own output mixed into the CSV; capture with -o and re-read with ncu -i",
                        width, n, first));
    }
}

ncu_raw_table parse_ncu_raw_csv(std::string_view text, const std::string& source) {
    const ncu_csv_table csv = read_ncu_csv_table(text, source, "raw");
    const csv_record& header = csv.header;
    const auto& column_of = csv.column_of;
    if (column_of.count("Metric Name") && column_of.count("Metric Value"))
        throw ncu_csv_error(source, header.line, "",
                            "this is the details page (it has \"Metric Name\"/\"Metric Value\" columns); "
                            "export the raw page: ncu -i <report> --csv --page raw");
    for (const char* required : {"ID", "Kernel Name"})
        if (!column_of.count(required))
            throw ncu_csv_error(source, header.line, required, "missing from the header (not a raw-page ncu CSV?)");
    check_row_widths(csv, source, false);

    const auto& id_cols = ncu_id_columns();
    const std::set<std::string, std::less<>> id_set(id_cols.begin(), id_cols.end());

    ncu_raw_table table;
    table.source = source;
    std::vector<std::size_t> metric_index;
    for (std::size_t i = 0; i < header.fields.size(); ++i)
        if (!id_set.count(header.fields[i])) {
            table.metric_names.push_back(header.fields[i]);
            metric_index.push_back(i);
        }

    const std::size_t width = header.fields.size();
    const std::size_t id_col = column_of.at("ID");
    const std::vector<csv_record>& records = csv.rows;

    std::size_t next = 0;
    std::vector<std::string> units(width);
    if (next < records.size() && trim(records[next].fields[id_col]).empty()) {
        units = records[next].fields;
        table.has_units_row = true;
        ++next;
    }

    auto cell = [&](const csv_record& r, const char* name) -> std::string {
        const auto it = column_of.find(std::string_view(name));
        return it == column_of.end() ? std::string() : r.fields[it->second];
    };

    for (; next < records.size(); ++next) {
        const csv_record& r = records[next];
        ncu_row row;
        row.line = r.line;
        row.id = cell(r, "ID");
        if (trim(row.id).empty())
            throw ncu_csv_error(source, r.line, "ID", "empty in a kernel row (a second units row?)");
        row.process_id = cell(r, "Process ID");
        row.process_name = cell(r, "Process Name");
        row.host_name = cell(r, "Host Name");
        row.kernel_name = cell(r, "Kernel Name");
        row.context = cell(r, "Context");
        row.stream = cell(r, "Stream");
        row.block_size = cell(r, "Block Size");
        row.grid_size = cell(r, "Grid Size");
        row.device = cell(r, "Device");
        row.cc = cell(r, "CC");
        for (std::size_t k = 0; k < metric_index.size(); ++k) {
            const std::size_t i = metric_index[k];
            metric_value m;
            m.text = r.fields[i];
            m.raw_unit = units[i];
            if (const auto v = parse_ncu_number(m.text)) {
                const unit_value u = normalise_unit(*v, m.raw_unit);
                m.number = u.value;
                m.unit = u.unit;
                m.unit_known = u.unit_known;
            } else {
                const unit_value u = normalise_unit(0.0, m.raw_unit);
                m.unit = u.unit;
                m.unit_known = u.unit_known;
            }
            row.metrics.emplace(table.metric_names[k], std::move(m));
        }
        table.rows.push_back(std::move(row));
    }
    return table;
}

}  // namespace kloop::profile
