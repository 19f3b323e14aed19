// Unit under test: profile/ncu_csv — CSV records, ncu numbers, unit normalisation, the raw page
// (the recorded H200 capture and synthetic ones), and every malformed-input error.
#include <gtest/gtest.h>

#include <string>

#include "profile/ncu_csv.hpp"
#include "profile_test_util.hpp"

using namespace kloop::profile;
using namespace kloop::profile::testing;

namespace {

// Runs f, expects ncu_csv_error, returns its message.
template <class F>
std::string csv_error_of(F&& f) {
    try {
        f();
    } catch (const ncu_csv_error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no ncu_csv_error thrown";
    return {};
}

}  // namespace

TEST(NcuCsvRecordsTest, QuotedCommasQuotesAndNewlines) {
    const std::string text = "\"a\",\"b, with comma\",\"say \"\"hi\"\"\"\r\n\"multi\nline\",plain,\"\"\n\n\"last\"";
    const auto recs = read_csv_records(text, "t.csv");
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].fields, (std::vector<std::string>{"a", "b, with comma", "say \"hi\""}));
    EXPECT_EQ(recs[0].line, 1u);
    EXPECT_EQ(recs[1].fields, (std::vector<std::string>{"multi\nline", "plain", ""}));
    EXPECT_EQ(recs[1].line, 2u);
    EXPECT_EQ(recs[2].fields, (std::vector<std::string>{"last"}));
    EXPECT_EQ(recs[2].line, 5u);  // line 4 is blank
}

TEST(NcuCsvRecordsTest, MalformedQuotingThrowsWithLine) {
    EXPECT_NE(csv_error_of([] { (void)read_csv_records("\"a\",\"b\nc", "f.csv"); }).find("f.csv:1: unterminated"), std::string::npos);
    EXPECT_NE(csv_error_of([] { (void)read_csv_records("\"a\"\nab\"c\"", "f.csv"); }).find("f.csv:2: stray quote"),
              std::string::npos);
    EXPECT_NE(csv_error_of([] { (void)read_csv_records("\"a\"x,\"b\"", "f.csv"); }).find("after the closing quote"),
              std::string::npos);
}

TEST(NcuNumberTest, ThousandsSeparatorsAndNoValueSpellings) {
    EXPECT_EQ(parse_ncu_number("1,421,984"), 1421984.0);
    EXPECT_EQ(parse_ncu_number("2.640960"), 2.64096);
    EXPECT_EQ(parse_ncu_number("5,027,500.75"), 5027500.75);
    EXPECT_EQ(parse_ncu_number("-3.5"), -3.5);
    EXPECT_EQ(parse_ncu_number(" 29 "), 29.0);
    EXPECT_EQ(parse_ncu_number("0"), 0.0);
    for (const char* none : {"no data", "n/a", "(!) n/a", "", "  ", "(128, 1, 1)", "PolicySpread", "No-CC", "inf", "nan",
                             "1,2", "12,34,567", "1,234,", ",123", "1.5x"})
        EXPECT_FALSE(parse_ncu_number(none).has_value()) << "'" << none << "'";
}

