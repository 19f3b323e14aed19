// Unit under test: loop/contract — freezing hashes, detecting changed frozen files (exit 5,
// both hashes named), a hand-edited contract, and the spec parsed from the contract's copy.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "loop/record/contract.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "spec/spec_loader.hpp"

using namespace kloop;
using namespace kloop::loop;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct op_copy {
    platform::scoped_temp_dir dir{"kloop-contract"};
    fs::path op;
    op_copy() {
        op = dir.path() / "rmsnorm";
        fs::copy(fs::path(KLOOP_TEST_SOURCE_DIR) / "examples" / "rmsnorm", op, fs::copy_options::recursive);
    }
};

contract make(const op_copy& o, int cap = 5) {
    const auto spec = spec::load_op_spec(o.op);
    return make_contract({spec, o.op / "versions" / "v0_naive.cpp", cap, 2.0, "cpu0", "abc", false});
}

}  // namespace

TEST(ContractTest, HashesEveryFrozenFile) {
    op_copy o;
    const auto c = make(o);
    ASSERT_EQ(c.frozen.size(), 2u);
    EXPECT_EQ(c.frozen[0].path, "op.toml");
    EXPECT_EQ(c.frozen[0].sha256, platform::sha256_file(o.op / "op.toml"));
    EXPECT_EQ(c.frozen[1].path, "reference.cpp");
    EXPECT_EQ(c.max_iterations, 5);
    EXPECT_EQ(c.shapes.size(), 4u);
    EXPECT_EQ(c.tolerances.size(), 4u);  // 2 modes x 2 outputs
    EXPECT_NO_THROW(verify_contract(c));
}

TEST(ContractTest, ChangedFrozenFileNamesTheFileAndBothHashes) {
    op_copy o;
    const auto c = make(o);
    const auto before = platform::sha256_file(o.op / "reference.cpp");
    platform::write_file_atomic(o.op / "reference.cpp", platform::read_file(o.op / "reference.cpp") + "\n// loosened\n");
    const auto after = platform::sha256_file(o.op / "reference.cpp");
    try {
        verify_contract(c);
        FAIL() << "no contract_error";
    } catch (const contract_error& e) {
        const std::string m = e.what();
        EXPECT_EQ(e.get_code(), exit_code::contract_violated);
        EXPECT_NE(m.find("reference.cpp"), std::string::npos);
        EXPECT_NE(m.find(before), std::string::npos);
        EXPECT_NE(m.find(after), std::string::npos);
    }
}

TEST(ContractTest, MissingFrozenFileIsAViolation) {
    op_copy o;
    const auto c = make(o);
    fs::remove(o.op / "op.toml");
    EXPECT_THROW(verify_contract(c), contract_error);
}

TEST(ContractTest, CapIsRequiredAndTargetMustExceedOne) {
    op_copy o;
    const auto spec = spec::load_op_spec(o.op);
    EXPECT_THROW((void)make_contract({spec, o.op / "versions" / "v0_naive.cpp", 0, std::nullopt, "", "", false}), usage_error);
    EXPECT_THROW((void)make_contract({spec, o.op / "versions" / "v0_naive.cpp", 3, 0.9, "", "", false}), usage_error);
}

TEST(ContractTest, JsonRoundTripAndTamperDetection) {
    op_copy o;
    const auto c = make(o);
    const fs::path ws = o.dir.path() / "profile" / "rmsnorm-opt";
    auto j = to_json(c, ws);
    const auto back = contract_from_json(j, ws);
    EXPECT_EQ(back.run_id, c.run_id);
    EXPECT_EQ(back.frozen[1].sha256, c.frozen[1].sha256);
    EXPECT_EQ(back.max_iterations, 5);
    EXPECT_EQ(back.op_dir, c.op_dir);
    j["max_iterations"] = 50;  // an agent raising its own cap
    EXPECT_THROW((void)contract_from_json(j, ws), contract_error);
    j = to_json(c, ws);
    j["tolerances"][0]["atol"] = 1.0;  // or loosening a tolerance
    EXPECT_THROW((void)contract_from_json(j, ws), contract_error);
}

TEST(ContractTest, TheBaselinesLocalFilesAreRecordedAndHashed) {
    op_copy o;
    auto c = make(o);
    const fs::path ws = o.dir.path() / "profile" / "rmsnorm-opt";
    // A contract without them (written before they were recorded) keeps its hash and loads.
    auto old = to_json(c, ws);
    EXPECT_FALSE(old.at("baseline").contains("local_files"));
    EXPECT_TRUE(contract_from_json(old, ws).baseline_local_files.empty());
    c.baseline_local_files = {"detail/tile.hpp"};
    c.baseline_sources_sha256 = std::string(64, 'a');
    auto j = to_json(c, ws);
    EXPECT_NE(j.at("contract_sha256"), old.at("contract_sha256"));
    const auto back = contract_from_json(j, ws);
    EXPECT_EQ(back.baseline_local_files, std::vector<std::string>{"detail/tile.hpp"});
    EXPECT_EQ(back.baseline_sources_sha256, c.baseline_sources_sha256);
    j["baseline"]["local_files"] = json::array();  // dropping a header from the record is an edit
    EXPECT_THROW((void)contract_from_json(j, ws), contract_error);
}

TEST(ContractTest, SpecComesFromTheContractsCopy) {
    op_copy o;
    const auto c = make(o);
    // Even if op.toml were replaced, load_spec parses the frozen text (verify_contract catches the change).
    platform::write_file_atomic(o.op / "op.toml", "garbage = [");
    const auto spec = load_spec(c);
    EXPECT_EQ(spec.name, "rmsnorm");
    EXPECT_EQ(spec.get_bench_shapes().size(), 3u);
    EXPECT_EQ(spec.reference, c.op_dir / "reference.cpp");
}
