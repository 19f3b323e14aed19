// kloop spec: held-out shapes and param values, drawn from the declared domains.
//
// Responsibility: given an op spec with a dim domain ([dims] domain) and/or param domains
// (param_domain of a mode) and a seed, draw shapes and param values the spec does not list, so
// that a candidate correct only on the listed shapes, or only for the listed param value, fails
// the gate. The draw is a pure function of (spec, seed, count): `--seed` replays it.
//
// Rules (docs/spec.md, "Domains and held-out shapes"):
//   - dims: every dim from its domain (a set: uniform; a range: uniform or log-uniform over its
//     multiples, each with probability 1/2, so small and large values both come up); the shape
//     must differ from every listed shape and every earlier draw, give every tensor of every mode
//     positive sizes (cu_seqlens and spike rules included) and costs >= 0, and its footprint
//     (bytes of all tensors of all modes) must not exceed that of the largest listed gate shape.
//     Rejection sampling, at most max_attempts tries per shape; when they run out the domain
//     cannot be honoured and a spec_error names [dims] domain.
//   - without a dim domain, held-out shape k takes the dims of the listed gate shape k-1 (in
//     turn), with drawn params;
//   - params: each param with a domain gets a value from it different from the spec's value
//     (when the domain has another); integer params stay integers. Params without a domain keep
//     the spec's value.
// Held-out shapes are named "heldout_1", "heldout_2", ... (the prefix is reserved: no listed
// shape may use it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/op_spec.hpp"

namespace kloop::spec {

inline constexpr std::string_view held_out_prefix = "heldout_";
inline constexpr int held_out_max_attempts = 20000;

struct held_out_shape {
    std::string name;                                      // "heldout_1", ...
    dim_env dims;
    std::map<std::string, std::vector<param_spec>> params; // per mode: the spec's params, drawn where a domain is given
};

// Bytes of every tensor of every mode at `dims`; nullopt when a tensor's size is not positive
// or overflows, or an expression cannot be evaluated.
[[nodiscard]] std::optional<std::uint64_t> shape_footprint_bytes(const op_spec& s, const dim_env& dims);

// Empty when `dims` satisfies every rule a listed shape must (positive tensor sizes, cu_seqlens
// and spike constraints, costs >= 0), else the first broken rule.
[[nodiscard]] std::string shape_problem(const op_spec& s, const dim_env& dims);

// `count` held-out shapes (none when the spec declares no domain or count <= 0). Throws
// spec_error (file, line and field of the domain) when the domain leaves no shape to draw.
[[nodiscard]] std::vector<held_out_shape> draw_held_out(const op_spec& s, std::uint64_t seed, int count);

}  // namespace kloop::spec
