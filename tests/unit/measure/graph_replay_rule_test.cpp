// Unit under test: measure/graph_replay_rule — when the CUDA executor may report a graph replay
// figure, from the facts it gathers (kernel nodes, replay and eager times, poisoned outputs).
#include <gtest/gtest.h>

#include "measure/graph_replay_rule.hpp"

namespace {

namespace ev = kloop::measure;

// 100 calls, one kernel each, 2 µs per call replayed against a 5 µs eager median, outputs rewritten.
ev::graph_replay_facts honest() {
    ev::graph_replay_facts f;
    f.calls = 100;
    f.kernel_nodes = 100;
    f.per_call_s = 2e-6;
    f.eager_median_s = 5e-6;
    f.outputs_checked = true;
    return f;
}

}  // namespace

TEST(GraphReplayRuleTest, AnHonestReplayIsReported) {
    EXPECT_EQ(ev::graph_replay_refusal(honest()), "");
    auto two_kernels = honest();
    two_kernels.kernel_nodes = 200;
    EXPECT_EQ(ev::graph_replay_refusal(two_kernels), "");
}

TEST(GraphReplayRuleTest, AGraphWithoutAKernelPerCallIsRefused) {
    auto empty = honest();
    empty.kernel_nodes = 0;  // enqueued nothing on the captured stream (or worked on another one)
    empty.per_call_s = 0.03e-6;
    const auto why = ev::graph_replay_refusal(empty);
    EXPECT_NE(why.find("0 kernel node(s) for 100 calls"), std::string::npos) << why;
    auto fewer = honest();
    fewer.kernel_nodes = 99;
    EXPECT_NE(ev::graph_replay_refusal(fewer), "");
    auto none = honest();
    none.calls = 0;
    EXPECT_NE(ev::graph_replay_refusal(none), "");
}

TEST(GraphReplayRuleTest, OutputsLeftPoisonedAreRefused) {
    auto f = honest();
    f.poisoned_left = 4096;
    f.first_poisoned = "output 'y' of input set 0";
    const auto why = ev::graph_replay_refusal(f);
    EXPECT_NE(why.find("4096"), std::string::npos) << why;
    EXPECT_NE(why.find("output 'y' of input set 0"), std::string::npos) << why;
    f.outputs_checked = false;  // not read back: only the other rules apply
    EXPECT_EQ(ev::graph_replay_refusal(f), "");
}

TEST(GraphReplayRuleTest, AReplayFarBelowTheEagerMedianIsRefusedAtTheDocumentedFraction) {
    auto f = honest();
    f.per_call_s = ev::graph_min_fraction_of_eager * f.eager_median_s;
    EXPECT_EQ(ev::graph_replay_refusal(f), "");  // the bound itself is allowed
    f.per_call_s *= 0.99;
    EXPECT_NE(ev::graph_replay_refusal(f).find("eager median"), std::string::npos);
    f.per_call_s = 0;
    EXPECT_NE(ev::graph_replay_refusal(f), "");
}
