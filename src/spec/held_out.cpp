// kloop spec: drawing held-out shapes and param values (see held_out.hpp for the rules).
#include "spec/held_out.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace kloop::spec {

namespace {

// Uniform or log-uniform (probability 1/2 each) integer on [lo, hi], lo >= 1 for the log case.
std::int64_t draw_integer(rng& r, std::int64_t lo, std::int64_t hi, bool log_always) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    const bool use_log = lo >= 1 && (log_always || r.next_below(2) == 1);
    if (!use_log) return lo + static_cast<std::int64_t>(r.next_below(span));
    const double a = portable::log(static_cast<double>(lo));
    const double b = portable::log(static_cast<double>(hi) + 1.0);
    const double v = std::floor(portable::exp(a + (b - a) * r.uniform01()));
    if (!(v >= static_cast<double>(lo))) return lo;
    if (v >= static_cast<double>(hi)) return hi;
    return static_cast<std::int64_t>(v);
}

std::int64_t draw_dim(rng& r, const dim_domain& d) {
    if (!d.values.empty()) return d.values[r.next_below(d.values.size())];
    const std::int64_t m = d.multiple_of;
    const std::int64_t klo = (d.min + m - 1) / m;  // min >= 1: plain ceiling
    const std::int64_t khi = d.max / m;
    return draw_integer(r, klo, khi, false) * m;
}

double draw_param_value(rng& r, const param_spec& p) {
    const param_domain& d = *p.domain;
    if (!d.values.empty()) return d.values[r.next_below(d.values.size())];
    if (p.is_integer) {
        const auto m = static_cast<double>(d.multiple_of);
        const auto klo = static_cast<std::int64_t>(std::ceil(d.min / m));
        const auto khi = static_cast<std::int64_t>(std::floor(d.max / m));
        return static_cast<double>(draw_integer(r, klo, khi, d.log)) * m;
    }
    double v = 0.0;
    if (d.log) {
        const double a = portable::log(d.min);
        const double b = portable::log(d.max);
        v = portable::exp(a + (b - a) * r.uniform01());
    } else {
        v = d.min + (d.max - d.min) * r.uniform01();
    }
    return std::clamp(v, d.min, d.max);
}

std::vector<param_spec> draw_params(rng& r, const mode_spec& m) {
    std::vector<param_spec> out = m.params;
    for (param_spec& p : out) {
        if (!p.domain) continue;
        double v = p.value;
        for (int k = 0; k < 64 && v == p.value; ++k) v = draw_param_value(r, p);
        p.value = v;
    }
    return out;
}

bool is_listed(const op_spec& s, const dim_env& dims) {
    return std::any_of(s.shapes.begin(), s.shapes.end(), [&](const shape_spec& sh) { return sh.dims == dims; });
}

std::string tensor_problem(const tensor_spec& t, const dim_env& dims) {
    for (std::size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d].eval(dims) <= 0) return "tensor '" + t.name + "' dimension " + std::to_string(d) + " '" +
                                               t.shape[d].get_text() + "' is not positive";
    std::vector<const initializer*> inits{&t.init};
    for (const auto& a : t.adversarial) inits.push_back(&a);
    for (const initializer* i : inits) {
        if (i->kind == init_kind::cu_seqlens && t.shape.size() == 1) {
            const std::int64_t len = t.shape[0].eval(dims);
            const std::int64_t total = i->total.eval(dims);
            if (len < 2) return "tensor '" + t.name + "': cu_seqlens needs at least 2 offsets";
            if (total < len - 1) return "tensor '" + t.name + "': cu_seqlens total is smaller than the number of sequences";
            if (t.type == kloop::dtype::i32 && total > std::numeric_limits<std::int32_t>::max())
                return "tensor '" + t.name + "': cu_seqlens total does not fit in i32";
        }
        if (i->kind == init_kind::spike && i->total.eval(dims) < 1)
            return "tensor '" + t.name + "': spike row length is not positive";
    }
    return {};
}

}  // namespace

std::optional<std::uint64_t> shape_footprint_bytes(const op_spec& s, const dim_env& dims) {
    std::uint64_t total = 0;
    try {
        for (const mode_spec& m : s.modes)
            for (const auto* list : {&m.inputs, &m.outputs})
                for (const tensor_spec& t : *list) {
                    std::uint64_t bytes = size_bytes(t.type);
                    for (const dim_expr& e : t.shape) {
                        const std::int64_t v = e.eval(dims);
                        if (v <= 0) return std::nullopt;
                        if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(v), &bytes)) return std::nullopt;
                    }
                    if (__builtin_add_overflow(total, bytes, &total)) return std::nullopt;
                }
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return total;
}

std::string shape_problem(const op_spec& s, const dim_env& dims) {
    try {
        for (const mode_spec& m : s.modes) {
            for (const auto* list : {&m.inputs, &m.outputs})
                for (const tensor_spec& t : *list)
                    if (auto why = tensor_problem(t, dims); !why.empty()) return "mode '" + m.name + "': " + why;
            for (const auto* cost : {&m.flops, &m.bytes})
                if (*cost && (*cost)->eval(dims) < 0) return "mode '" + m.name + "': a cost formula is negative";
        }
        if (!shape_footprint_bytes(s, dims)) return "a tensor's size overflows";
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

std::vector<held_out_shape> draw_held_out(const op_spec& s, std::uint64_t seed, int count) {
    std::vector<held_out_shape> out;
    if (count <= 0 || !s.has_domain()) return out;
    rng dim_rng(derive_seed(seed, "held-out:dims"));
    rng param_rng(derive_seed(seed, "held-out:params"));
    const auto gate = s.get_gate_shapes();

    std::uint64_t cap = 0;
    for (const shape_spec* g : gate) cap = std::max(cap, shape_footprint_bytes(s, g->dims).value_or(0));

    for (int k = 1; k <= count; ++k) {
        held_out_shape h;
        h.name = std::string(held_out_prefix) + std::to_string(k);
        if (s.dim_domains.empty()) {
            h.dims = gate[static_cast<std::size_t>(k - 1) % gate.size()]->dims;
        } else {
            bool found = false;
            for (int attempt = 0; attempt < held_out_max_attempts && !found; ++attempt) {
                dim_env dims;
                for (const std::string& d : s.dims) dims[d] = draw_dim(dim_rng, s.dim_domains.at(d));
                if (is_listed(s, dims)) continue;
                if (std::any_of(out.begin(), out.end(), [&](const held_out_shape& o) { return o.dims == dims; })) continue;
                if (!shape_problem(s, dims).empty()) continue;
                if (shape_footprint_bytes(s, dims).value_or(cap + 1) > cap) continue;
                h.dims = std::move(dims);
                found = true;
            }
            if (!found)
                throw spec_error(s.spec_file.string(), s.domain_line, "dims.domain",
                                 "cannot draw held-out shape " + std::to_string(k) + " of " + std::to_string(count) +
                                     " in " + std::to_string(held_out_max_attempts) +
                                     " tries: the domain leaves (almost) no shape that is not listed, gives every "
                                     "tensor valid sizes and is no larger than the largest listed gate shape (" +
                                     std::to_string(cap) + " bytes of tensors); widen the domain or list a larger "
                                     "gate shape");
        }
        for (const mode_spec& m : s.modes) h.params[m.name] = draw_params(param_rng, m);
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace kloop::spec
