// Unit under test: loop/proposer_lane — a proposer's copy of the kernel's directory: what it holds,
// what it leaves out (dot entries, the workspace inside the directory, links leading outside), and
// the limits that refuse a directory too large to copy per proposer, naming --parallel.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "loop/proposer_lane.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

using namespace kloop;
using namespace kloop::loop;
namespace fs = std::filesystem;

namespace {

class ProposerLaneTest : public ::testing::Test {
protected:
    platform::scoped_temp_dir m_dir{"kloop-lane-test"};
    fs::path m_op = m_dir.path() / "op";
    fs::path m_kernel = m_op / "kernel.cu";

    void SetUp() override {
        platform::write_file_atomic(m_kernel, "// best\n");
        platform::write_file_atomic(m_op / "detail" / "tile.cuh", "// tile\n");
        platform::write_file_atomic(m_op / "versions" / "v1.cu", "// v1\n");
        platform::write_file_atomic(m_op / ".git" / "HEAD", "ref\n");
        platform::write_file_atomic(m_op / "ws" / "contract.json", "{}\n");  // the workspace, inside
        platform::write_file_atomic(m_dir.path() / "outside.txt", "secret\n");
        fs::create_symlink(m_op / "versions" / "v1.cu", m_op / "latest.cu");
        fs::create_symlink(m_dir.path() / "outside.txt", m_op / "outside.txt");
    }
};

}  // namespace

TEST_F(ProposerLaneTest, TheLaneHoldsTheKernelsDirectoryButNotTheWorkspaceDotEntriesOrLinksLeadingOut) {
    const fs::path lane = m_dir.path() / "attempt-001" / "lane";
    const fs::path kernel = make_proposer_lane(m_kernel, m_op / "ws", lane);
    EXPECT_EQ(kernel, lane / "kernel.cu");
    EXPECT_EQ(platform::read_file(kernel), "// best\n");
    EXPECT_EQ(platform::read_file(lane / "detail" / "tile.cuh"), "// tile\n");
    EXPECT_EQ(platform::read_file(lane / "versions" / "v1.cu"), "// v1\n");
    EXPECT_FALSE(fs::exists(lane / ".git"));
    EXPECT_FALSE(fs::exists(lane / "ws"));
    // A link inside the directory becomes a copy of its file: editing it leaves the original alone.
    EXPECT_FALSE(fs::is_symlink(lane / "latest.cu"));
    EXPECT_EQ(platform::read_file(lane / "latest.cu"), "// v1\n");
    EXPECT_FALSE(fs::exists(lane / "outside.txt"));
    // The lane is a copy: the original is untouched by an edit there.
    platform::write_file_atomic(kernel, "// edited\n");
    EXPECT_EQ(platform::read_file(m_kernel), "// best\n");
}

TEST_F(ProposerLaneTest, ADirectoryTooLargeToCopyPerProposerIsAUsageErrorNamingTheOption) {
    const fs::path lane = m_dir.path() / "lane";
    try {
        (void)make_proposer_lane(m_kernel, m_op / "ws", lane, {2, 1u << 20});
        FAIL() << "four files copied under a limit of two";
    } catch (const usage_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("option --parallel"), std::string::npos) << what;
        EXPECT_NE(what.find(m_op.string()), std::string::npos) << what;
        EXPECT_NE(what.find("more than 2 files"), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(lane));  // refused before a byte is written
    EXPECT_THROW((void)make_proposer_lane(m_kernel, m_op / "ws", lane, {100, 10}), usage_error);
    EXPECT_NO_THROW((void)make_proposer_lane(m_kernel, m_op / "ws", lane, {100, 1u << 20}));
}
