// kloop loop: the strategy memory's SQLite file, opened and written (see memory_database.hpp).
#include "loop/memory_database.hpp"

#include <chrono>
#include <sqlite3.h>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;

sqlite3* open_memory_database(const fs::path& path, std::string_view purpose) {
    platform::ensure_directory(fs::absolute(path).parent_path());
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        std::string why = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        throw usage_error(fmt::format("cannot open the strategy memory '{}'{}: {}", path.string(), purpose, why));
    }
    sqlite3_busy_timeout(db, 30000);
    // Switching to WAL needs a moment of exclusive access; retry while another process holds it.
    for (int attempt = 0;; ++attempt) {
        char* msg = nullptr;
        const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL;", nullptr, nullptr, &msg);
        sqlite3_free(msg);
        if (rc == SQLITE_OK) break;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt > 300) break;  // rollback journal still works
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    try {
        exec_memory_sql(db, path, "PRAGMA synchronous=NORMAL;");
    } catch (...) {
        sqlite3_close(db);
        throw;
    }
    return db;
}

void exec_memory_sql(sqlite3* db, const fs::path& path, const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
        std::string why = msg ? msg : sqlite3_errmsg(db);
        sqlite3_free(msg);
        throw usage_error(fmt::format("strategy memory '{}': {} (while running '{}')", path.string(), why, sql));
    }
}

void abandon_memory_database(sqlite3*& db) noexcept {
    if (db == nullptr) return;
    sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    db = nullptr;
}

}  // namespace kloop::loop
