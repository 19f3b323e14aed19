// kloop loop: strategy memory — every iteration of every loop on this machine, in SQLite.
//
// Responsibility: remember which strategies helped, so a loop does not retry what failed. One
// database file shared by all runs (default `platform::kloop_home()/memory.sqlite`, i.e.
// $KLOOP_HOME, else $XDG_DATA_HOME/kloop, else ~/.local/share/kloop). Rows are keyed by
// (run_id, iteration) and carry op, backend, device and shape set (the memory key), the
// fingerprint (loop/fingerprint) and tags, the status and the A/B numbers.
// Per key and fingerprint:  blocked   = rejected at least once, or negative at least twice;
//                           preferred = positive at least once and not blocked.
// Concurrency and crashes: WAL journal, busy_timeout 30 s, every write one BEGIN IMMEDIATE
// transaction; record() is idempotent (INSERT OR REPLACE on the key), so a command killed
// between writing an iteration and recording it re-records it next time (loop/loop_session).
// Schema (meta.schema_version = 2):
//   meta(key TEXT PRIMARY KEY, value TEXT)
//   iterations(run_id, iteration, op, backend, device, shape_set, fingerprint, tags, status,
//              reason, speedup, ci_low, ci_high, workspace, recorded_at, override_reason,
//              PRIMARY KEY (run_id, iteration))
// override_reason (version 2): the proposal's written reason to retry a blocked strategy, or "".
// A version-1 database is migrated in place when opened (ALTER TABLE ADD COLUMN, inside the
// opening transaction); a newer version than this kloop's is refused.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace kloop::loop {

inline constexpr int memory_schema_version = 2;

struct memory_key {
    std::string op;
    std::string backend;
    std::string device;
    std::string shape_set;
};

struct memory_row {
    std::string run_id;
    int iteration = 0;
    memory_key key;
    std::string fingerprint;
    std::vector<std::string> tags;       // normalised
    std::string status;                  // iteration_status spelling
    std::string reason;
    std::optional<double> speedup, ci_low, ci_high;
    std::string workspace;
    std::string recorded_at;
    std::string override_reason;         // why a blocked strategy was retried; "" otherwise
};

struct fingerprint_summary {
    std::string fingerprint;
    std::vector<std::string> tags;
    int positive = 0;
    int negative = 0;
    int rejected = 0;
    int runs = 0;                        // distinct loops that tried it
    [[nodiscard]] bool is_blocked() const { return rejected >= 1 || negative >= 2; }
    [[nodiscard]] bool is_preferred() const { return positive >= 1 && !is_blocked(); }
};

// $KLOOP_HOME/memory.sqlite (see platform::kloop_home()).
[[nodiscard]] std::filesystem::path default_memory_path();

class strategy_memory {
public:
    // Opens (creating the file, its directory and the schema when missing). Throws
    // kloop::usage_error naming the path on failure or on a newer schema_version.
    explicit strategy_memory(std::filesystem::path db);
    ~strategy_memory();
    strategy_memory(const strategy_memory&) = delete;
    strategy_memory& operator=(const strategy_memory&) = delete;

    void record(const memory_row& row);
    [[nodiscard]] bool has(const std::string& run_id, int iteration);
    [[nodiscard]] std::vector<fingerprint_summary> summarise(const memory_key& key);
    [[nodiscard]] std::optional<fingerprint_summary> lookup(const memory_key& key, const std::string& fingerprint);
    [[nodiscard]] std::size_t count_rows();
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

private:
    void exec(const char* sql);
    std::filesystem::path m_path;
    sqlite3* m_db = nullptr;
};

}  // namespace kloop::loop
