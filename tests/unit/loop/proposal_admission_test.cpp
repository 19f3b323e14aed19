// Unit under test: loop/proposal_admission — a proposal without a machine-readable prediction
// warns, or is refused (proposal_refused, exit code 2) when a prediction is required; a blocked
// strategy warns, or is refused without a Blocked-override reason when the block is enforced;
// an override reason proceeds and is noted.
#include <gtest/gtest.h>

#include "loop/proposal_admission.hpp"

using namespace kloop::loop;

namespace {

const std::string with_prediction = "Direction: d\nExpected: e\nPrediction: speedup 1.1-1.3\n\n## Strategy tags\n- Drop Scale\n";
const std::string without_prediction = "Direction: d\nExpected: e\n\n## Strategy tags\n- Drop Scale\n";

fingerprint_summary blocked() {
    fingerprint_summary f;
    f.fingerprint = "abc123";
    f.tags = {"drop-scale"};
    f.negative = 1;
    f.rejected = 1;
    f.runs = 1;
    return f;
}

std::string refusal(const proposal& p, const std::optional<fingerprint_summary>& memory, admission_rules rules) {
    try {
        (void)admit_proposal(p, "dir/optimization_proposal.md", "abc123", memory, rules);
    } catch (const proposal_refused& e) {
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(ProposalAdmissionTest, AMissingPredictionWarnsOrIsRefused) {
    const auto p = parse_proposal(without_prediction, "p.md");
    const auto warnings = admit_proposal(p, "p.md", "abc123", std::nullopt, {});
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("no machine-readable prediction: it cannot be scored"), std::string::npos) << warnings[0];
    const auto m = refusal(p, std::nullopt, {.require_prediction = true});
    EXPECT_NE(m.find("'dir/optimization_proposal.md' has no machine-readable prediction"), std::string::npos) << m;
    EXPECT_NE(m.find("Prediction: <claim>"), std::string::npos) << m;  // how to write one
    EXPECT_NE(m.find("speedup A-B"), std::string::npos) << m;
    EXPECT_TRUE(admit_proposal(parse_proposal(with_prediction, "p.md"), "p.md", "abc123", std::nullopt,
                               {.require_prediction = true, .enforce_blocked = true})
                    .empty());
}

TEST(ProposalAdmissionTest, ABlockedStrategyWarnsOrIsRefusedWithoutAnOverride) {
    const auto p = parse_proposal(with_prediction, "p.md");
    auto warnings = admit_proposal(p, "p.md", "abc123", blocked(), {});
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("BLOCKED"), std::string::npos) << warnings[0];
    const auto m = refusal(p, blocked(), {.enforce_blocked = true});
    EXPECT_NE(m.find("abc123 (drop-scale) is BLOCKED"), std::string::npos) << m;
    EXPECT_NE(m.find("0 positive, 1 negative, 1 rejected in 1 loop(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("Blocked-override: <why this time differs>"), std::string::npos) << m;
    // Not blocked: nothing to say.
    auto open = blocked();
    open.rejected = 0;
    EXPECT_TRUE(admit_proposal(p, "p.md", "abc123", open, {.enforce_blocked = true}).empty());
}

TEST(ProposalAdmissionTest, AnOverrideReasonProceedsAndIsNoted) {
    // The line counts anywhere, after the tags too (it is not a tag).
    const auto p = parse_proposal(with_prediction + "\nBlocked-override: the rejection was a harness bug, fixed since\n", "p.md");
    EXPECT_EQ(p.blocked_override, "the rejection was a harness bug, fixed since");
    EXPECT_EQ(p.tags, std::vector<std::string>{"Drop Scale"});
    const auto warnings = admit_proposal(p, "p.md", "abc123", blocked(), {.require_prediction = true, .enforce_blocked = true});
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("retried with the proposal's reason: the rejection was a harness bug"), std::string::npos)
        << warnings[0];
}
