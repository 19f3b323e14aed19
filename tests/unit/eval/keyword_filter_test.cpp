// Unit under test: eval/keyword_filter — pytest-style --gate-k expressions.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "eval/keyword_filter.hpp"

using kloop::eval::keyword_filter;

TEST(KeywordFilterTest, WordIsCaseInsensitiveSubstring) {
    const auto f = keyword_filter::parse("N256");
    EXPECT_TRUE(f.matches("n256_d1024"));
    EXPECT_FALSE(f.matches("n4096_d1024"));
}

TEST(KeywordFilterTest, AndOrNotWithPrecedenceAndParentheses) {
    const auto f = keyword_filter::parse("d1024 and not n256 or d777");
    EXPECT_TRUE(f.matches("n4096_d1024"));
    EXPECT_FALSE(f.matches("n256_d1024"));
    EXPECT_TRUE(f.matches("n1000_d777"));
    const auto g = keyword_filter::parse("not (n256 or n1000)");
    EXPECT_FALSE(g.matches("n256_d1024"));
    EXPECT_FALSE(g.matches("n1000_d777"));
    EXPECT_TRUE(g.matches("n4096_d1024"));
}

TEST(KeywordFilterTest, MalformedExpressionsNameTheOption) {
    for (const char* bad : {"", "a and", "(a or b", "or a", "a )", "not"}) {
        try {
            (void)keyword_filter::parse(bad);
            FAIL() << "accepted '" << bad << "'";
        } catch (const kloop::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("--gate-k"), std::string::npos) << e.what();
        }
    }
}
