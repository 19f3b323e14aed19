// Unit under test: loop/strategy_memory — SQLite rows, blocked / preferred fingerprints,
// idempotent re-recording, and concurrent writers (threads and processes) losing nothing.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/error.hpp"
#include "loop/strategy_memory.hpp"
#include "platform/file_io.hpp"

using namespace kloop::loop;

namespace {

const memory_key key{"rmsnorm", "cpu", "Some CPU", "set1"};

memory_row row(const std::string& run, int it, const std::string& fp, const std::string& status) {
    memory_row r;
    r.run_id = run;
    r.iteration = it;
    r.key = key;
    r.fingerprint = fp;
    r.tags = {"a", "b"};
    r.status = status;
    r.reason = "because";
    r.workspace = "/ws";
    r.recorded_at = "2025-01-01T00:00:00Z";
    return r;
}

}  // namespace

TEST(StrategyMemoryTest, BlockedAndPreferred) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    strategy_memory m(dir.path() / "sub" / "memory.sqlite");
    m.record(row("r1", 0, "baseline", "baseline"));
    m.record(row("r1", 1, "pos", "positive"));
    m.record(row("r1", 2, "rej", "rejected"));
    m.record(row("r1", 3, "neg", "negative"));
    m.record(row("r2", 1, "neg", "negative"));
    m.record(row("r2", 2, "once", "negative"));
    const auto all = m.summarise(key);
    ASSERT_EQ(all.size(), 4u);  // baseline rows are not strategies
    auto find = [&](const std::string& fp) { return m.lookup(key, fp).value(); };
    EXPECT_TRUE(find("pos").is_preferred());
    EXPECT_FALSE(find("pos").is_blocked());
    EXPECT_TRUE(find("rej").is_blocked());
    EXPECT_TRUE(find("neg").is_blocked());
    EXPECT_EQ(find("neg").runs, 2);
    EXPECT_FALSE(find("once").is_blocked());
    EXPECT_FALSE(find("once").is_preferred());
    EXPECT_EQ(find("pos").tags, (std::vector<std::string>{"a", "b"}));
    // another key sees nothing
    EXPECT_TRUE(m.summarise({"rmsnorm", "cuda", "Some CPU", "set1"}).empty());
}

TEST(StrategyMemoryTest, RecordingTwiceIsIdempotent) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    strategy_memory m(dir.path() / "memory.sqlite");
    m.record(row("r1", 1, "x", "negative"));
    m.record(row("r1", 1, "x", "negative"));
    EXPECT_EQ(m.count_rows(), 1u);
    EXPECT_TRUE(m.has("r1", 1));
    EXPECT_FALSE(m.has("r1", 2));
    EXPECT_FALSE(m.lookup(key, "x")->is_blocked());  // one negative, not two
}

TEST(StrategyMemoryTest, PersistsAcrossOpens) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    {
        strategy_memory m(dir.path() / "memory.sqlite");
        m.record(row("r1", 1, "x", "rejected"));
    }
    strategy_memory m(dir.path() / "memory.sqlite");
    EXPECT_TRUE(m.lookup(key, "x")->is_blocked());
}

TEST(StrategyMemoryTest, RefusesANewerSchema) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    const auto db = dir.path() / "memory.sqlite";
    { strategy_memory m(db); }
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, "UPDATE meta SET value = '99' WHERE key = 'schema_version';", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
    try {
        strategy_memory m(db);
        FAIL();
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("schema_version 99"), std::string::npos);
    }
}

namespace {

// One column of every iterations row, in (run_id, iteration) order, read with plain SQLite.
std::vector<std::string> column(const std::filesystem::path& db, const std::string& sql) {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    std::vector<std::string> out;
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(
                  h, sql.c_str(),
                  [](void* v, int, char** cols, char**) {
                      static_cast<std::vector<std::string>*>(v)->push_back(cols[0] ? cols[0] : "NULL");
                      return 0;
                  },
                  &out, &err),
              SQLITE_OK)
        << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(h);
    return out;
}

}  // namespace

