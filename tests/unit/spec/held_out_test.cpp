// Unit under test: spec/held_out and the domain fields of spec/spec_loader — parsing of
// [dims] domain, param_domain and init arrays (errors with file, line and field), and the draw
// of held-out shapes: inside the domain, never a listed shape, within the size cap, valid for
// every dim expression, reproducible from the seed and different for different seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "spec/held_out.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using kloop::spec_error;
using kloop::spec::draw_held_out;
using kloop::spec::op_spec;

namespace {


// Lines numbered as the errors must report them.
const std::vector<std::string> base_lines = {
    "[op]",                                                                                      // 1
    "name = \"toy\"",                                                                            // 2
    "reference = \"ref.cpp\"",                                                                   // 3
    "[dims]",                                                                                    // 4
    "names = [\"N\", \"D\"]",                                                                    // 5
    "domain = { N = { min = 1, max = 5000 }, D = { min = 8, max = 4096, multiple_of = 8 } }",    // 6
    "[[shapes]]",                                                                                // 7
    "name = \"small\"",                                                                          // 8
    "dims = { N = 4, D = 64 }",                                                                  // 9
    "use = [\"gate\"]",                                                                          // 10
    "[[shapes]]",                                                                                // 11
    "name = \"big\"",                                                                            // 12
    "dims = { N = 256, D = 1024 }",                                                              // 13
    "use = [\"gate\", \"bench\"]",                                                               // 14
    "[modes.fwd]",                                                                               // 15
    "entry = \"toy_fwd\"",                                                                       // 16
    "params = { eps = 1e-6, k = 3 }",                                                            // 17
    "param_domain = { eps = { min = 1e-7, max = 1e-3, log = true }, k = { min = 1, max = 64 } }", // 18
    "inputs = [",                                                                                // 19
    "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = [\"normal(0, 1)\", \"normal(0, 1000)\"] },", // 20
    "  { name = \"w\", dtype = \"f32\", shape = [\"D\"] },",                                     // 21
    "]",                                                                                         // 22
    "outputs = [ { name = \"y\", dtype = \"f32\", shape = [\"N\", \"D\"], atol = 1e-5 } ]",      // 23
};

std::string make_spec(const std::vector<std::pair<int, std::string>>& replace = {}, const std::string& append = "") {
    std::vector<std::string> lines = base_lines;
    for (const auto& [line, text] : replace) lines.at(static_cast<std::size_t>(line - 1)) = text;
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out + append;
}

class HeldOutTest : public ::testing::Test {
protected:
    void SetUp() override { std::ofstream(m_tmp.path() / "ref.cpp") << "// stub\n"; }
    op_spec load(const std::string& text) {
        std::ofstream(m_tmp.path() / "op.toml") << text;
        return kloop::spec::load_op_spec(m_tmp.path());
    }
    // The spec_error of loading `text`; fails the test when it loads.
    spec_error load_error(const std::string& text) {
        try {
            (void)load(text);
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_file(), (m_tmp.path() / "op.toml").string());
            return e;
        }
        ADD_FAILURE() << "accepted:\n" << text;
        return spec_error("", 0, "", "");
    }

private:
    kloop::platform::scoped_temp_dir m_tmp{"kloop-heldout-test"};
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_F(HeldOutTest, ParsesDomainsParamDomainsAndInitLists) {
    const op_spec s = load(make_spec());
    ASSERT_EQ(s.dim_domains.size(), 2u);
    EXPECT_EQ(s.domain_line, 6);
    EXPECT_EQ(s.dim_domains.at("N").min, 1);
    EXPECT_EQ(s.dim_domains.at("N").max, 5000);
    EXPECT_EQ(s.dim_domains.at("D").multiple_of, 8);
    EXPECT_TRUE(s.dim_domains.at("D").contains(1024));
    EXPECT_FALSE(s.dim_domains.at("D").contains(1020));
    const auto& fwd = s.modes[0];
    ASSERT_TRUE(fwd.params[0].domain.has_value());
    EXPECT_TRUE(fwd.params[0].domain->log);
    EXPECT_DOUBLE_EQ(fwd.params[0].domain->min, 1e-7);
    ASSERT_TRUE(fwd.params[1].domain.has_value());
    EXPECT_FALSE(fwd.params[1].domain->log);
    EXPECT_EQ(fwd.inputs[0].init.text, "normal(0, 1)");
    ASSERT_EQ(fwd.inputs[0].adversarial.size(), 1u);
    EXPECT_EQ(fwd.inputs[0].adversarial[0].text, "normal(0, 1000)");
    EXPECT_DOUBLE_EQ(fwd.inputs[0].adversarial[0].b, 1000.0);
    EXPECT_TRUE(fwd.inputs[1].adversarial.empty());
    EXPECT_TRUE(s.has_domain());
}

TEST_F(HeldOutTest, ValuesDomainAndNoDomain) {
    const op_spec s = load(make_spec({{6, "domain = { N = { values = [4, 256, 7] }, D = { values = [64, 1024, 96] } }"}}));
    EXPECT_EQ(s.dim_domains.at("N").values, (std::vector<std::int64_t>{4, 256, 7}));
    const op_spec none = load(make_spec({{6, "#"}, {18, "#"}}));
    EXPECT_FALSE(none.has_domain());
    EXPECT_TRUE(draw_held_out(none, 5, 2).empty());
}

struct bad_domain {
    const char* what;
    std::vector<std::pair<int, std::string>> replace;
    std::string field;
    int line;
    std::string message;
};

TEST_F(HeldOutTest, DomainErrorsNameLineAndField) {
    const bad_domain cases[] = {
        {"undeclared dim", {{6, "domain = { N = { min = 1, max = 9 }, D = { values = [64, 1024] }, T = { min = 1, max = 2 } }"}},
         "dims.domain.T", 6, "undeclared dim 'T'"},
        {"dim missing", {{6, "domain = { N = { min = 1, max = 5000 } }"}}, "dims.domain.D", 6,
         "the domain does not give dim 'D'"},
        {"unknown key", {{6, "domain = { N = { min = 1, maxx = 9 }, D = { values = [64, 1024] } }"}}, "dims.domain.N.maxx", 6,
         "did you mean 'max'?"},
        {"values and a range", {{6, "domain = { N = { values = [4, 256], min = 1 }, D = { values = [64, 1024] } }"}},
         "dims.domain.N.min", 6, "either 'values' or a range"},
        {"max below min", {{6, "domain = { N = { min = 9, max = 3 }, D = { values = [64, 1024] } }"}}, "dims.domain.N.max", 6,
         "smaller than min"},
        {"zero", {{6, "domain = { N = { min = 0, max = 3 }, D = { values = [64, 1024] } }"}}, "dims.domain.N.min", 6,
         "positive integer"},
        {"float bound", {{6, "domain = { N = { min = 1, max = 3.5 }, D = { values = [64, 1024] } }"}}, "dims.domain.N.max", 6,
         "positive integer, got a float"},
        {"no multiple in range", {{6, "domain = { N = { min = 1, max = 300 }, D = { min = 65, max = 70, multiple_of = 64 } }"}},
         "dims.domain.D.multiple_of", 6, "no multiple of 64"},
        {"repeated value", {{6, "domain = { N = { values = [4, 4] }, D = { values = [64, 1024] } }"}}, "dims.domain.N.values[1]",
         6, "listed twice"},
        {"listed shape outside", {{6, "domain = { N = { min = 1, max = 100 }, D = { values = [64, 1024] } }"}}, "dims.domain.N",
         6, "shape 'big' (line 11) has N = 256, outside the domain"},
        {"nothing left to draw", {{6, "domain = { N = { values = [4, 256] }, D = { values = [64, 1024] } }"}, {8, "name = \"a\""},
                                  {10, "use = [\"gate\"]\n[[shapes]]\nname = \"c\"\ndims = { N = 4, D = 1024 }\nuse = [\"bench\"]\n"
                                       "[[shapes]]\nname = \"e\"\ndims = { N = 256, D = 64 }\nuse = [\"bench\"]"}},
         "dims.domain", 6, "cannot draw held-out shape"},
        {"param domain of an unknown param", {{18, "param_domain = { epss = { min = 1e-7, max = 1e-3 } }"}},
         "modes.fwd.param_domain.epss", 18, "(did you mean 'eps'?)"},
        {"float bound for an integer param", {{18, "param_domain = { k = { min = 1, max = 6.5 } }"}},
         "modes.fwd.param_domain.k.max", 18, "must be an integer (the param is an integer)"},
        {"log with min 0", {{18, "param_domain = { eps = { min = 0, max = 1e-3, log = true } }"}},
         "modes.fwd.param_domain.eps.log", 18, "needs min > 0"},
        {"spec value outside", {{18, "param_domain = { eps = { min = 1e-5, max = 1e-3 } }"}}, "modes.fwd.param_domain.eps", 18,
         "lies outside its domain"},
        {"multiple_of for a float param", {{18, "param_domain = { eps = { min = 1e-7, max = 1e-3, multiple_of = 2 } }"}},
         "modes.fwd.param_domain.eps.multiple_of", 18, "for integer params"},
        {"reserved shape name", {{8, "name = \"heldout_1\""}}, "shapes[0].name", 8, "reserved"},
        {"empty init list", {{20, "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = [] },"}},
         "modes.fwd.inputs[0].init", 20, "at least one init form"},
        {"bad init in a list",
         {{20, "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = [\"normal(0, 1)\", \"norml(0, 9)\"] },"}},
         "modes.fwd.inputs[0].init[1]", 20, "unknown init function 'norml'"},
        {"repeated init",
         {{20, "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = [\"normal(0, 1)\", \"normal(0, 1)\"] },"}},
         "modes.fwd.inputs[0].init[1]", 20, "listed twice"},
        {"int_edges on a float", {{20, "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = \"int_edges(0, 9)\" },"}},
         "modes.fwd.inputs[0].init", 20, "int_edges is for integer dtypes"},
        {"spike row of an undeclared dim",
         {{20, "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = [\"normal(0, 1)\", \"spike(1, 1e4, K)\"] },"}},
         "modes.fwd.inputs[0].init[1]", 20, "undeclared dim 'K'"},
    };
    for (const auto& c : cases) {
        const spec_error e = load_error(make_spec(c.replace));
        EXPECT_EQ(e.get_field(), c.field) << c.what << ": " << e.what();
        EXPECT_EQ(e.get_line(), c.line) << c.what << ": " << e.what();
        EXPECT_TRUE(contains(e.what(), c.message)) << c.what << ": '" << e.what() << "' lacks '" << c.message << "'";
    }
}

TEST_F(HeldOutTest, DrawnShapesLieInTheDomainAreNotListedAndFitTheCap) {
    const op_spec s = load(make_spec());
    const auto cap = *kloop::spec::shape_footprint_bytes(s, s.shapes[1].dims);  // the largest gate shape
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        const auto drawn = draw_held_out(s, seed, 4);
        ASSERT_EQ(drawn.size(), 4u);
        std::set<std::pair<std::int64_t, std::int64_t>> seen;
        for (std::size_t k = 0; k < drawn.size(); ++k) {
            const auto& h = drawn[k];
            EXPECT_EQ(h.name, "heldout_" + std::to_string(k + 1));
            const auto n = h.dims.at("N"), d = h.dims.at("D");
            EXPECT_TRUE(s.dim_domains.at("N").contains(n)) << n;
            EXPECT_TRUE(s.dim_domains.at("D").contains(d)) << d;
            for (const auto& listed : s.shapes) EXPECT_NE(h.dims, listed.dims) << "seed " << seed;
            EXPECT_TRUE(seen.insert({n, d}).second) << "the same held-out shape twice";
            EXPECT_LE(*kloop::spec::shape_footprint_bytes(s, h.dims), cap);
            const auto& params = h.params.at("fwd");
            ASSERT_EQ(params.size(), 2u);
            EXPECT_GE(params[0].value, 1e-7);
            EXPECT_LE(params[0].value, 1e-3);
            EXPECT_NE(params[0].value, 1e-6);
            EXPECT_FALSE(params[0].is_integer);
            EXPECT_TRUE(params[1].is_integer);
            EXPECT_EQ(params[1].value, std::floor(params[1].value)) << "integer params stay integers";
            EXPECT_GE(params[1].value, 1);
            EXPECT_LE(params[1].value, 64);
            EXPECT_NE(params[1].value, 3);
        }
    }
}

