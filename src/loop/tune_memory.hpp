// kloop loop: tune memory — every point of every `kloop tune`, in the strategy memory's database.
//
// Responsibility: one table of its own, `tune_points`, created on demand in the same SQLite file
// as the strategy memory (loop/strategy_memory: the default path or --memory-db /
// $KLOOP_MEMORY_DB), opened with the same discipline: WAL journal, busy_timeout 30 s, every write
// one BEGIN IMMEDIATE transaction, INSERT OR REPLACE on the key so a re-recorded point is one row.
// The strategy memory's own tables and schema_version are not touched.
//   tune_points(tune_id, point, run_id, iteration, op, backend, device, shape_set, candidate,
//               config_json, status, reason, speedup, ci_low, ci_high, recorded_at,
//               PRIMARY KEY (tune_id, point))
// tune_id names one `kloop tune` run (its start time and pid); iteration is the loop iteration
// the tune ends in; speedup and its interval are the point's race against its incumbent.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "loop/strategy_memory.hpp"

struct sqlite3;

namespace kloop::loop {

struct tune_point_row {
    std::string tune_id;
    int point = 0;
    std::string run_id;
    int iteration = 0;
    memory_key key;                      // op, backend, device, shape set: the strategy memory's
    std::string candidate;
    std::string config_json;
    std::string status;                  // tune_point_status spelling
    std::string reason;
    std::optional<double> speedup, ci_low, ci_high;
    std::string recorded_at;
};

class tune_memory {
public:
    // Opens (creating the file, its directory and the table when missing). Throws
    // kloop::usage_error naming the path on failure.
    explicit tune_memory(std::filesystem::path db);
    ~tune_memory();
    tune_memory(const tune_memory&) = delete;
    tune_memory& operator=(const tune_memory&) = delete;

    void record(const tune_point_row& row);
    // Points recorded by every tune of one loop (contract run_id).
    [[nodiscard]] int count_points(const std::string& run_id);

private:
    void exec(const char* sql);
    std::filesystem::path m_path;
    sqlite3* m_db = nullptr;
};

}  // namespace kloop::loop
