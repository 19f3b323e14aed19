// Unit under test: the `physics_floor` integrity check end to end on the CPU backend. A copy of
// examples/rmsnorm whose `bytes` formulas claim a million times the real traffic makes every
// honest version look faster than the host screen allows (docs/correctness.md "Physics floor"):
// `kloop verify` must reject it naming the check, the shape and the rates, and `kloop compare`
// must reject both sides and give no verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::find_check;
using kloop::testing::quick_bench;
using kloop::testing::run_kloop;

namespace {

// examples/rmsnorm with every `bytes = "4*(` formula scaled by 10^6, in a fresh folder.
class inflated_op {
public:
    inflated_op() : m_dir("kloop-it-physics") {
        std::string toml = kloop::platform::read_file(fs::path(example_dir()) / "op.toml");
        int replaced = 0;
        for (std::size_t at = toml.find("bytes = \"4*("); at != std::string::npos; at = toml.find("bytes = \"4*(", at)) {
            toml.replace(at, 12, "bytes = \"4000000*(");
            ++replaced;
        }
        EXPECT_EQ(replaced, 2) << "examples/rmsnorm/op.toml changed: update this test";
        kloop::platform::write_file_atomic(m_dir.path() / "op.toml", toml);
        fs::copy_file(fs::path(example_dir()) / "reference.cpp", m_dir.path() / "reference.cpp");
    }
    [[nodiscard]] std::string dir() const { return m_dir.path().string(); }

private:
    kloop::platform::scoped_temp_dir m_dir;
};

std::string v1() { return example_dir() + "/versions/v1_rowwise.cpp"; }
std::string v2() { return example_dir() + "/versions/v2_streaming.cpp"; }

}  // namespace

TEST(PhysicsFloorIntegrationTest, VerifyRejectsAMedianFasterThanTheHost) {
    inflated_op op;
    std::vector<std::string> args = {"verify", op.dir(), "--candidate", v2(), "--json"};
    for (const auto& a : quick_bench()) args.push_back(a);
    const auto r = run_kloop(args);
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "gate_failed");
    const auto reason = r.record.at("reason").get<std::string>();
    EXPECT_EQ(reason.rfind("integrity check 'physics_floor' failed: ", 0), 0u) << reason;
    EXPECT_NE(reason.find("/n"), std::string::npos) << reason;        // a shape: fwd/n1000_d777, …
    EXPECT_NE(reason.find("against a peak of"), std::string::npos) << reason;
    EXPECT_NE(reason.find("TB/s"), std::string::npos) << reason;
    const auto* c = find_check(r.record, "physics_floor");
    ASSERT_NE(c, nullptr) << r.record.at("integrity").dump(2);
    EXPECT_EQ(c->at("status"), "fail");
    EXPECT_NE(c->at("detail").get<std::string>().find("host screen"), std::string::npos) << c->dump();
}

TEST(PhysicsFloorIntegrationTest, VerifyOfTheRealSpecPassesTheCheck) {
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", v2(), "--json", "--mode", "fwd"};
    for (const auto& a : quick_bench()) args.push_back(a);
    const auto r = run_kloop(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto* c = find_check(r.record, "physics_floor");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->at("status"), "pass") << c->dump();
}

TEST(PhysicsFloorIntegrationTest, CompareRejectsBothSidesAndGivesNoVerdict) {
    inflated_op op;
    std::vector<std::string> args = {"compare", op.dir(), "--candidate", v2(), "--base", v1(), "--json", "--mode", "fwd"};
    for (const auto& a : quick_bench()) args.push_back(a);
    const auto r = run_kloop(args);
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_FALSE(r.record.at("ok").get<bool>());
    const auto reason = r.record.at("reason").get<std::string>();
    EXPECT_NE(reason.find("the candidate's gate is red: integrity check 'physics_floor' failed: A/B medians: "),
              std::string::npos)
        << reason;
    EXPECT_NE(reason.find("the base's gate is red: integrity check 'physics_floor'"), std::string::npos) << reason;
}
