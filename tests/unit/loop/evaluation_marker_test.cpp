// Unit under test: loop/evaluation_marker — an evaluation whose kloop died is recorded as a
// rejection of its candidate by the next command, and its staged copy committed as the candidate
// file without touching the file or what the user staged (loop/repo_git commit_snapshot); a
// finished one leaves no mark; a mark that does not fit the workspace is not turned into an
// iteration.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "loop/evaluation_marker.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/workspace.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

using namespace kloop;
using namespace kloop::loop;
namespace fs = std::filesystem;

namespace {

class EvaluationMarkerTest : public ::testing::Test {
protected:
    platform::scoped_temp_dir m_dir{"kloop-marker-test"};
    workspace m_ws{m_dir.path()};
    fs::path m_staging;
    iteration_record m_record;
    fs::path m_candidate = m_dir.path() / "not-a-repo" / "kernel.cpp";  // outside git: nothing committed
    platform::posix_command_runner m_runner;

    std::vector<std::string> record(int next) {
        return record_abandoned_evaluations(m_ws, "toy", next, {}, m_candidate, m_runner);
    }

    std::string git(const fs::path& repo, std::vector<std::string> args) {
        platform::process_request r;
        r.argv = {"git", "-C", repo.string()};
        r.argv.insert(r.argv.end(), args.begin(), args.end());
        const auto res = m_runner.run(r);
        EXPECT_TRUE(res.succeeded()) << res.stderr_text;
        return res.stdout_text;
    }

    void SetUp() override {
        fs::create_directories(m_ws.iteration_dir(0));  // v0 exists; the marked iteration is v1
        m_staging = m_ws.make_staging_dir("v1");
        platform::write_file_atomic(m_staging / "kernel.cpp", "int candidate;\n");
        platform::write_file_atomic(m_staging / "optimization_proposal.md", "Direction: d\n");
        m_record.number = 1;
        m_record.status = iteration_status::negative;
        m_record.candidate_source = "/src/kernel.cpp";
        m_record.candidate_file = "kernel.cpp";
        m_record.candidate_sha256 = platform::sha256_file(m_staging / "kernel.cpp");
        m_record.direction = "unroll";
        m_record.tags = {"unroll"};
        m_record.fingerprint = "fp";
        m_record.vs_best = 0;
    }

    // The mark as a kloop that dies during the evaluation leaves it: written, never removed.
    void mark_and_die() {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            evaluation_marker mark(m_staging, m_record);
            ::_exit(0);  // no destructor runs, as after a SIGKILL
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ASSERT_TRUE(fs::exists(m_staging / evaluation_marker_name));
    }
};

}  // namespace

TEST_F(EvaluationMarkerTest, AFinishedEvaluationLeavesNoMark) {
    { evaluation_marker mark(m_staging, m_record); EXPECT_TRUE(fs::exists(m_staging / evaluation_marker_name)); }
    EXPECT_FALSE(fs::exists(m_staging / evaluation_marker_name));
    EXPECT_TRUE(record(1).empty());
    EXPECT_FALSE(fs::exists(m_ws.iteration_dir(1)));
}

TEST_F(EvaluationMarkerTest, TheCandidateOfADeadKloopIsRecordedAsRejected) {
    mark_and_die();
    const auto notes = record(1);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("v1: kloop (pid"), std::string::npos) << notes[0];
    const fs::path dir = m_ws.iteration_dir(1);
    ASSERT_TRUE(fs::exists(dir / "benchmark_result.json"));
    EXPECT_TRUE(fs::exists(dir / "iteration_summary.md"));
    EXPECT_TRUE(fs::exists(dir / "kernel.cpp"));
    EXPECT_TRUE(fs::exists(dir / "optimization_proposal.md"));
    EXPECT_FALSE(fs::exists(dir / evaluation_marker_name));
    EXPECT_FALSE(fs::exists(m_staging));
    const auto j = read_record(dir / "benchmark_result.json", "kloop.iteration");
    const auto r = iteration_record_from_json(j.at("iteration"));
    EXPECT_EQ(r.number, 1);
    EXPECT_EQ(r.status, iteration_status::rejected);
    EXPECT_EQ(r.rejection, rejection_kind::crash);
    EXPECT_NE(r.reason.find("died while evaluating it"), std::string::npos) << r.reason;
    EXPECT_EQ(r.candidate_sha256, m_record.candidate_sha256);
    EXPECT_EQ(r.fingerprint, "fp");
    EXPECT_FALSE(r.git.committed);
    EXPECT_NE(r.git.note.find("not in a git repository"), std::string::npos) << r.git.note;
    // Recorded once: the next command finds nothing left to record.
    EXPECT_TRUE(record(2).empty());
}

TEST_F(EvaluationMarkerTest, AMarkThatDoesNotFitIsNotRecorded) {
    mark_and_die();
    // Another iteration number: the workspace moved on since (v1 exists already).
    EXPECT_TRUE(record(2).empty());
    EXPECT_FALSE(fs::exists(m_ws.iteration_dir(2)));
    // The staged copy is not the candidate the mark names.
    platform::write_file_atomic(m_staging / "kernel.cpp", "int another;\n");
    EXPECT_TRUE(record(1).empty());
    EXPECT_FALSE(fs::exists(m_ws.iteration_dir(1)));
}

