// kloop loop: strategy memory in SQLite (see strategy_memory.hpp).
#include "loop/strategy_memory.hpp"

#include <map>
#include <set>
#include <sqlite3.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "loop/memory_database.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;

namespace {

std::string join_tags(const std::vector<std::string>& tags) {
    std::string s;
    for (const auto& t : tags) s += (s.empty() ? "" : ",") + t;
    return s;
}
std::vector<std::string> split_tags(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size() && !s.empty()) {
        auto comma = s.find(',', start);
        out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// A prepared statement, finalised on scope exit.
class statement {
public:
    statement(sqlite3* db, const char* sql, const fs::path& path) {
        if (sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) != SQLITE_OK)
            throw internal_error(fmt::format("strategy memory '{}': cannot prepare '{}': {}", path.string(), sql, sqlite3_errmsg(db)));
    }
    ~statement() { sqlite3_finalize(m_stmt); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    sqlite3_stmt* get() { return m_stmt; }
    void bind(int i, const std::string& s) { sqlite3_bind_text(m_stmt, i, s.c_str(), -1, SQLITE_TRANSIENT); }
    void bind(int i, int v) { sqlite3_bind_int(m_stmt, i, v); }
    void bind(int i, const std::optional<double>& v) {
        if (v) sqlite3_bind_double(m_stmt, i, *v);
        else sqlite3_bind_null(m_stmt, i);
    }
    std::string text(int col) {
        const auto* p = sqlite3_column_text(m_stmt, col);
        return p ? reinterpret_cast<const char*>(p) : "";
    }

private:
    sqlite3_stmt* m_stmt = nullptr;
};

}  // namespace

fs::path default_memory_path() { return platform::kloop_home() / "memory.sqlite"; }

strategy_memory::strategy_memory(fs::path db) : m_path(std::move(db)) {
    m_db = open_memory_database(m_path);
    exec("BEGIN IMMEDIATE;");
    try {
        exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);");
        exec("CREATE TABLE IF NOT EXISTS iterations("
             " run_id TEXT NOT NULL, iteration INTEGER NOT NULL,"
             " op TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, shape_set TEXT NOT NULL,"
             " fingerprint TEXT NOT NULL, tags TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,"
             " speedup REAL, ci_low REAL, ci_high REAL, workspace TEXT NOT NULL, recorded_at TEXT NOT NULL,"
             " override_reason TEXT NOT NULL DEFAULT '',"
             " PRIMARY KEY (run_id, iteration));");
        exec("CREATE INDEX IF NOT EXISTS iterations_by_key ON iterations(op, backend, device, shape_set, fingerprint);");
        exec(fmt::format("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '{}');", memory_schema_version).c_str());
        statement q(m_db, "SELECT value FROM meta WHERE key = 'schema_version';", m_path);
        int version = 0;
        if (sqlite3_step(q.get()) == SQLITE_ROW) version = std::stoi(q.text(0));
        if (version > memory_schema_version || version < 1)
            throw usage_error(fmt::format("strategy memory '{}' has schema_version {}; this kloop reads 1..{}",
                                          m_path.string(), version, memory_schema_version));
        if (version == 1) {  // version 2 adds the override reason of a retried blocked strategy
            exec("ALTER TABLE iterations ADD COLUMN override_reason TEXT NOT NULL DEFAULT '';");
            exec(fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version';", memory_schema_version).c_str());
        }
        exec("COMMIT;");
    } catch (...) {
        abandon_memory_database(m_db);
        throw;
    }
}

strategy_memory::~strategy_memory() {
    if (m_db != nullptr) sqlite3_close(m_db);
}

void strategy_memory::exec(const char* sql) { exec_memory_sql(m_db, m_path, sql); }

void strategy_memory::record(const memory_row& row) {
    exec("BEGIN IMMEDIATE;");
    try {
        statement s(m_db,
                    "INSERT OR REPLACE INTO iterations(run_id, iteration, op, backend, device, shape_set, fingerprint, tags,"
                    " status, reason, speedup, ci_low, ci_high, workspace, recorded_at, override_reason)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16);",
                    m_path);
        s.bind(1, row.run_id);
        s.bind(2, row.iteration);
        s.bind(3, row.key.op);
        s.bind(4, row.key.backend);
        s.bind(5, row.key.device);
        s.bind(6, row.key.shape_set);
        s.bind(7, row.fingerprint);
        s.bind(8, join_tags(row.tags));
        s.bind(9, row.status);
        s.bind(10, row.reason);
        s.bind(11, row.speedup);
        s.bind(12, row.ci_low);
        s.bind(13, row.ci_high);
        s.bind(14, row.workspace);
        s.bind(15, row.recorded_at);
        s.bind(16, row.override_reason);
        if (sqlite3_step(s.get()) != SQLITE_DONE)
            throw usage_error(fmt::format("strategy memory '{}': cannot record iteration {}: {}", m_path.string(),
                                          row.iteration, sqlite3_errmsg(m_db)));
        exec("COMMIT;");
    } catch (...) {
        sqlite3_exec(m_db, "ROLLBACK;", nullptr, nullptr, nullptr);
        throw;
    }
}

bool strategy_memory::has(const std::string& run_id, int iteration) {
    statement s(m_db, "SELECT 1 FROM iterations WHERE run_id = ?1 AND iteration = ?2;", m_path);
    s.bind(1, run_id);
    s.bind(2, iteration);
    return sqlite3_step(s.get()) == SQLITE_ROW;
}

std::size_t strategy_memory::count_rows() {
    statement s(m_db, "SELECT COUNT(*) FROM iterations;", m_path);
    return sqlite3_step(s.get()) == SQLITE_ROW ? static_cast<std::size_t>(sqlite3_column_int64(s.get(), 0)) : 0;
}

std::vector<fingerprint_summary> strategy_memory::summarise(const memory_key& key) {
    statement s(m_db,
                "SELECT fingerprint, tags, status, run_id FROM iterations"
                " WHERE op = ?1 AND backend = ?2 AND device = ?3 AND shape_set = ?4 AND status != 'baseline'"
                " ORDER BY recorded_at, run_id, iteration;",
                m_path);
    s.bind(1, key.op);
    s.bind(2, key.backend);
    s.bind(3, key.device);
    s.bind(4, key.shape_set);
    std::map<std::string, fingerprint_summary> by_fp;
    std::map<std::string, std::set<std::string>> runs;
    std::vector<std::string> order;
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
        const auto fp = s.text(0);
        auto [it, fresh] = by_fp.try_emplace(fp);
        if (fresh) {
            order.push_back(fp);
            it->second.fingerprint = fp;
            it->second.tags = split_tags(s.text(1));
        }
        const auto status = s.text(2);
        if (status == "positive") ++it->second.positive;
        else if (status == "negative") ++it->second.negative;
        else if (status == "rejected") ++it->second.rejected;
        runs[fp].insert(s.text(3));
    }
    if (rc != SQLITE_DONE)
        throw usage_error(fmt::format("strategy memory '{}': cannot read: {}", m_path.string(), sqlite3_errmsg(m_db)));
    std::vector<fingerprint_summary> out;
    for (const auto& fp : order) {
        auto f = by_fp[fp];
        f.runs = static_cast<int>(runs[fp].size());
        out.push_back(std::move(f));
    }
    return out;
}

std::optional<fingerprint_summary> strategy_memory::lookup(const memory_key& key, const std::string& fingerprint) {
    for (auto& f : summarise(key))
        if (f.fingerprint == fingerprint) return f;
    return std::nullopt;
}

}  // namespace kloop::loop