TEST(NcuUnitTest, TimeBytesRatesFrequencies) {
    struct row {
        double in;
        const char* unit;
        double out;
        const char* base;
    };
    const row rows[] = {
        {2.64096, "ms", 2640960.0, "ns"},     {1.5, "msecond", 1.5e6, "ns"},   {3, "us", 3000, "ns"},
        {3, "usecond", 3000, "ns"},           {7, "ns", 7, "ns"},              {2, "nsecond", 2, "ns"},
        {1.5, "s", 1.5e9, "ns"},              {1, "second", 1e9, "ns"},        {1.082299, "Gbyte", 1.082299e9, "byte"},
        {11.79648, "Mbyte", 11.79648e6, "byte"}, {32.768, "Kbyte", 32768, "byte"}, {2, "Tbyte", 2e12, "byte"},
        {5, "byte", 5, "byte"},               {1, "KiB", 1024, "byte"},        {1, "MiB", 1048576, "byte"},
        {318.02593, "Gbyte/s", 318.02593e9, "byte/s"}, {4.2, "Tbyte/s", 4.2e12, "byte/s"},
        {8, "Mbyte/s", 8e6, "byte/s"},        {9, "Kbyte/s", 9e3, "byte/s"},   {8.97e11, "byte/second", 8.97e11, "byte/s"},
        {3.199433, "Ghz", 3.199433e9, "hz"},  {1.2, "Mhz", 1.2e6, "hz"},      {5, "Khz", 5e3, "hz"},
        {7, "hz", 7, "hz"},                   {1.556, "cycle/nsecond", 1.556e9, "hz"},
        {1.024, "Kbyte/block", 1024, "byte/block"}, {0, "byte/block", 0, "byte/block"},
        {1.591, "%/Kbyte", 1.591e-3, "%/byte"}, {29, "register/thread", 29, "register/thread"},
        {67.27, "%", 67.27, "%"},             {4, "", 4, ""},                  {132, "SM", 132, "SM"},
        {16, "block", 16, "block"},           {5e6, "cycle", 5e6, "cycle"},    {44.7, "inst", 44.7, "inst"},
    };
    for (const auto& r : rows) {
        const unit_value u = normalise_unit(r.in, r.unit);
        EXPECT_TRUE(u.unit_known) << r.unit;
        EXPECT_EQ(u.unit, r.base) << r.unit;
        EXPECT_NEAR(u.value, r.out, std::abs(r.out) * 1e-12) << r.unit;
    }
}

TEST(NcuUnitTest, UnknownUnitKeepsValueAndSpelling) {
    for (const char* unit : {"furlong", "Gbyte/fortnight/s", "warp per moon", "/s"}) {
        const unit_value u = normalise_unit(12.5, unit);
        EXPECT_FALSE(u.unit_known) << unit;
        EXPECT_EQ(u.unit, unit);
        EXPECT_EQ(u.value, 12.5);
    }
}

TEST(NcuRawCsvTest, RecordedH200CaptureInBaseUnits) {
    const auto t = parse_ncu_raw_csv(read_text(data_path(v0_raw_name)), v0_raw_name);
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_TRUE(t.has_units_row);
    EXPECT_EQ(t.metric_names.size(), 610u - 11u);
    const ncu_row& r = t.rows[0];
    EXPECT_EQ(r.line, 3u);
    EXPECT_EQ(r.id, "0");
    EXPECT_EQ(r.kernel_name,
              "<unnamed>::fwd_kernel(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, float *, int, int, float)");
    EXPECT_EQ(r.grid_size, "(128, 1, 1)");
    EXPECT_EQ(r.block_size, "(128, 1, 1)");
    EXPECT_EQ(r.cc, "9.0");
    EXPECT_EQ(r.process_name, "kloop-runner-cuda");
    // The capture's units are not base units: ms, Gbyte/s, Kbyte/block.
    const metric_value* dur = r.find("gpu__time_duration.sum");
    ASSERT_NE(dur, nullptr);
    EXPECT_EQ(dur->raw_unit, "ms");
    EXPECT_EQ(dur->unit, "ns");
    EXPECT_DOUBLE_EQ(*dur->number, 2640960.0);
    EXPECT_DOUBLE_EQ(*r.get_number("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"), 67.273797);
    EXPECT_DOUBLE_EQ(*r.get_number("dram__bytes.sum.per_second"), 318.02593e9);
    EXPECT_EQ(r.find("dram__bytes.sum.per_second")->unit, "byte/s");
    EXPECT_DOUBLE_EQ(*r.get_number("launch__shared_mem_per_block"), 1024.0);
    EXPECT_EQ(r.find("launch__shared_mem_per_block")->unit, "byte/block");
    EXPECT_EQ(*r.get_number("launch__registers_per_thread"), 29.0);
    EXPECT_EQ(*r.get_number("launch__grid_size"), 128.0);
    EXPECT_EQ(*r.get_number("device__attribute_l2_cache_size"), 62914560.0);  // "62,914,560"
    // Text cells and "no data".
    EXPECT_EQ(r.get_text("device__attribute_display_name"), "NVIDIA H200");
    EXPECT_FALSE(r.get_number("device__attribute_display_name").has_value());
    EXPECT_EQ(r.get_text("derived__local_spilling_requests_pct"), "no data");
    EXPECT_FALSE(r.get_number("derived__local_spilling_requests_pct").has_value());
    // Absent metric.
    EXPECT_EQ(r.find("dram__bytes_read.sum"), nullptr);
    EXPECT_FALSE(r.get_number("dram__bytes_read.sum").has_value());
    EXPECT_EQ(r.get_text("dram__bytes_read.sum"), "");
}

