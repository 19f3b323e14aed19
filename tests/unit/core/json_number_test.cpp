// Unit under test: core/json_number — non-finite doubles survive a JSON round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/json_number.hpp"

TEST(JsonNumberTest, FiniteValuesStayNumbers) {
    EXPECT_TRUE(kloop::json_number(1.5).is_number());
    EXPECT_DOUBLE_EQ(kloop::number_from_json(kloop::json_number(-2.25)), -2.25);
}

TEST(JsonNumberTest, NonFiniteValuesRoundTripThroughStrings) {
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(kloop::json_number(inf), "inf");
    EXPECT_EQ(kloop::json_number(-inf), "-inf");
    EXPECT_EQ(kloop::json_number(std::nan("")), "nan");
    EXPECT_EQ(kloop::number_from_json(kloop::json_number(inf)), inf);
    EXPECT_EQ(kloop::number_from_json(kloop::json_number(-inf)), -inf);
    EXPECT_TRUE(std::isnan(kloop::number_from_json(kloop::json_number(std::nan("")))));
    // Reparsing a dumped document keeps them too.
    const auto back = nlohmann::json::parse(nlohmann::json{{"x", kloop::json_number(-inf)}}.dump());
    EXPECT_EQ(kloop::number_from_json(back.at("x")), -inf);
}
