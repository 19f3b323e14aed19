// kloop loop: tune memory in SQLite (see tune_memory.hpp).
#include "loop/tune_memory.hpp"

#include <sqlite3.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "loop/memory_database.hpp"
#include "platform/file_io.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;

tune_memory::tune_memory(fs::path db) : m_path(std::move(db)) {
    m_db = open_memory_database(m_path, " for the tune points");
    try {
        exec("BEGIN IMMEDIATE;");
        exec("CREATE TABLE IF NOT EXISTS tune_points("
             " tune_id TEXT NOT NULL, point INTEGER NOT NULL, run_id TEXT NOT NULL, iteration INTEGER NOT NULL,"
             " op TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, shape_set TEXT NOT NULL,"
             " candidate TEXT NOT NULL, config_json TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,"
             " speedup REAL, ci_low REAL, ci_high REAL, recorded_at TEXT NOT NULL,"
             " PRIMARY KEY (tune_id, point));");
        exec("CREATE INDEX IF NOT EXISTS tune_points_by_key ON tune_points(op, backend, device, shape_set);");
        exec("COMMIT;");
    } catch (...) {
        abandon_memory_database(m_db);
        throw;
    }
}

tune_memory::~tune_memory() {
    if (m_db != nullptr) sqlite3_close(m_db);
}

void tune_memory::exec(const char* sql) { exec_memory_sql(m_db, m_path, sql); }

void tune_memory::record(const tune_point_row& row) {
    exec("BEGIN IMMEDIATE;");
    sqlite3_stmt* st = nullptr;
    const char* sql =
        "INSERT OR REPLACE INTO tune_points(tune_id, point, run_id, iteration, op, backend, device, shape_set, candidate,"
        " config_json, status, reason, speedup, ci_low, ci_high, recorded_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16);";
    int rc = sqlite3_prepare_v2(m_db, sql, -1, &st, nullptr);
    if (rc == SQLITE_OK) {
        int i = 0;
        const auto text = [&](const std::string& s) { sqlite3_bind_text(st, ++i, s.c_str(), -1, SQLITE_TRANSIENT); };
        const auto real = [&](const std::optional<double>& v) {
            if (v) sqlite3_bind_double(st, ++i, *v);
            else sqlite3_bind_null(st, ++i);
        };
        text(row.tune_id);
        sqlite3_bind_int(st, ++i, row.point);
        text(row.run_id);
        sqlite3_bind_int(st, ++i, row.iteration);
        for (const auto* s : {&row.key.op, &row.key.backend, &row.key.device, &row.key.shape_set, &row.candidate,
                              &row.config_json, &row.status, &row.reason})
            text(*s);
        for (const auto* v : {&row.speedup, &row.ci_low, &row.ci_high}) real(*v);
        text(row.recorded_at);
        rc = sqlite3_step(st);
    }
    const std::string why = sqlite3_errmsg(m_db);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        sqlite3_exec(m_db, "ROLLBACK;", nullptr, nullptr, nullptr);
        throw usage_error(fmt::format("strategy memory '{}': cannot record a tune point: {}", m_path.string(), why));
    }
    exec("COMMIT;");
}

int tune_memory::count_points(const std::string& run_id) {
    sqlite3_stmt* st = nullptr;
    int n = 0;
    if (sqlite3_prepare_v2(m_db, "SELECT COUNT(*) FROM tune_points WHERE run_id = ?1;", -1, &st, nullptr) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, run_id.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

}  // namespace kloop::loop
