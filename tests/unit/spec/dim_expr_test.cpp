// Unit under test: spec/dim_expr — parsing, precedence, floor division, checked evaluation.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "spec/dim_expr.hpp"

using kloop::spec::dim_env;
using kloop::spec::dim_expr;

namespace {

std::int64_t eval(const std::string& text, const dim_env& env = {}) {
    return dim_expr::parse(text).eval(env);
}

template <class E, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
        return {};
    }
    ADD_FAILURE() << "no exception thrown";
    return {};
}

std::string parse_error(const std::string& text) {
    return message_of<std::invalid_argument>([&] { (void)dim_expr::parse(text); });
}

}  // namespace

TEST(DimExprTest, LiteralsAndNames) {
    EXPECT_EQ(eval("42"), 42);
    EXPECT_EQ(eval("N", {{"N", 7}}), 7);
    EXPECT_EQ(eval("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
}

TEST(DimExprTest, PrecedenceAndAssociativity) {
    EXPECT_EQ(eval("2+3*4"), 14);
    EXPECT_EQ(eval("(2+3)*4"), 20);
    EXPECT_EQ(eval("10-2-3"), 5);
    EXPECT_EQ(eval("100/10/5"), 2);
    EXPECT_EQ(eval("2*7%4"), 2);
    EXPECT_EQ(eval("-N+1", {{"N", 5}}), -4);
    EXPECT_EQ(eval("--3"), 3);
    EXPECT_EQ(eval("2*-3"), -6);
    EXPECT_EQ(eval("4*(2*N*D + D + N)", {{"N", 3}, {"D", 5}}), 4 * (30 + 5 + 3));
}

TEST(DimExprTest, DivisionIsFloorDivision) {
    EXPECT_EQ(eval("7/2"), 3);
    EXPECT_EQ(eval("-7/2"), -4);
    EXPECT_EQ(eval("7/-2"), -4);
    EXPECT_EQ(eval("-7/-2"), 3);
    EXPECT_EQ(eval("-8/2"), -4);
    EXPECT_EQ(eval("7%3"), 1);
    EXPECT_EQ(eval("-7%2"), 1);
    EXPECT_EQ(eval("7%-2"), -1);
    EXPECT_EQ(eval("-7%-2"), -1);
}

TEST(DimExprTest, Functions) {
    EXPECT_EQ(eval("ceil_div(T, 64)", {{"T", 65}}), 2);
    EXPECT_EQ(eval("ceil_div(T, 64)", {{"T", 64}}), 1);
    EXPECT_EQ(eval("ceil_div(-7, 2)"), -3);
    EXPECT_EQ(eval("ceil_div(7, -2)"), -3);
    EXPECT_EQ(eval("min(3, N)", {{"N", 9}}), 3);
    EXPECT_EQ(eval("max(3, N)", {{"N", 9}}), 9);
    EXPECT_EQ(eval("max(min(1, 2), ceil_div(9, 4)) * 2"), 6);
}

TEST(DimExprTest, WhitespaceIsIgnored) {
    EXPECT_EQ(eval("  ceil_div ( T ,\t64 ) + 1 ", {{"T", 128}}), 3);
}

TEST(DimExprTest, NamesAreSortedAndUnique) {
    const dim_expr e = dim_expr::parse("N*D + N + ceil_div(T, BLOCK_1)");
    EXPECT_EQ(e.get_names(), (std::vector<std::string>{"BLOCK_1", "D", "N", "T"}));
    EXPECT_EQ(e.get_text(), "N*D + N + ceil_div(T, BLOCK_1)");
    EXPECT_TRUE(dim_expr::parse("3*4").get_names().empty());
}

TEST(DimExprTest, CopiesEvaluateTheSame) {
    dim_expr a = dim_expr::parse("N+1");
    dim_expr b = a;
    EXPECT_EQ(b.eval({{"N", 1}}), 2);
    EXPECT_EQ(a.eval({{"N", 2}}), 3);
}

TEST(DimExprTest, ParseErrorsNameThePosition) {
    EXPECT_NE(parse_error("").find("empty expression"), std::string::npos);
    EXPECT_NE(parse_error("   ").find("empty expression"), std::string::npos);
    EXPECT_NE(parse_error("N+").find("expression ended"), std::string::npos);
    EXPECT_NE(parse_error("N+*2").find("found '*' at position 3"), std::string::npos);
    EXPECT_NE(parse_error("(N").find("expected ')'"), std::string::npos);
    EXPECT_NE(parse_error("N)").find("unexpected ')' at position 2"), std::string::npos);
    EXPECT_NE(parse_error("2N").find("after a number"), std::string::npos);
    EXPECT_NE(parse_error("N.5").find("unexpected '.'"), std::string::npos);
    EXPECT_NE(parse_error("99999999999999999999").find("does not fit in 64 bits"), std::string::npos);
}

TEST(DimExprTest, FunctionErrors) {
    EXPECT_NE(parse_error("floor(1, 2)").find("unknown function 'floor'"), std::string::npos);
    EXPECT_NE(parse_error("min(1)").find("takes 2 arguments, got 1"), std::string::npos);
    EXPECT_NE(parse_error("ceil_div(1, 2, 3)").find("takes 2 arguments, got 3"), std::string::npos);
    EXPECT_NE(parse_error("max()").find("expected a number"), std::string::npos);
}

TEST(DimExprTest, DeepNestingIsAnErrorNotACrash) {
    const std::string deep = std::string(5000, '(') + "1" + std::string(5000, ')');
    EXPECT_FALSE(parse_error(deep).empty());
    const std::string nested = std::string(50, '(') + "1" + std::string(50, ')');
    EXPECT_EQ(eval(nested), 1);
}

TEST(DimExprTest, UnknownDimNamesTheDim) {
    const auto msg = message_of<std::invalid_argument>([] { (void)eval("N*Q", {{"N", 1}}); });
    EXPECT_NE(msg.find("unknown dim 'Q'"), std::string::npos) << msg;
}

TEST(DimExprTest, DivisionByZero) {
    for (const char* text : {"N/(N-N)", "N%0", "ceil_div(N, 0)"}) {
        const auto msg = message_of<std::invalid_argument>([&] { (void)eval(text, {{"N", 3}}); });
        EXPECT_NE(msg.find("division by zero"), std::string::npos) << text;
    }
}

TEST(DimExprTest, OverflowIsDetected) {
    const dim_env big{{"N", std::int64_t{1} << 32}};
    for (const char* text : {"9223372036854775807+1", "N*N", "-9223372036854775807-2",
                             "(-9223372036854775807-1)/-1", "-(-9223372036854775807-1)",
                             "ceil_div(-9223372036854775807-1, -1)"}) {
        const auto msg = message_of<std::overflow_error>([&] { (void)eval(text, big); });
        EXPECT_NE(msg.find("overflow"), std::string::npos) << text;
    }
    EXPECT_EQ(eval("(-9223372036854775807-1)%-1"), 0);
    EXPECT_EQ(eval("N*N/N", {{"N", std::int64_t{1} << 31}}), std::int64_t{1} << 31);
}

TEST(DimExprTest, DefaultConstructedDoesNotEvaluate) {
    const dim_expr e;
    EXPECT_THROW((void)e.eval({}), std::invalid_argument);
    EXPECT_TRUE(e.get_names().empty());
}
