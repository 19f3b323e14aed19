// kloop spec: the declared domain of a dim or a param ("[dims] domain", "param_domain").
//
// Responsibility: plain data saying which values a dim or a scalar param may take beyond the
// ones the shapes and params list — a range (optionally log-scaled, optionally multiples of a
// step) or a set of values — and whether a value lies inside it. The gate draws held-out shapes
// and param values from these domains (spec/held_out); docs/spec.md describes the TOML form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kloop::spec {

// A dim's domain: `values` (a set) or the multiples of `multiple_of` in [min, max].
struct dim_domain {
    std::vector<std::int64_t> values;  // non-empty: exactly these values (min/max unused)
    std::int64_t min = 1;
    std::int64_t max = 1;
    std::int64_t multiple_of = 1;
    int line = 0;                      // where it is declared in op.toml

    [[nodiscard]] bool contains(std::int64_t v) const;
    // "{ min = 1, max = 8192, multiple_of = 8 }" / "{ values = [777, 1024] }"
    [[nodiscard]] std::string describe() const;
};

// A param's domain: `values` (a set) or [min, max] — uniform, or log-uniform when `log`.
// Integer params take integer bounds and values, and draw integers (multiples of `multiple_of`).
struct param_domain {
    std::vector<double> values;        // non-empty: exactly these values
    double min = 0.0;
    double max = 0.0;
    bool log = false;                  // log-uniform on [min, max] (min > 0)
    std::int64_t multiple_of = 1;      // integer params only
    int line = 0;

    [[nodiscard]] bool contains(double v, bool is_integer) const;
    [[nodiscard]] std::string describe() const;
};

}  // namespace kloop::spec
