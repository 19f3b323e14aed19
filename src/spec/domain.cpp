// kloop spec: membership and descriptions of dim and param domains.
#include "spec/domain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kloop::spec {

namespace {

std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

bool dim_domain::contains(std::int64_t v) const {
    if (!values.empty()) return std::find(values.begin(), values.end(), v) != values.end();
    return v >= min && v <= max && v % multiple_of == 0;
}

std::string dim_domain::describe() const {
    std::string out = "{ ";
    if (!values.empty()) {
        out += "values = [";
        for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
        return out + "] }";
    }
    out += "min = " + std::to_string(min) + ", max = " + std::to_string(max);
    if (multiple_of != 1) out += ", multiple_of = " + std::to_string(multiple_of);
    return out + " }";
}

bool param_domain::contains(double v, bool is_integer) const {
    if (!values.empty()) return std::find(values.begin(), values.end(), v) != values.end();
    if (!(v >= min && v <= max)) return false;
    if (is_integer) {
        if (v != std::floor(v)) return false;
        return std::fmod(v, static_cast<double>(multiple_of)) == 0.0;
    }
    return true;
}

std::string param_domain::describe() const {
    std::string out = "{ ";
    if (!values.empty()) {
        out += "values = [";
        for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + number(values[i]);
        return out + "] }";
    }
    out += "min = " + number(min) + ", max = " + number(max);
    if (log) out += ", log = true";
    if (multiple_of != 1) out += ", multiple_of = " + std::to_string(multiple_of);
    return out + " }";
}

}  // namespace kloop::spec