TEST(NcuRawCsvTest, CrlfLineEndingsParseTheSame) {
    std::string text = read_text(data_path(v0_raw_name));
    std::string crlf;
    for (char c : text) {
        if (c == '\n') crlf += '\r';
        crlf += c;
    }
    const auto a = parse_ncu_raw_csv(text, "lf.csv");
    const auto b = parse_ncu_raw_csv("==PROF== note\r\n" + crlf, "crlf.csv");
    ASSERT_EQ(b.rows.size(), 1u);
    EXPECT_EQ(b.metric_names, a.metric_names);
    EXPECT_EQ(b.rows[0].line, 4u);
    EXPECT_EQ(b.rows[0].kernel_name, a.rows[0].kernel_name);
    EXPECT_EQ(b.rows[0].get_number("gpu__time_duration.sum"), a.rows[0].get_number("gpu__time_duration.sum"));
    EXPECT_EQ(b.rows[0].get_text("launch__tpc_enabled"), "all");
}

TEST(NcuRawCsvTest, SkipsProfilerAndProgramLinesBeforeTheHeader) {
    const std::string body = make_raw_csv({{"gpu__time_duration.sum", "nsecond"}}, {{"k", {{"gpu__time_duration.sum", "1,421,984"}}}});
    const std::string text = "==PROF== Connected to process 905\nprogram says \"hello, world\n==WARNING== Note: Running with "
                             "unmodified GPU clocks\n" + body;
    const auto t = parse_ncu_raw_csv(text, "mixed.csv");
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_EQ(t.rows[0].line, 6u);  // 3 skipped lines, header, units
    EXPECT_EQ(*t.rows[0].get_number("gpu__time_duration.sum"), 1421984.0);
}

TEST(NcuRawCsvTest, ColumnsByNameNotPosition) {
    // Same facts, ID columns and metrics in another order.
    const std::string text =
        "\"Kernel Name\",\"b.metric\",\"ID\",\"a.metric\"\n"
        "\"\",\"ms\",\"\",\"Kbyte\"\n"
        "\"my_kernel(int, float)\",\"1.5\",\"7\",\"2\"\n";
    const auto t = parse_ncu_raw_csv(text, "order.csv");
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_EQ(t.metric_names, (std::vector<std::string>{"b.metric", "a.metric"}));
    EXPECT_EQ(t.rows[0].id, "7");
    EXPECT_EQ(t.rows[0].kernel_name, "my_kernel(int, float)");
    EXPECT_EQ(t.rows[0].grid_size, "");  // absent ID column
    EXPECT_EQ(*t.rows[0].get_number("b.metric"), 1.5e6);
    EXPECT_EQ(*t.rows[0].get_number("a.metric"), 2000.0);
}

TEST(NcuRawCsvTest, SeveralKernelsAndNoUnitsRow) {
    const std::string with_units = make_raw_csv({{"x", "us"}}, {{"a", {{"x", "1"}}}, {"b", {{"x", "2"}}}, {"c", {}}});
    const auto t = parse_ncu_raw_csv(with_units, "three.csv");
    ASSERT_EQ(t.rows.size(), 3u);
    EXPECT_EQ(t.rows[1].kernel_name, "b");
    EXPECT_EQ(*t.rows[1].get_number("x"), 2000.0);
    EXPECT_FALSE(t.rows[2].get_number("x").has_value());  // "n/a"
    EXPECT_EQ(t.rows[2].get_text("x"), "n/a");

    const std::string no_units = "\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"a\",\"1,000\"\n";
    const auto u = parse_ncu_raw_csv(no_units, "nounits.csv");
    EXPECT_FALSE(u.has_units_row);
    ASSERT_EQ(u.rows.size(), 1u);
    EXPECT_EQ(*u.rows[0].get_number("x"), 1000.0);
}