TEST(StrategyMemoryTest, RecordsTheOverrideReason) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    const auto db = dir.path() / "memory.sqlite";
    {
        strategy_memory m(db);
        auto r = row("r1", 1, "x", "negative");
        r.override_reason = "the old failure was a harness bug";
        m.record(r);
        m.record(row("r1", 2, "y", "negative"));
    }
    EXPECT_EQ(column(db, "SELECT override_reason FROM iterations ORDER BY iteration;"),
              (std::vector<std::string>{"the old failure was a harness bug", ""}));
    EXPECT_EQ(column(db, "SELECT value FROM meta WHERE key = 'schema_version';"), std::vector<std::string>{"2"});
}

// A database written by a kloop of schema version 1 (no override_reason column) is migrated in
// place when opened: its rows kept, the column added, the version raised.
TEST(StrategyMemoryTest, MigratesAVersionOneDatabase) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    const auto db = dir.path() / "memory.sqlite";
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h,
                           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                           "INSERT INTO meta VALUES ('schema_version', '1');"
                           "CREATE TABLE iterations(run_id TEXT NOT NULL, iteration INTEGER NOT NULL, op TEXT NOT NULL,"
                           " backend TEXT NOT NULL, device TEXT NOT NULL, shape_set TEXT NOT NULL, fingerprint TEXT NOT NULL,"
                           " tags TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL, speedup REAL, ci_low REAL,"
                           " ci_high REAL, workspace TEXT NOT NULL, recorded_at TEXT NOT NULL, PRIMARY KEY (run_id, iteration));"
                           "INSERT INTO iterations VALUES ('old', 1, 'rmsnorm', 'cpu', 'Some CPU', 'set1', 'x', 'a,b', 'rejected',"
                           " 'gate', NULL, NULL, NULL, '/ws', '2024-01-01T00:00:00Z');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(h);
    {
        strategy_memory m(db);
        EXPECT_EQ(m.count_rows(), 1u);
        EXPECT_TRUE(m.lookup(key, "x")->is_blocked());  // the old row still counts
        auto r = row("new", 1, "x", "negative");
        r.override_reason = "retried: new tiling";
        m.record(r);
    }
    EXPECT_EQ(column(db, "SELECT value FROM meta WHERE key = 'schema_version';"), std::vector<std::string>{"2"});
    EXPECT_EQ(column(db, "SELECT override_reason FROM iterations ORDER BY run_id;"),
              (std::vector<std::string>{"retried: new tiling", ""}));
    strategy_memory again(db);  // a migrated database opens as it is
    EXPECT_EQ(again.count_rows(), 2u);
}

TEST(StrategyMemoryTest, TwoThreadsWritingAtOnceLoseNothing) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    const auto db = dir.path() / "memory.sqlite";
    constexpr int per_writer = 150;
    auto writer = [&](const std::string& run) {
        strategy_memory m(db);  // its own connection
        for (int i = 0; i < per_writer; ++i) m.record(row(run, i, "fp" + std::to_string(i % 7), i % 2 ? "negative" : "positive"));
    };
    std::thread a(writer, "ra"), b(writer, "rb");
    a.join();
    b.join();
    strategy_memory m(db);
    EXPECT_EQ(m.count_rows(), 2u * per_writer);
}

TEST(StrategyMemoryTest, TwoProcessesWritingAtOnceLoseNothing) {
    kloop::platform::scoped_temp_dir dir("kloop-mem");
    const auto db = dir.path() / "memory.sqlite";
    constexpr int per_writer = 150;
    std::vector<pid_t> kids;
    for (const char* run : {"pa", "pb", "pc"}) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int rc = 0;
            try {
                strategy_memory m(db);  // opened (and the schema created) concurrently too
                for (int i = 0; i < per_writer; ++i) m.record(row(run, i, "fp", "negative"));
            } catch (...) {
                rc = 1;
            }
            ::_exit(rc);
        }
        kids.push_back(pid);
    }
    for (pid_t k : kids) {
        int status = 0;
        ASSERT_EQ(::waitpid(k, &status, 0), k);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    strategy_memory m(db);
    EXPECT_EQ(m.count_rows(), 3u * per_writer);
    EXPECT_EQ(m.lookup(key, "fp")->negative, 3 * per_writer);
    EXPECT_EQ(m.lookup(key, "fp")->runs, 3);
}
