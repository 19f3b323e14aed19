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

// Bounded recursion: what a hostile command line can pass ends in a usage error naming the
// option, never in a crash; an expression within the bounds still works.
TEST(KeywordFilterTest, DeepOrLongExpressionsAreRefusedNotACrash) {
    const auto refused = [](const std::string& text, const std::string& why) {
        try {
            (void)keyword_filter::parse(text);
            ADD_FAILURE() << "accepted an expression of " << text.size() << " characters";
        } catch (const kloop::usage_error& e) {
            EXPECT_NE(std::string(e.what()).find("--gate-k"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    refused(std::string(30000, '(') + "a" + std::string(30000, ')'), "words and parentheses");
    refused(std::string(65, '(') + "a" + std::string(65, ')'), "nested deeper than 64");
    std::string nots;
    for (int i = 0; i < 65; ++i) nots += "not ";
    refused(nots + "a", "nested deeper than 64");
    std::string words = "a";
    for (int i = 0; i < 600; ++i) words += " or a";
    refused(words, "words and parentheses");

    const auto f = keyword_filter::parse(std::string(64, '(') + "n256" + std::string(64, ')'));
    EXPECT_TRUE(f.matches("n256_d1024"));
    std::string long_ok = "n1";
    for (int i = 0; i < 400; ++i) long_ok += " or n1";
    EXPECT_TRUE(keyword_filter::parse(long_ok + " or n256").matches("n256_d1024"));
}
