// Helpers of the src/profile unit tests: the recorded captures and synthetic raw-page CSVs.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kloop::profile::testing {

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open test data '" + path + "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::string data_path(const std::string& name) { return std::string(KLOOP_TEST_SOURCE_DIR) + "/tests/data/ncu/" + name; }

inline const std::string v0_raw_name = "v0_fwd_r16384_h8192_targeted.raw.csv";
inline const std::string v0_details_name = "v0_fwd_r16384_h8192_targeted.details.csv";

// One kernel row of a synthetic capture: metric name → cell text as ncu would write it.
struct synth_kernel {
    std::string name = "k";
    std::map<std::string, std::string> values;
    std::string grid = "(1024, 1, 1)";
    std::string block = "(256, 1, 1)";
};

inline std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

// A raw page: the 11 ID columns, then `metrics` (name, unit) in the given order; a metric a
// kernel does not set is written as "n/a".
inline std::string make_raw_csv(const std::vector<std::pair<std::string, std::string>>& metrics,
                                const std::vector<synth_kernel>& kernels) {
    const std::vector<std::string> ids{"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                                       "Stream", "Block Size", "Grid Size", "Device", "CC"};
    std::string out;
    auto line = [&](const std::vector<std::string>& cells) {
        for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + quote(cells[i]);
        out += "\n";
    };
    std::vector<std::string> header(ids), units(ids.size());
    for (const auto& [m, u] : metrics) header.push_back(m), units.push_back(u);
    line(header);
    line(units);
    for (std::size_t k = 0; k < kernels.size(); ++k) {
        const auto& kr = kernels[k];
        std::vector<std::string> row{std::to_string(k), "42", "kloop-runner-cuda", "127.0.0.1", kr.name, "1", "13",
                                     kr.block, kr.grid, "0", "9.0"};
        for (const auto& [m, u] : metrics) {
            const auto it = kr.values.find(m);
            row.push_back(it == kr.values.end() ? "n/a" : it->second);
        }
        line(row);
    }
    return out;
}

}  // namespace kloop::profile::testing
