// kloop core: non-finite doubles in JSON.
#include "core/json_number.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace kloop {

nlohmann::json json_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

double number_from_json(const nlohmann::json& j) {
    if (j.is_string()) {
        const auto s = j.get<std::string>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        return std::numeric_limits<double>::quiet_NaN();
    }
    return j.get<double>();
}

}  // namespace kloop
