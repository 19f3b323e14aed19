// kloop core: doubles in kloop's JSON records, non-finite values included.
//
// Responsibility: one spelling for every record kloop writes. JSON has no NaN or infinity
// (nlohmann writes them as null, which loses which one it was), so non-finite values are written
// as the strings "nan", "inf" and "-inf" and read back from them.
#pragma once

#include <nlohmann/json.hpp>

namespace kloop {

[[nodiscard]] nlohmann::json json_number(double v);
// Reads a number or one of the strings above; any other string reads as NaN.
[[nodiscard]] double number_from_json(const nlohmann::json& j);

}  // namespace kloop
