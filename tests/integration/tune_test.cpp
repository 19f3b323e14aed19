// Unit under test: `kloop tune` end to end through the real kloop binary on the CPU example, in a
// scratch loop repository — the search over examples/rmsnorm/versions/v4_tuned.cpp's three
// kLanes values (each gated and raced against the incumbent), its points in the strategy
// memory's database, tune_v1.md, and the end iteration with the generated proposal; and the
// usage errors of a candidate without tunables or with a malformed marker (exit 2, file:line).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "integration/kloop_process.hpp"
#include "integration/scratch_loop_repo.hpp"
#include "loop/tune_memory.hpp"
#include "loop/tunables.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::testing::kloop_run;
using kloop::testing::quick_bench;

namespace {

class TuneTest : public ::testing::Test {
protected:
    kloop::platform::scoped_temp_dir m_dir{"kloop-tune-test"};
    kloop::testing::scratch_loop_repo m_s;
    fs::path m_memory;

    void SetUp() override {
        m_s = kloop::testing::make_scratch_loop_repo(m_dir.path());
        m_memory = m_dir.path() / "memory.sqlite";
    }

    // The quick stopping rule and no held-out shapes: this is about the search and its records.
    kloop_run run(std::vector<std::string> args) {
        for (const auto& a : quick_bench()) args.push_back(a);
        args.insert(args.end(), {"--held-out", "0", "--workspace", m_s.ws.string()});
        return kloop::testing::run_kloop(args, 600, {{"KLOOP_MEMORY_DB", m_memory.string()}});
    }

    void init() {
        const auto i = run({"init", m_s.op.string(), "--candidate", m_s.kernel.string(), "--max-iterations", "3"});
        ASSERT_EQ(i.exit_code, 0) << i.out << i.err;
    }
};

}  // namespace

