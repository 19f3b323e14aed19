// Unit under test: spec/initializer — the `init` forms of op.toml inputs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "spec/initializer.hpp"

using kloop::spec::init_kind;
using kloop::spec::initializer;

namespace {

std::string error_of(const std::string& text) {
    try {
        (void)initializer::parse(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    ADD_FAILURE() << "'" << text << "' was accepted";
    return {};
}

}  // namespace

TEST(InitializerTest, ParsesEveryForm) {
    auto n = initializer::parse("normal(0, 1)");
    EXPECT_EQ(n.kind, init_kind::normal);
    EXPECT_DOUBLE_EQ(n.a, 0.0);
    EXPECT_DOUBLE_EQ(n.b, 1.0);

    auto u = initializer::parse("uniform(0.5, 1.5)");
    EXPECT_EQ(u.kind, init_kind::uniform);
    EXPECT_DOUBLE_EQ(u.a, 0.5);
    EXPECT_DOUBLE_EQ(u.b, 1.5);

    auto r = initializer::parse("randint(-3, 10)");
    EXPECT_EQ(r.kind, init_kind::randint);
    EXPECT_DOUBLE_EQ(r.a, -3.0);
    EXPECT_DOUBLE_EQ(r.b, 10.0);

    auto c = initializer::parse("const(-1e-3)");
    EXPECT_EQ(c.kind, init_kind::constant);
    EXPECT_DOUBLE_EQ(c.a, -1e-3);

    auto l = initializer::parse("logsigmoid_normal(0, 2)");
    EXPECT_EQ(l.kind, init_kind::logsigmoid_normal);
    EXPECT_DOUBLE_EQ(l.b, 2.0);

    auto a = initializer::parse("arange(1, -0.25)");
    EXPECT_EQ(a.kind, init_kind::arange);
    EXPECT_DOUBLE_EQ(a.a, 1.0);
    EXPECT_DOUBLE_EQ(a.b, -0.25);

    auto s = initializer::parse("cu_seqlens(T)");
    EXPECT_EQ(s.kind, init_kind::cu_seqlens);
    EXPECT_EQ(s.total.eval({{"T", 77}}), 77);
}

TEST(InitializerTest, NumbersAndWhitespace) {
    auto n = initializer::parse("  normal ( -0.5 ,\t1e-6 )  ");
    EXPECT_DOUBLE_EQ(n.a, -0.5);
    EXPECT_DOUBLE_EQ(n.b, 1e-6);
    EXPECT_EQ(n.text, "normal ( -0.5 ,\t1e-6 )");
    EXPECT_DOUBLE_EQ(initializer::parse("const(+2.5E2)").a, 250.0);
    EXPECT_DOUBLE_EQ(initializer::parse("const(.5)").a, 0.5);
}

TEST(InitializerTest, CuSeqlensTakesADimExpressionWithCommas) {
    auto s = initializer::parse("cu_seqlens(ceil_div(T, 2) * 2)");
    EXPECT_EQ(s.total.eval({{"T", 7}}), 8);
    EXPECT_EQ(s.total.get_names(), (std::vector<std::string>{"T"}));
    EXPECT_NE(error_of("cu_seqlens(T+)").find("cu_seqlens(total)"), std::string::npos);
    EXPECT_NE(error_of("cu_seqlens(min(T, 2), 3)").find("takes 1 argument, got 2"), std::string::npos);
}

TEST(InitializerTest, WrongArityNamesTheForm) {
    EXPECT_NE(error_of("normal(0)").find("normal(mean, std) takes 2 arguments, got 1"), std::string::npos);
    EXPECT_NE(error_of("normal()").find("takes 2 arguments, got 0"), std::string::npos);
    EXPECT_NE(error_of("const(1, 2)").find("const(v) takes 1 argument, got 2"), std::string::npos);
    EXPECT_NE(error_of("uniform(0, 1, 2)").find("uniform(lo, hi) takes 2 arguments, got 3"), std::string::npos);
    EXPECT_NE(error_of("arange(0, )").find("argument 2 is empty"), std::string::npos);
}

TEST(InitializerTest, UnknownFunctionSuggestsANearMiss) {
    const auto typo = error_of("norml(0, 1)");
    EXPECT_NE(typo.find("unknown init function 'norml'"), std::string::npos) << typo;
    EXPECT_NE(typo.find("did you mean 'normal'?"), std::string::npos) << typo;
    const auto other = error_of("gaussian(0, 1)");
    EXPECT_NE(other.find("unknown init function 'gaussian'"), std::string::npos);
    EXPECT_EQ(other.find("did you mean"), std::string::npos);
    EXPECT_NE(error_of("").find("known forms"), std::string::npos);
    EXPECT_NE(error_of("(0, 1)").find("known forms"), std::string::npos);
}

TEST(InitializerTest, RangeRules) {
    EXPECT_NE(error_of("normal(0, 0)").find("std must be > 0"), std::string::npos);
    EXPECT_NE(error_of("logsigmoid_normal(0, -1)").find("std must be > 0"), std::string::npos);
    EXPECT_NE(error_of("uniform(1, 1)").find("lo must be < hi"), std::string::npos);
    EXPECT_NE(error_of("uniform(2, 1)").find("lo must be < hi"), std::string::npos);
    EXPECT_NE(error_of("randint(5, 5)").find("lo must be < hi"), std::string::npos);
    EXPECT_NE(error_of("randint(0.5, 3)").find("must be an integer"), std::string::npos);
}

TEST(InitializerTest, SpikeAndIntEdges) {
    const auto s = initializer::parse("spike(1, 1e4, min(D, 64))");
    EXPECT_EQ(s.kind, init_kind::spike);
    EXPECT_DOUBLE_EQ(s.a, 1.0);
    EXPECT_DOUBLE_EQ(s.b, 1e4);
    EXPECT_EQ(s.total.get_text(), "min(D, 64)");
    const auto e = initializer::parse("int_edges(-2147483648, 2147483647)");
    EXPECT_EQ(e.kind, init_kind::int_edges);
    EXPECT_DOUBLE_EQ(e.a, -2147483648.0);
    EXPECT_DOUBLE_EQ(e.b, 2147483647.0);
    EXPECT_EQ(initializer::parse("int_edges(3, 3)").a, 3.0);  // one value: allowed
    EXPECT_NE(error_of("spike(0, 5, D)").find("std must be > 0"), std::string::npos);
    EXPECT_NE(error_of("spike(1, 5)").find("spike(std, peak, row) takes 3 arguments, got 2"), std::string::npos);
    EXPECT_NE(error_of("spike(1, 5, D+)").find("spike(std, peak, row)"), std::string::npos);
    EXPECT_NE(error_of("int_edges(4, 3)").find("lo must be <= hi"), std::string::npos);
    EXPECT_NE(error_of("int_edges(0.5, 3)").find("must be an integer"), std::string::npos);
    EXPECT_NE(error_of("int_edge(0, 3)").find("did you mean 'int_edges'"), std::string::npos);
}

TEST(InitializerTest, MalformedText) {
    EXPECT_NE(error_of("normal(a, 1)").find("'a' is not a number"), std::string::npos);
    EXPECT_NE(error_of("normal(0, 1x)").find("'1x' is not a number"), std::string::npos);
    EXPECT_NE(error_of("normal(0, inf)").find("not a finite number"), std::string::npos);
    EXPECT_NE(error_of("const(nan)").find("not a finite number"), std::string::npos);
    EXPECT_NE(error_of("normal 0, 1").find("expected '('"), std::string::npos);
    EXPECT_NE(error_of("normal").find("expected '('"), std::string::npos);
    EXPECT_NE(error_of("normal(0, 1").find("expected ')'"), std::string::npos);
    EXPECT_NE(error_of("normal(0, 1) x").find("expected ')'"), std::string::npos);
    EXPECT_NE(error_of("const((1)").find("unbalanced"), std::string::npos);
}

TEST(InitializerTest, KindNamesRoundTrip) {
    for (init_kind k : {init_kind::normal, init_kind::uniform, init_kind::randint, init_kind::constant,
                        init_kind::logsigmoid_normal, init_kind::cu_seqlens, init_kind::arange, init_kind::spike,
                        init_kind::int_edges}) {
        auto back = kloop::spec::init_kind_from_string(kloop::spec::to_string(k));
        ASSERT_TRUE(back.has_value()) << kloop::spec::to_string(k);
        EXPECT_EQ(*back, k);
    }
    EXPECT_EQ(kloop::spec::to_string(init_kind::constant), "const");
    EXPECT_FALSE(kloop::spec::init_kind_from_string("constant").has_value());
}
