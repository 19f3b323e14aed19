// Unit under test: spec/spellcheck — edit distance and "did you mean" suggestions.
#include <gtest/gtest.h>

#include "spec/spellcheck.hpp"

using kloop::spec::closest_match;
using kloop::spec::did_you_mean;
using kloop::spec::edit_distance;

TEST(SpellcheckTest, EditDistance) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("atol", "atol"), 0u);
    EXPECT_EQ(edit_distance("atoll", "atol"), 1u);
    EXPECT_EQ(edit_distance("shpae", "shape"), 1u);  // transposition
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(SpellcheckTest, ClosestMatchWithinThreshold) {
    const std::vector<std::string> fields{"atol", "rtol", "rel_rms", "name"};
    EXPECT_EQ(closest_match("atoll", fields), "atol");
    EXPECT_EQ(closest_match("relrms", fields), "rel_rms");
    EXPECT_FALSE(closest_match("tolerance", fields).has_value());
    EXPECT_FALSE(closest_match("ab", fields).has_value());
    EXPECT_EQ(did_you_mean("nmae", fields), " (did you mean 'name'?)");
    EXPECT_EQ(did_you_mean("zzzzzz", fields), "");
}

TEST(SpellcheckTest, CaseOnlyDifferenceAlwaysMatchesShortWordsOtherwiseNever) {
    const std::vector<std::string> dims{"N", "D", "BT"};
    EXPECT_EQ(closest_match("d", dims), "D");
    EXPECT_EQ(closest_match("bt", dims), "BT");
    EXPECT_FALSE(closest_match("K", dims).has_value());
    EXPECT_FALSE(closest_match("BK", dims).has_value());
}
