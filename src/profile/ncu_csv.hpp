// kloop profile: the reader of Nsight Compute's raw CSV page (`ncu -i X.ncu-rep --csv --page raw`).
//
// Responsibility: text → one row per profiled kernel, each metric as a number in base units, by
// column name. Nothing here knows what a metric means (kernel_profile does that).
//
// The raw page (ncu 2025.3.1, docs/profiling.md "The parser"):
//   row 0  header: the 11 ID columns "ID","Process ID","Process Name","Host Name","Kernel Name",
//          "Context","Stream","Block Size","Grid Size","Device","CC", then one column per metric
//   row 1  units, one per column, empty where a metric has none (its "ID" cell is empty)
//   row 2… one row per profiled kernel launch
// Cells are quoted; a quoted cell may hold commas, doubled quotes and newlines. Numbers carry
// thousands separators ("1,421,984"); "no data", "n/a" and "(!) n/a" mean no value. Lines before
// the header (`==PROF==`, `==WARNING==`, the program's own output) are skipped — the header is the
// first line that starts with "ID" (or, reordered, starts with a quote and has the cells "ID" and
// "Kernel Name"); anything that breaks the table after it (a ragged row, mixed-in program output)
// is an error.
//
// Units are normalised (normalise_unit): time → ns, bytes → byte (K/M/G/T = 1e3 steps, KiB… =
// 1024 steps), bytes per time → byte/s, frequency → hz, "%" stays, per-thing units keep their
// denominator ("Kbyte/block" → byte/block). An unknown unit keeps its value and is recorded as
// is, with unit_known = false.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace kloop::profile {

// A malformed capture: names the source, the line (1-based physical line; 0 when unknown) and,
// where one is at fault, the column. Exit code usage_error: a capture kloop reads is an input.
class ncu_csv_error : public usage_error {
public:
    ncu_csv_error(std::string source, std::size_t line, std::string column, const std::string& why);
    [[nodiscard]] const std::string& get_source() const noexcept { return m_source; }
    [[nodiscard]] std::size_t get_line() const noexcept { return m_line; }
    [[nodiscard]] const std::string& get_column() const noexcept { return m_column; }

private:
    std::string m_source;
    std::size_t m_line;
    std::string m_column;
};

// One CSV record: its fields (quotes removed) and the physical line it starts on.
struct csv_record {
    std::vector<std::string> fields;
    std::size_t line = 0;
};

// RFC 4180 records: quoted fields with "" escapes, embedded commas and newlines, CRLF or LF.
// Blank lines give no record. An unterminated quote or text after a closing quote throws
// ncu_csv_error naming `source`.
[[nodiscard]] std::vector<csv_record> read_csv_records(std::string_view text, const std::string& source);

// A table of ncu's CSV output (any page): the header found after any preamble, its columns by
// name, and every record after it (widths not checked: see check_row_widths).
struct ncu_csv_table {
    csv_record header;
    std::map<std::string, std::size_t, std::less<>> column_of;
    std::vector<csv_record> rows;

    [[nodiscard]] std::optional<std::size_t> find_column(std::string_view name) const;
};

// Skips lines before the header (see above), reads the rest. `page` ("raw", "details") only words
// the error when no header is found. Throws ncu_csv_error: no header, an unnamed or duplicate
// column, bad quoting.
[[nodiscard]] ncu_csv_table read_ncu_csv_table(std::string_view text, const std::string& source, std::string_view page);

// Every row must have the header's width. `allow_short`: rows may stop early (the details page
// omits the trailing rule columns on metric rows), but never run longer, and a one-field line is
// still an error (mixed-in program output). Throws ncu_csv_error naming the line.
void check_row_widths(const ncu_csv_table& table, const std::string& source, bool allow_short);

// ncu's number spelling: thousands separators stripped, then the whole cell must parse as a
// double. "no data", "n/a", "(!) n/a", "" and any text ("(128, 1, 1)", "PolicySpread") → nullopt.
[[nodiscard]] std::optional<double> parse_ncu_number(std::string_view cell);

// A value converted to base units (see the header comment).
struct unit_value {
    double value = 0;
    std::string unit;        // base unit: "ns", "byte", "byte/s", "hz", "%", "byte/block", "" …
    bool unit_known = true;  // false: `unit` is ncu's spelling and `value` is unscaled
};
[[nodiscard]] unit_value normalise_unit(double value, std::string_view unit);

// One metric cell of one kernel row.
struct metric_value {
    std::string text;               // the cell as written (separators kept)
    std::string raw_unit;           // the unit as ncu wrote it (row 1)
    std::optional<double> number;   // in base units; nullopt for "no data", "n/a", text
    std::string unit;               // base unit of `number` (normalise_unit), or raw_unit if unknown
    bool unit_known = true;
};

// One profiled kernel launch: the ID columns and every metric column, by name.
struct ncu_row {
    std::size_t line = 0;  // where the row starts in the source
    std::string id;
    std::string process_id;
    std::string process_name;
    std::string host_name;
    std::string kernel_name;
    std::string context;
    std::string stream;
    std::string block_size;  // "(128, 1, 1)"
    std::string grid_size;
    std::string device;
    std::string cc;
    std::map<std::string, metric_value, std::less<>> metrics;

    [[nodiscard]] const metric_value* find(std::string_view metric) const;
    // The metric's number in base units; nullopt when the column is absent or has no value.
    [[nodiscard]] std::optional<double> get_number(std::string_view metric) const;
    // The cell text; empty when the column is absent.
    [[nodiscard]] std::string get_text(std::string_view metric) const;
};

struct ncu_raw_table {
    std::string source;
    std::vector<std::string> metric_names;  // header order, ID columns excluded
    bool has_units_row = false;
    std::vector<ncu_row> rows;
};

// The 11 ID columns, in ncu's order. "ID" and "Kernel Name" are required; the others may be absent.
[[nodiscard]] const std::vector<std::string>& ncu_id_columns();

// Parses `ncu --csv --page raw` output. `source` names the input in error messages (a path).
// Throws ncu_csv_error: no header row starting with "ID", a details page given instead of a raw
// one, a missing "Kernel Name" column, duplicate columns, a ragged row, bad quoting.
// A header with no kernel rows parses to an empty `rows` (ncu profiled nothing).
[[nodiscard]] ncu_raw_table parse_ncu_raw_csv(std::string_view text, const std::string& source);

}  // namespace kloop::profile
