// Unit under test: loop/proposal — reading optimization_proposal.md.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "loop/proposal.hpp"

using namespace kloop::loop;

TEST(ProposalTest, ReadsLabelledLinesAndTagBullets) {
    const auto p = parse_proposal("# v3\n\nDirection: vectorise the row loop\n**Expected:** fwd 2x on big shapes\n\nwhy...\n\n"
                                  "## Strategy tags\n- vectorization\n* loop fusion, hoisting\n",
                                  "p.md");
    EXPECT_EQ(p.direction, "vectorise the row loop");
    EXPECT_EQ(p.expected, "fwd 2x on big shapes");
    EXPECT_EQ(p.tags, (std::vector<std::string>{"vectorization", "loop fusion", "hoisting"}));
}

TEST(ProposalTest, ReadsSections) {
    const auto p = parse_proposal("## Direction\nsplit K\nacross warps\n\n## Expected\nlarge K 1.3x\n\n## Strategy tags\n- split-k\n", "p.md");
    EXPECT_EQ(p.direction, "split K across warps");
    EXPECT_EQ(p.expected, "large K 1.3x");
    EXPECT_EQ(p.tags, (std::vector<std::string>{"split-k"}));
}

TEST(ProposalTest, NamesEveryMissingPart) {
    try {
        (void)parse_proposal("Direction: x\n", "dir/optimization_proposal.md");
        FAIL();
    } catch (const kloop::usage_error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("dir/optimization_proposal.md"), std::string::npos);
        EXPECT_NE(m.find("Expected"), std::string::npos);
        EXPECT_NE(m.find("## Strategy tags"), std::string::npos);
        EXPECT_EQ(m.find("Direction"), std::string::npos);
    }
    EXPECT_THROW((void)parse_proposal("Direction: x\nExpected: y\n## Strategy tags\n\n", "p.md"), kloop::usage_error);
}
