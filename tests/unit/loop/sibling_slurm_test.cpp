// Unit under test: loop/sibling_slurm — a parallel round's siblings as the tasks of one Slurm job
// array: each task directory holds the sibling's staged sources, the best version's sources and
// a task.json the node can evaluate from; the node's record comes back with the device and node,
// and what the node wrote beside the sources (a profile summary) without it overwriting the
// staged sources; a task that ended while its candidate ran is a rejected (crash) sibling; a
// task that never got to it stops the run naming the attempt; a record or a task directory of
// another sibling is refused. sbatch and squeue are a fake that plays each task's part (the
// node's kloop is not run here: tests/scale_out/run_on_slurm_test.sh runs it on a real Slurm).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "loop/evaluation_marker.hpp"
#include "loop/sibling_slurm.hpp"
#include "loop/workspace.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"

using namespace kloop;
using namespace kloop::loop;
namespace fs = std::filesystem;

namespace {

// sbatch: writes each listed task's device and host files as the task script would, then plays
// the task (`tasks[i]`, given its index and directory); squeue: the job is gone at once.
class fake_slurm final : public platform::command_runner_base {
public:
    std::map<std::size_t, std::function<void(const fs::path& task_dir)>> tasks;
    int sbatch_calls = 0;

protected:
    platform::process_result do_run(const platform::process_request& r) override {
        platform::process_result res;
        res.started = true;
        res.exit_code = 0;
        if (r.argv.at(0) == "squeue") return res;
        EXPECT_EQ(r.argv.at(0), "sbatch");
        ++sbatch_calls;
        const fs::path array = fs::path(r.argv.back()).parent_path();
        std::string list;
        for (const auto& a : r.argv)
            if (a.rfind("--array=", 0) == 0) list = a.substr(8);
        for (std::size_t at = 0; at <= list.size();) {
            const auto comma = list.find(',', at);
            const std::size_t i = std::stoul(list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
            platform::write_file_atomic(array / ("task-" + std::to_string(i) + ".device"), std::to_string(i + 6) + "\n");
            platform::write_file_atomic(array / ("task-" + std::to_string(i) + ".host"), "node-a\n");
            platform::write_file_atomic(array / ("task-" + std::to_string(i) + ".out"), "task " + std::to_string(i) + " said this\n");
            // The task's directory is its first argument after the verb.
            const std::string script = platform::read_file(array / ("task-" + std::to_string(i) + ".sh"));
            const auto verb = script.find("'evaluate-sibling' '");
            EXPECT_NE(verb, std::string::npos) << script;
            const auto from = verb + std::string("'evaluate-sibling' '").size();
            const fs::path dir = script.substr(from, script.find('\'', from) - from);
            if (auto it = tasks.find(i); it != tasks.end()) it->second(dir);
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        res.stdout_text = "77\n";
        return res;
    }
};

class SiblingSlurmTest : public ::testing::Test {
protected:
    platform::scoped_temp_dir m_dir{"kloop-sibling-slurm-test"};
    loop_session m_s{workspace(m_dir.path() / "ws"), {}, {}, nullptr, {}, {}};
    std::vector<staged_iteration> m_staged;
    sibling_slurm_engine m_engine;
    fake_slurm m_slurm;

    void SetUp() override {
        m_s.c.op = "toy";
        m_s.c.op_dir = m_dir.path() / "op";
        m_s.c.candidate = m_dir.path() / "src" / "kernel.cpp";
        // v0, the best: a kernel with a local header.
        iteration_record v0;
        v0.number = 0;
        v0.vs_best = -1;
        v0.candidate_file = "kernel.cpp";
        v0.local_files = {"inc/tile.h"};
        m_s.records.push_back(v0);
        platform::write_file_atomic(m_s.ws.iteration_dir(0) / "kernel.cpp", "#include \"inc/tile.h\"\nint v0;\n");
        platform::write_file_atomic(m_s.ws.iteration_dir(0) / "inc" / "tile.h", "int tile;\n");
        for (int n : {1, 2}) {
            staged_iteration it;
            it.record.number = n;
            it.record.vs_best = 0;
            it.record.candidate_file = "kernel.cpp";
            it.record.direction = "sibling " + std::to_string(n);
            it.staging = m_s.ws.make_staging_dir("v" + std::to_string(n));
            platform::write_file_atomic(it.staging / "kernel.cpp", "int sibling" + std::to_string(n) + ";\n");
            platform::write_file_atomic(it.staging / "optimization_proposal.md", "Direction: sibling\n");
            it.record.candidate_sha256 = platform::sha256_file(it.staging / "kernel.cpp");
            it.record.sources_sha256 = it.record.candidate_sha256;
            it.candidate = m_dir.path() / "run" / ("attempt-00" + std::to_string(n + 6)) / "kernel.cpp";
            m_staged.push_back(std::move(it));
        }
        m_engine.options.state_dir = m_dir.path() / "slurm";
        m_engine.options.poll_s = 0.01;
        m_engine.forwarded = {"--min-samples", "5"};
    }

    fs::path task_dir(int attempt) const { return m_engine.options.state_dir / "round-4" / ("attempt-00" + std::to_string(attempt)); }

    void evaluate() { evaluate_siblings_on_slurm(m_staged, {7, 8}, 4, m_s, m_engine, m_slurm); }

    // What the node writes when its evaluation ends: `r` with a verdict, and a profile summary.
    static void evaluated(const fs::path& dir, iteration_record r) {
        r.status = iteration_status::positive;
        r.reason = "FASTER on the node";
        write_record(dir / "evaluated.json", "kloop.sibling_evaluated",
                     {{"record", to_json(r)},
                      {"evaluation", {{"status", "passed"}}},
                      {"ab", {{"kind", "kloop.compare"}, {"device", ""}}},
                      {"notes", {"a note from the node"}}},
                     {});
        platform::write_file_atomic(dir / "candidate" / "profile_summary.md", "# profile\n");
        platform::write_file_atomic(dir / "candidate" / "kernel.cpp", "int changed_on_the_node;\n");
    }
};

}  // namespace

TEST_F(SiblingSlurmTest, EachTaskHoldsWhatItsNodeEvaluatesFromAndItsRecordComesBack) {
    m_slurm.tasks[0] = [&](const fs::path& dir) {
        // The task's inputs, as the node finds them.
        const auto task = read_record(dir / "task.json", "kloop.sibling_task");
        EXPECT_EQ(iteration_record_from_json(task.at("record")).number, 1);
        EXPECT_EQ(task.at("best_file"), "kernel.cpp");
        EXPECT_EQ(task.at("contract").at("op"), "toy");
        EXPECT_EQ(platform::read_file(dir / "candidate" / "kernel.cpp"), "int sibling1;\n");
        EXPECT_TRUE(fs::exists(dir / "candidate" / "optimization_proposal.md"));
        EXPECT_EQ(platform::read_file(dir / "best" / "inc" / "tile.h"), "int tile;\n");
        evaluated(dir, iteration_record_from_json(task.at("record")));
    };
    m_slurm.tasks[1] = [&](const fs::path& dir) {
        evaluated(dir, iteration_record_from_json(read_record(dir / "task.json", "kloop.sibling_task").at("record")));
    };
    evaluate();
    EXPECT_EQ(m_slurm.sbatch_calls, 1);
    const fs::path array = m_engine.options.state_dir / "round-4" / "array-7-8";
    const std::string script = platform::read_file(array / "task-0.sh");
    EXPECT_NE(script.find("'evaluate-sibling' '" + task_dir(7).string() + "' '--min-samples' '5'"), std::string::npos) << script;
    for (int j : {0, 1}) {
        const auto& r = m_staged[j].record;
        EXPECT_EQ(r.status, iteration_status::positive);
        EXPECT_EQ(r.reason, "FASTER on the node");
        EXPECT_EQ(r.device, std::to_string(j + 6) + " on node-a");
        EXPECT_EQ(m_staged[j].ab.at("device"), std::to_string(j + 6));
        EXPECT_EQ(m_staged[j].ab.at("device_host"), "node-a");
        EXPECT_EQ(m_staged[j].notes, std::vector<std::string>{"a note from the node"});
        // The profile summary came back; the staged sources did not change.
        EXPECT_TRUE(fs::exists(m_staged[j].staging / "profile_summary.md"));
        EXPECT_EQ(platform::read_file(m_staged[j].staging / "kernel.cpp"), "int sibling" + std::to_string(j + 1) + ";\n");
    }

    // Started again (a resumed run): the records are there, nothing is submitted.
    auto again = m_staged;
    for (auto& it : again) it.record.status = iteration_status::negative;
    evaluate_siblings_on_slurm(again, {7, 8}, 4, m_s, m_engine, m_slurm);
    EXPECT_EQ(m_slurm.sbatch_calls, 1);
    EXPECT_EQ(again[1].record.status, iteration_status::positive);
}

TEST_F(SiblingSlurmTest, ATaskThatEndedWhileItsCandidateRanIsARejectedSibling) {
    m_slurm.tasks[0] = [&](const fs::path& dir) {
        evaluated(dir, iteration_record_from_json(read_record(dir / "task.json", "kloop.sibling_task").at("record")));
    };
    m_slurm.tasks[1] = [&](const fs::path& dir) {
        // The node's kloop died with the candidate running: its mark stays.
        platform::write_file_atomic(dir / "candidate" / evaluation_marker_name, "{}\n");
    };
    evaluate();
    EXPECT_EQ(m_staged[0].record.status, iteration_status::positive);
    const auto& r = m_staged[1].record;
    EXPECT_EQ(r.status, iteration_status::rejected);
    EXPECT_EQ(r.rejection, rejection_kind::crash);
    EXPECT_NE(r.reason.find("its Slurm task ended while the candidate ran (7 on node-a; its output ends: task 1 said this"),
              std::string::npos)
        << r.reason;
    EXPECT_EQ(r.device, "7 on node-a");
}

TEST_F(SiblingSlurmTest, ATaskThatNeverGotToItsCandidateStopsTheRunNamingTheAttempt) {
    m_slurm.tasks[0] = [&](const fs::path& dir) {
        evaluated(dir, iteration_record_from_json(read_record(dir / "task.json", "kloop.sibling_task").at("record")));
    };
    try {
        evaluate();
        FAIL() << "a task without a record was taken";
    } catch (const usage_error& e) {
        FAIL() << "a usage error: " << e.what();
    } catch (const error& e) {
        EXPECT_EQ(e.get_code(), exit_code::gate_red);
        const std::string what = e.what();
        EXPECT_NE(what.find("evaluating v2 (attempt 8, 7 on node-a) wrote no record, its output ends: task 1 said this"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("The same command resumes the run"), std::string::npos) << what;
    }
}

TEST_F(SiblingSlurmTest, ARecordOrATaskDirectoryOfAnotherSiblingIsRefused) {
    // The node wrote the record of another sibling into task 0's directory.
    m_slurm.tasks[0] = [&](const fs::path& dir) { evaluated(dir, m_staged[1].record); };
    m_slurm.tasks[1] = [&](const fs::path& dir) { evaluated(dir, m_staged[1].record); };
    EXPECT_THROW(evaluate(), usage_error);

    // Another round staged over the same task directories: refused before anything is submitted.
    const int calls = m_slurm.sbatch_calls;
    auto other = m_staged;
    platform::write_file_atomic(other[0].staging / "kernel.cpp", "int another;\n");
    other[0].record.sources_sha256 = platform::sha256_file(other[0].staging / "kernel.cpp");
    try {
        evaluate_siblings_on_slurm(other, {7, 8}, 4, m_s, m_engine, m_slurm);
        FAIL() << "another run's task directory was taken";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("holds another run's task"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(task_dir(7).string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(m_slurm.sbatch_calls, calls);
}

TEST_F(SiblingSlurmTest, AMalformedTaskIsAUsageErrorNamingItsFile) {
    const fs::path dir = m_dir.path() / "task";
    write_record(dir / "task.json", "kloop.sibling_task", {{"record", {{"number", 1}}}}, {});
    platform::posix_command_runner runner;
    try {
        evaluate_sibling_task(dir, {}, runner);
        FAIL() << "a task without its contract was evaluated";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find((dir / "task.json").string()), std::string::npos) << e.what();
    }
}