TEST(NcuRawCsvTest, HeaderWithoutKernelsIsEmpty) {
    const auto t = parse_ncu_raw_csv(make_raw_csv({{"x", "ns"}}, {}), "empty.csv");
    EXPECT_TRUE(t.rows.empty());
    EXPECT_TRUE(t.has_units_row);
}

TEST(NcuRawCsvTest, GarbageAndNonRawInputsAreClearErrors) {
    EXPECT_NE(csv_error_of([] { (void)parse_ncu_raw_csv("", "a.csv"); }).find("no header row starting with \"ID\""),
              std::string::npos);
    EXPECT_NE(csv_error_of([] { (void)parse_ncu_raw_csv("hello world\nnot csv at all\n", "b.csv"); }).find("b.csv"),
              std::string::npos);
    EXPECT_NE(csv_error_of([] {
                  (void)parse_ncu_raw_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", "c.csv");
              }).find("no header row"),
              std::string::npos);
    // The details page is a different table.
    const std::string details = read_text(data_path(v0_details_name));
    EXPECT_NE(csv_error_of([&] { (void)parse_ncu_raw_csv(details, v0_details_name); }).find("details page"),
              std::string::npos);
    // Required ID column missing.
    const std::string msg = csv_error_of([] { (void)parse_ncu_raw_csv("\"ID\",\"x\"\n\"0\",\"1\"\n", "d.csv"); });
    EXPECT_NE(msg.find("column 'Kernel Name'"), std::string::npos) << msg;
    // Duplicate column.
    EXPECT_NE(csv_error_of([] { (void)parse_ncu_raw_csv("\"ID\",\"Kernel Name\",\"x\",\"x\"\n", "e.csv"); })
                  .find("column 'x': appears twice"),
              std::string::npos);
}

TEST(NcuRawCsvTest, RaggedRowsAndMixedInOutputNameTheLine) {
    std::string text = make_raw_csv({{"x", "ns"}, {"y", "ns"}}, {{"a", {{"x", "1"}, {"y", "2"}}}});
    const std::string ragged = text + "\"1\",\"42\",\"p\",\"h\",\"b\",\"1\",\"13\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"5\"\n";
    std::string msg = csv_error_of([&] { (void)parse_ncu_raw_csv(ragged, "r.csv"); });
    EXPECT_NE(msg.find("r.csv:4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected 13 fields"), std::string::npos) << msg;

    const std::string mixed = text + "==PROF== Disconnected from process 905\n";
    msg = csv_error_of([&] { (void)parse_ncu_raw_csv(mixed, "m.csv"); });
    EXPECT_NE(msg.find("m.csv:4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("program's own output"), std::string::npos) << msg;

    // A truncated file: the last quoted cell never closes.
    const std::string truncated = text.substr(0, text.size() - 3);
    msg = csv_error_of([&] { (void)parse_ncu_raw_csv(truncated, "t.csv"); });
    EXPECT_NE(msg.find("unterminated"), std::string::npos) << msg;
}

TEST(NcuRawCsvTest, ErrorIsAUsageErrorWithFields) {
    try {
        (void)parse_ncu_raw_csv("\"ID\",\"Kernel Name\",\"x\",\"x\"\n", "dup.csv");
        FAIL() << "no throw";
    } catch (const ncu_csv_error& e) {
        EXPECT_EQ(e.get_source(), "dup.csv");
        EXPECT_EQ(e.get_line(), 1u);
        EXPECT_EQ(e.get_column(), "x");
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
    }
}