TEST_F(HeldOutTest, TheDrawIsAFunctionOfTheSeed) {
    const op_spec s = load(make_spec());
    const auto a = draw_held_out(s, 77, 3);
    const auto b = draw_held_out(s, 77, 3);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_EQ(a[k].dims, b[k].dims);
        EXPECT_EQ(a[k].params.at("fwd")[0].value, b[k].params.at("fwd")[0].value);
    }
    int differ = 0;
    for (std::uint64_t seed = 100; seed < 110; ++seed) differ += draw_held_out(s, seed, 3)[0].dims != a[0].dims ? 1 : 0;
    EXPECT_GE(differ, 8) << "other seeds must draw other shapes";
}

TEST_F(HeldOutTest, DrawnShapesSatisfyEveryDimExpression) {
    // cu_seqlens(T) over B+1 offsets needs T >= B; the tensor of "T-B" elements needs T > B.
    const std::string text =
        "[op]\nname = \"var\"\nreference = \"ref.cpp\"\n"
        "[dims]\nnames = [\"B\", \"T\"]\ndomain = { B = { min = 1, max = 64 }, T = { min = 1, max = 512 } }\n"
        "[[shapes]]\nname = \"s\"\ndims = { B = 4, T = 100 }\nuse = [\"gate\"]\n"
        "[[shapes]]\nname = \"l\"\ndims = { B = 16, T = 400 }\nuse = [\"gate\"]\n"
        "[modes.fwd]\nentry = \"f\"\n"
        "inputs = [ { name = \"cu\", dtype = \"i32\", shape = [\"B+1\"], init = \"cu_seqlens(T)\" },\n"
        "           { name = \"x\", dtype = \"f32\", shape = [\"T-B\"] } ]\n"
        "outputs = [ { name = \"y\", dtype = \"f32\", shape = [\"T\"], atol = 0 } ]\n";
    const op_spec s = load(text);
    for (std::uint64_t seed = 0; seed < 30; ++seed)
        for (const auto& h : draw_held_out(s, seed, 3)) {
            EXPECT_GT(h.dims.at("T"), h.dims.at("B")) << "seed " << seed;
            EXPECT_TRUE(kloop::spec::shape_problem(s, h.dims).empty());
        }
    EXPECT_FALSE(kloop::spec::shape_problem(s, {{"B", 9}, {"T", 9}}).empty());
}

TEST_F(HeldOutTest, WithoutADimDomainHeldOutShapesReuseGateDimsWithDrawnParams) {
    const op_spec s = load(make_spec({{6, "#"}, {18, "param_domain = { eps = { values = [1e-5, 1e-6, 1e-2] } }"}}));
    const auto drawn = draw_held_out(s, 3, 3);
    ASSERT_EQ(drawn.size(), 3u);
    EXPECT_EQ(drawn[0].dims, s.shapes[0].dims);
    EXPECT_EQ(drawn[1].dims, s.shapes[1].dims);
    EXPECT_EQ(drawn[2].dims, s.shapes[0].dims);
    for (const auto& h : drawn) {
        const double eps = h.params.at("fwd")[0].value;
        EXPECT_TRUE(eps == 1e-5 || eps == 1e-2) << eps;
        EXPECT_EQ(h.params.at("fwd")[1].value, 3) << "a param without a domain keeps its value";
    }
}