TEST_F(TuneTest, SearchesTheTunablesAndEndsInOneRecordedIteration) {
    init();
    fs::copy_file(m_s.op / "versions" / "v4_tuned.cpp", m_s.kernel, fs::copy_options::overwrite_existing);
    const auto t = run({"tune"});
    ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
    EXPECT_NE(t.out.find("#0 kLanes=32: start"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("tune: exhaustive search, 3 of 3 points"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("| 2 | kLanes=64 |"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("v1: "), std::string::npos) << t.out;

    // The end iteration, with the generated proposal.
    const auto iter = m_s.ws / "iter_v1";
    ASSERT_TRUE(fs::exists(iter / "benchmark_result.json")) << t.out;
    const auto proposal = kloop::platform::read_file(iter / "optimization_proposal.md");
    EXPECT_NE(proposal.find("Direction: parameter search over kLanes (3 points, exhaustive): chose kLanes="),
              std::string::npos)
        << proposal;
    EXPECT_NE(proposal.find("\nPrediction: "), std::string::npos) << proposal;
    EXPECT_NE(proposal.find("## Strategy tags\n- parameter-tuning\n"), std::string::npos) << proposal;
    const auto record = nlohmann::json::parse(kloop::platform::read_file(iter / "benchmark_result.json"));
    const auto& tags = record.at("iteration").at("proposal").at("tags");
    EXPECT_EQ(tags.at(0), "parameter-tuning");
    // The chosen values are what was submitted, snapshotted and committed: a changed kLanes is a tag.
    const auto chosen = kloop::loop::declared_config(
        kloop::loop::parse_tunables(kloop::platform::read_file(iter / "kernel.cpp"), "kernel.cpp"));
    ASSERT_EQ(chosen.size(), 1u);
    EXPECT_EQ(tags.size(), chosen[0] == "32" ? 1u : 2u) << tags;
    EXPECT_EQ(kloop::platform::read_file(iter / "kernel.cpp"), kloop::platform::read_file(m_s.kernel));
    const auto log = kloop::testing::git_in(m_s.repo, {"log", "--oneline", "-1"});
    EXPECT_NE(log.stdout_text.find("kloop rmsnorm v1"), std::string::npos) << log.stdout_text;

    // Every point in the memory and in the table beside the iteration.
    const auto contract = nlohmann::json::parse(kloop::platform::read_file(m_s.ws / "contract.json"));
    EXPECT_EQ(kloop::loop::tune_memory(m_memory).count_points(contract.at("run_id").get<std::string>()), 3);
    const auto table = kloop::platform::read_file(m_s.ws / "tune_v1.md");
    for (const auto* row : {"| 0 | kLanes=32 |", "| 1 | kLanes=16 |", "| 2 | kLanes=64 |"})
        EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
    EXPECT_NE(table.find("- iteration v1: "), std::string::npos) << table;
    std::cout << t.out;  // the run, for the log
}

// Two fake devices (KLOOP_DEVICES stands in for the GPU probe; this CPU op is timed on the host):
// the two points after the start race as one batch, each on a device slot it names, against the
// same incumbent; the table says which device each ran on.
TEST_F(TuneTest, OnTwoDevicesTheOtherPointsRaceAsOneBatchEachNamingItsDevice) {
    init();
    fs::copy_file(m_s.op / "versions" / "v4_tuned.cpp", m_s.kernel, fs::copy_options::overwrite_existing);
    std::vector<std::string> args{"tune", "--devices", "all"};
    for (const auto& a : quick_bench()) args.push_back(a);
    args.insert(args.end(), {"--held-out", "0", "--workspace", m_s.ws.string()});
    const auto t = kloop::testing::run_kloop(args, 600, {{"KLOOP_MEMORY_DB", m_memory.string()},
                                                        {"KLOOP_DEVICES", "fake-gpu-0,fake-gpu-1"}});
    ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
    EXPECT_NE(t.out.find("tune: exhaustive search, 3 of 3 points"), std::string::npos) << t.out;
    for (const auto* point : {"#1 kLanes=16: ", "#2 kLanes=64: "}) {
        const auto at = t.out.find(point);
        ASSERT_NE(at, std::string::npos) << point << "\n" << t.out;
        const auto line = t.out.substr(at, t.out.find('\n', at) - at);
        EXPECT_NE(line.find(" vs kLanes=32"), std::string::npos) << line;  // one batch: both against the start
        EXPECT_TRUE(line.find(" | on fake-gpu-0") != std::string::npos || line.find(" | on fake-gpu-1") != std::string::npos)
            << line;
    }
    const auto table = kloop::platform::read_file(m_s.ws / "tune_v1.md");
    EXPECT_NE(table.find("- devices: fake-gpu-0, fake-gpu-1 — a batch of up to 2 points"), std::string::npos) << table;
    EXPECT_NE(table.find("| verdict | device | note |"), std::string::npos) << table;
    EXPECT_TRUE(fs::exists(m_s.ws / "iter_v1" / "benchmark_result.json")) << t.out;
    std::cout << t.out;
}

TEST_F(TuneTest, ACandidateWithoutTunablesOrWithAMalformedMarkerIsAUsageError) {
    init();
    auto t = run({"tune"});  // kernel.cpp is v0_naive: no markers
    EXPECT_EQ(t.exit_code, 2) << t.out << t.err;
    EXPECT_NE(t.err.find("declares no tunables"), std::string::npos) << t.err;

    std::ofstream(m_s.kernel, std::ios::app) << "\nconstexpr int kSpare = 3; // kloop:tune 1 2\n";
    t = run({"tune"});
    EXPECT_EQ(t.exit_code, 2) << t.out << t.err;
    EXPECT_NE(t.err.find("kernel.cpp:"), std::string::npos) << t.err;
    EXPECT_NE(t.err.find("not in its kloop:tune set"), std::string::npos) << t.err;
    EXPECT_FALSE(fs::exists(m_s.ws / "iter_v1"));
}