// A parallel round evaluates its siblings at once: a death leaves a mark per sibling still
// running. They are recorded in the order of their numbers; a sibling that had finished (no mark)
// gives its number to the next marked one, and the record says which number it started with.
TEST_F(EvaluationMarkerTest, MarksOfSiblingsAreRecordedInNumberOrderWithoutAGap) {
    // v1 finished before the death (its staging has no mark); v2 and v3 were running.
    const iteration_record first = m_record;
    for (int n : {3, 2}) {
        m_staging = m_ws.make_staging_dir("v" + std::to_string(n));
        platform::write_file_atomic(m_staging / "kernel.cpp", "int sibling" + std::to_string(n) + ";\n");
        m_record = first;
        m_record.number = n;
        m_record.direction = "sibling " + std::to_string(n);
        m_record.candidate_sha256 = platform::sha256_file(m_staging / "kernel.cpp");
        mark_and_die();
    }
    const auto notes = record(1);
    ASSERT_EQ(notes.size(), 2u);
    for (int n : {1, 2}) {
        const auto r = iteration_record_from_json(
            read_record(m_ws.iteration_dir(n) / "benchmark_result.json", "kloop.iteration").at("iteration"));
        EXPECT_EQ(r.number, n);
        EXPECT_EQ(r.direction, "sibling " + std::to_string(n + 1));  // v2's mark became v1, v3's v2
        EXPECT_EQ(r.status, iteration_status::rejected);
        EXPECT_NE(r.reason.find("numbered v" + std::to_string(n + 1) + " when it started"), std::string::npos) << r.reason;
        EXPECT_EQ(platform::read_file(m_ws.iteration_dir(n) / "kernel.cpp"), "int sibling" + std::to_string(n + 1) + ";\n");
    }
    EXPECT_FALSE(fs::exists(m_ws.iteration_dir(3)));
    // A mark of a number already recorded is not taken again.
    EXPECT_TRUE(record(3).empty());
}

TEST_F(EvaluationMarkerTest, TheRecordedCandidateIsCommittedAndTheFileAndTheIndexAreLeftAlone) {
    const fs::path repo = m_dir.path() / "repo";
    fs::create_directories(repo);
    m_candidate = repo / "kernel.cpp";
    git(repo, {"init", "-q"});
    git(repo, {"config", "user.email", "t@localhost"});
    git(repo, {"config", "user.name", "t"});
    platform::write_file_atomic(m_candidate, "int v0;\n");
    platform::write_file_atomic(repo / "other.txt", "a\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "start"});
    // Since the kloop died: the user wrote the next candidate and staged another change.
    platform::write_file_atomic(m_candidate, "int next;\n");
    platform::write_file_atomic(repo / "other.txt", "b\n");
    git(repo, {"add", "other.txt"});

    mark_and_die();
    ASSERT_EQ(record(1).size(), 1u);
    const auto r = iteration_record_from_json(
        read_record(m_ws.iteration_dir(1) / "benchmark_result.json", "kloop.iteration").at("iteration"));
    ASSERT_TRUE(r.git.committed) << r.git.note;
    EXPECT_EQ(r.git.commit + "\n", git(repo, {"rev-parse", "HEAD"}));
    EXPECT_EQ(git(repo, {"log", "-1", "--format=%s"}), "kloop toy v1 (rejected: crash): unroll\n");
    EXPECT_EQ(git(repo, {"show", "HEAD:kernel.cpp"}), "int candidate;\n");  // what was evaluated
    EXPECT_EQ(git(repo, {"show", "--name-only", "--format=", "HEAD"}), "kernel.cpp\n");  // only the candidate
    EXPECT_EQ(platform::read_file(m_candidate), "int next;\n");                         // the file is untouched
    // The index: kernel.cpp follows HEAD (the next candidate is an unstaged change); other.txt is
    // still staged.
    EXPECT_EQ(git(repo, {"status", "--porcelain"}), " M kernel.cpp\nM  other.txt\n");
}

TEST_F(EvaluationMarkerTest, TheRecordedCandidatesLocalFilesAreCommittedWithIt) {
    const fs::path repo = m_dir.path() / "repo";
    fs::create_directories(repo / "detail");
    m_candidate = repo / "kernel.cpp";
    git(repo, {"init", "-q"});
    git(repo, {"config", "user.email", "t@localhost"});
    git(repo, {"config", "user.name", "t"});
    platform::write_file_atomic(m_candidate, "int v0;\n");
    platform::write_file_atomic(repo / "detail" / "tile.hpp", "int tile_v0;\n");
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "start"});
    // The evaluated version staged its header; the user has since edited it for the next one.
    fs::create_directories(m_staging / "detail");
    platform::write_file_atomic(m_staging / "detail" / "tile.hpp", "int tile_candidate;\n");
    m_record.local_files = {"detail/tile.hpp"};
    platform::write_file_atomic(repo / "detail" / "tile.hpp", "int tile_next;\n");

    mark_and_die();
    ASSERT_EQ(record(1).size(), 1u);
    const auto r = iteration_record_from_json(
        read_record(m_ws.iteration_dir(1) / "benchmark_result.json", "kloop.iteration").at("iteration"));
    ASSERT_TRUE(r.git.committed) << r.git.note;
    EXPECT_EQ(r.local_files, std::vector<std::string>{"detail/tile.hpp"});
    EXPECT_EQ(git(repo, {"show", "HEAD:kernel.cpp"}), "int candidate;\n");
    EXPECT_EQ(git(repo, {"show", "HEAD:detail/tile.hpp"}), "int tile_candidate;\n");  // the evaluated header
    EXPECT_EQ(git(repo, {"show", "--name-only", "--format=", "HEAD"}), "detail/tile.hpp\nkernel.cpp\n");
    EXPECT_EQ(platform::read_file(repo / "detail" / "tile.hpp"), "int tile_next;\n");  // untouched
    EXPECT_TRUE(fs::exists(m_ws.iteration_dir(1) / "detail" / "tile.hpp"));          // in the snapshot
}
