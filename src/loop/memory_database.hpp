// kloop loop: opening the strategy memory's SQLite file, shared by its two tables' owners.
//
// Responsibility: one way to open the database behind loop/strategy_memory (iterations) and
// loop/tune_memory (tune points): read-write, created when missing (its folder too), a 30 s busy
// timeout, WAL switched on (retried while another process holds the moment of exclusive access
// it needs; the rollback journal still works when it never comes) and synchronous=NORMAL; and
// one way to run a statement whose failure names the file and the statement. Errors are
// kloop::usage_error (exit 2): a database kloop cannot open is the user's file to fix.
#pragma once

#include <filesystem>
#include <string_view>

struct sqlite3;

namespace kloop::loop {

// `purpose` completes "cannot open the strategy memory '<path>'<purpose>: <why>".
[[nodiscard]] sqlite3* open_memory_database(const std::filesystem::path& path, std::string_view purpose = {});

void exec_memory_sql(sqlite3* db, const std::filesystem::path& path, const char* sql);

// After a failed set-up: rolls back an open transaction, closes `db` and sets it to null.
void abandon_memory_database(sqlite3*& db) noexcept;

}  // namespace kloop::loop
