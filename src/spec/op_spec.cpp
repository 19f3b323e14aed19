// kloop spec: look-ups on the op model and the backend names.
#include "spec/op_spec.hpp"

#include <algorithm>

namespace kloop::spec {

std::string to_string(backend_kind b) {
    switch (b) {
        case backend_kind::cpu: return "cpu";
        case backend_kind::cuda: return "cuda";
        case backend_kind::python: return "python";
    }
    return "?";
}

std::optional<backend_kind> backend_from_string(std::string_view s) {
    for (backend_kind b : {backend_kind::cpu, backend_kind::cuda, backend_kind::python})
        if (to_string(b) == s) return b;
    return std::nullopt;
}

const mode_spec* op_spec::find_mode(const std::string& mode_name) const {
    for (const mode_spec& m : modes)
        if (m.name == mode_name) return &m;
    return nullptr;
}

const shape_spec* op_spec::find_shape(const std::string& shape_name) const {
    for (const shape_spec& s : shapes)
        if (s.name == shape_name) return &s;
    return nullptr;
}

std::vector<const shape_spec*> op_spec::get_gate_shapes() const {
    std::vector<const shape_spec*> out;
    for (const shape_spec& s : shapes)
        if (s.gate) out.push_back(&s);
    return out;
}

bool op_spec::has_domain() const {
    if (!dim_domains.empty()) return true;
    for (const mode_spec& m : modes)
        for (const param_spec& p : m.params)
            if (p.domain) return true;
    return false;
}

std::vector<const shape_spec*> op_spec::get_bench_shapes() const {
    std::vector<const shape_spec*> out;
    for (const shape_spec& s : shapes)
        if (s.bench) out.push_back(&s);
    return out;
}

double op_spec::runner_timeout_s(double option_s) const {
    return std::max(option_s, python.min_timeout_s.value_or(0.0));
}

}  // namespace kloop::spec
