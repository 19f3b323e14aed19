// Unit under test: check/comparison against the shared vectors tests/data/comparison_cases.json
// (tests/data/make_comparison_cases.py computes them element by element from the definitions).
// The Python worker's twin (python/kloop_worker/metrics.py) must reproduce the same file
// (python/tests/test_comparison_vectors.py): one definition of the metrics, two implementations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/comparison.hpp"
#include "core/dtype.hpp"

namespace {

using nlohmann::json;

double decode(const json& v) {
    if (v.is_string()) {
        const auto s = v.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        ADD_FAILURE() << "unknown value " << s;
    }
    return v.get<double>();
}

template <typename T>
std::vector<T> values(const json& a) {
    std::vector<T> out;
    for (const auto& v : a) {
        if constexpr (std::is_integral_v<T>) out.push_back(v.get<T>());
        else out.push_back(static_cast<T>(decode(v)));
    }
    return out;
}

template <typename T>
kloop::check::compare_metrics run(kloop::dtype t, const json& c, const kloop::spec::tolerance& tol) {
    const auto out = values<T>(c.at("out"));
    const auto ref = values<T>(c.at("ref"));
    return kloop::check::compare_outputs(t, out.data(), ref.data(), static_cast<std::int64_t>(out.size()), tol);
}

void expect_same_double(double got, const json& want, const std::string& field, const std::string& why) {
    const double w = decode(want);
    if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(got)) << why << ": " << field;
    } else if (field == "rel_rms" && std::isfinite(w) && w != 0.0) {
        EXPECT_NEAR(got, w, 1e-12 * w) << why << ": " << field;
    } else {
        EXPECT_EQ(got, w) << why << ": " << field;
    }
}

}  // namespace

TEST(ComparisonVectorsTest, EverySharedCaseIsReproduced) {
    std::ifstream in(std::string(KLOOP_TEST_SOURCE_DIR) + "/tests/data/comparison_cases.json");
    ASSERT_TRUE(in) << "tests/data/comparison_cases.json";
    const auto doc = json::parse(in);
    ASSERT_GE(doc.at("cases").size(), 10u);
    for (const auto& c : doc.at("cases")) {
        const auto why = c.at("why").get<std::string>();
        kloop::spec::tolerance tol;
        const auto& t = c.at("tolerance");
        if (t.contains("atol")) tol.atol = t.at("atol").get<double>();
        if (t.contains("rtol")) tol.rtol = t.at("rtol").get<double>();
        if (t.contains("rel_rms")) tol.rel_rms = t.at("rel_rms").get<double>();
        const auto dt = kloop::dtype_from_string(c.at("dtype").get<std::string>());
        ASSERT_TRUE(dt.has_value()) << why;
        kloop::check::compare_metrics m;
        switch (*dt) {
            case kloop::dtype::f32: m = run<float>(*dt, c, tol); break;
            case kloop::dtype::f64: m = run<double>(*dt, c, tol); break;
            case kloop::dtype::i32: m = run<std::int32_t>(*dt, c, tol); break;
            case kloop::dtype::i64: m = run<std::int64_t>(*dt, c, tol); break;
            default: FAIL() << why << ": a dtype the vectors do not use";
        }
        const auto& e = c.at("expected");
        EXPECT_EQ(m.n, e.at("n").get<std::int64_t>()) << why;
        EXPECT_EQ(m.mismatches, e.at("mismatches").get<std::int64_t>()) << why;
        EXPECT_EQ(m.first_bad, e.at("first_bad").get<std::int64_t>()) << why;
        EXPECT_EQ(m.nan_count, e.at("nan_count").get<std::int64_t>()) << why;
        EXPECT_EQ(m.inf_count, e.at("inf_count").get<std::int64_t>()) << why;
        EXPECT_EQ(m.first_nonfinite, e.at("first_nonfinite").get<std::int64_t>()) << why;
        EXPECT_EQ(m.ref_nonfinite, e.at("ref_nonfinite").get<std::int64_t>()) << why;
        expect_same_double(m.max_abs, e.at("max_abs"), "max_abs", why);
        expect_same_double(m.max_rel, e.at("max_rel"), "max_rel", why);
        expect_same_double(m.rel_rms, e.at("rel_rms"), "rel_rms", why);
    }
}
