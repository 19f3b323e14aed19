// Unit under test: loop/workspace — versioned records, iteration listing, staging cleanup, lock.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/error.hpp"
#include "loop/workspace.hpp"
#include "platform/file_io.hpp"

using namespace kloop;
using namespace kloop::loop;
namespace fs = std::filesystem;

TEST(WorkspaceTest, RecordsCarryTheHeaderAndAreChecked) {
    platform::scoped_temp_dir d("kloop-ws");
    const auto f = d.path() / "a" / "x.json";
    write_record(f, "kloop.test", {{"value", 7}}, {{"kloop", "init"}, {}});
    const auto j = read_record(f, "kloop.test");
    EXPECT_EQ(j.at("schema_version"), record_schema_version);
    EXPECT_EQ(j.at("value"), 7);
    EXPECT_EQ(j.at("command_line"), (std::vector<std::string>{"kloop", "init"}));
    EXPECT_TRUE(j.at("kloop").contains("version"));
    EXPECT_TRUE(j.at("repo").contains("dirty"));
    EXPECT_THROW((void)read_record(f, "kloop.other"), usage_error);
    auto bad = j;
    bad["schema_version"] = record_schema_max + 1;
    platform::write_file_atomic(f, bad.dump());
    try {
        (void)read_record(f, "kloop.test");
        FAIL();
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("schema_version"), std::string::npos);
    }
    platform::write_file_atomic(f, "{\"schema_version\": 1, ");  // half a file
    EXPECT_THROW((void)read_record(f, "kloop.test"), usage_error);
}

TEST(WorkspaceTest, IterationsMustBeContiguous) {
    platform::scoped_temp_dir d("kloop-ws");
    workspace ws(d.path());
    EXPECT_TRUE(ws.list_iterations().empty());
    fs::create_directories(ws.iteration_dir(0));
    fs::create_directories(ws.iteration_dir(1));
    fs::create_directories(d.path() / ".staging-v2-123");
    EXPECT_EQ(ws.list_iterations(), (std::vector<int>{0, 1}));
    // Interrupted atomic writes, at the top and one level down; a user's files stay.
    for (const auto& f : {d.path() / ".OPT_LOG.md.tmp-Ab12Cd", ws.iteration_dir(1) / ".iteration_summary.md.tmp-x1y2z3",
                          d.path() / ".notes.tmp-mine", d.path() / "notes.md"})
        platform::write_file_atomic(f, "x");
    ws.remove_stale_staging();
    EXPECT_FALSE(fs::exists(d.path() / ".staging-v2-123"));
    EXPECT_FALSE(fs::exists(d.path() / ".OPT_LOG.md.tmp-Ab12Cd"));
    EXPECT_FALSE(fs::exists(ws.iteration_dir(1) / ".iteration_summary.md.tmp-x1y2z3"));
    EXPECT_TRUE(fs::exists(d.path() / ".notes.tmp-mine"));
    EXPECT_TRUE(fs::exists(d.path() / "notes.md"));
    fs::create_directories(ws.iteration_dir(3));
    EXPECT_THROW((void)ws.list_iterations(), usage_error);
}

TEST(WorkspaceTest, OneWriterAtATime) {
    platform::scoped_temp_dir d("kloop-ws");
    workspace ws(d.path());
    {
        workspace_lock a(ws);
        EXPECT_TRUE(a.is_held());
        EXPECT_THROW(workspace_lock b(ws), usage_error);
        workspace_lock c(ws, std::nothrow);
        EXPECT_FALSE(c.is_held());
    }
    workspace_lock again(ws);
    EXPECT_TRUE(again.is_held());
}

TEST(WorkspaceTest, ARefusedWriterIsToldTheHoldersPid) {
    platform::scoped_temp_dir d("kloop-ws");
    workspace ws(d.path());
    workspace_lock held(ws);
    try {
        workspace_lock second(ws);
        ADD_FAILURE() << "a second writer took the lock";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(::getpid()) + ")"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(ws.root().string()), std::string::npos) << e.what();
    }
}

TEST(WorkspaceTest, FindsTheSingleWorkspace) {
    platform::scoped_temp_dir d("kloop-ws");
    platform::git_state repo;
    repo.available = true;
    repo.toplevel = d.path().string();
    EXPECT_THROW((void)find_workspace(std::nullopt, repo), usage_error);
    platform::write_file_atomic(d.path() / "profile" / "op-opt" / "contract.json", "{}");
    EXPECT_EQ(find_workspace(std::nullopt, repo), d.path() / "profile" / "op-opt");
    platform::write_file_atomic(d.path() / "profile" / "two-opt" / "contract.json", "{}");
    EXPECT_THROW((void)find_workspace(std::nullopt, repo), usage_error);
    EXPECT_EQ(default_workspace_root(repo, "/elsewhere", "gla"), d.path() / "profile" / "gla-opt");
}
