// kloop check: fill an input tensor from its spec initializer, reproducibly.
//
// Responsibility: turn (initializer, dtype, length, dims, seed) into values, identical on every
// machine and for every thread count (kloop::rng, no std:: distributions, no libm). Every value is
// computed in double and stored rounded into the dtype (check/element_access). Forms
// (spec/initializer.hpp):
//   normal(m, s)             m + s*z, z ~ N(0, 1)
//   uniform(lo, hi)          lo + (hi - lo)*u, u ~ U[0, 1)
//   randint(lo, hi)          integers uniform on [lo, hi) (lo, hi integral)
//   const(v)                 v
//   logsigmoid_normal(m, s)  log(sigmoid(x)) = -softplus(-x), x ~ N(m, s), computed as
//                            -(max(-x, 0) + log1p(exp(-|x|))): no overflow, no log(0)
//   cu_seqlens(total)        n+1 offsets (n = n_elems - 1) 0 = o0 < o1 < ... < on = total: the
//                            n-1 inner cut points are a uniformly random (n-1)-subset of
//                            {1, ..., total-1} (Floyd's sampling), so every composition of total
//                            into n positive lengths is equally likely
//   arange(start, step)      start + i*step
//   spike(std, peak, row)    the values of normal(0, std) (the same chunked streams), then, for
//                            every row r of `row` elements (the last row may be partial), one
//                            position p_r uniform on [0, row) and a sign s_r drawn in row order
//                            from rng(derive_seed(seed, "spike")): element r*row + p_r (when it
//                            exists) becomes s_r * peak
//   int_edges(lo, hi)        each element uniform over E = {lo, lo+1, -1, 0, 1, hi-1, hi} ∩
//                            [lo, hi] without repeats, in that order: E[next_below(|E|)]
//
// Streams (docs/correctness.md, "Input generation"): the element-wise random forms (normal,
// uniform, randint, logsigmoid_normal, int_edges, and spike's base values) cut the tensor into chunks of k_chunk_elems (64 Ki)
// elements; chunk c draws its elements in order from its own generator,
// rng(derive_chunk_seed(seed, c)). Chunks are filled in parallel on a thread_pool, and since a
// chunk's values depend on (seed, c) only, the bytes are the same on 1 thread or 16.
// cu_seqlens draws from one sequential stream, rng(seed). const and arange draw nothing.
//
// Errors (std::invalid_argument, thrown before anything is written): randint with hi <= lo or
// non-integral bounds; int_edges with hi < lo or non-integral bounds; spike with a row < 1; cu_seqlens with n_elems < 1, total < n (or total > 0 with n = 0), or total
// not exactly representable in the dtype; n_elems < 0.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "spec/dim_expr.hpp"
#include "spec/initializer.hpp"

namespace kloop {
class thread_pool;
}

namespace kloop::check {

// `seed` should already be specific to the tensor (e.g. derive_seed(trial_seed, name)). Runs on
// thread_pool::shared().
void fill_input(const spec::initializer& init, kloop::dtype t, void* data, std::int64_t n_elems,
                const spec::dim_env& dims, std::uint64_t seed);
// The same on `pool` (same bytes whatever its thread count).
void fill_input(const spec::initializer& init, kloop::dtype t, void* data, std::int64_t n_elems,
                const spec::dim_env& dims, std::uint64_t seed, thread_pool& pool);

// log(sigmoid(x)) computed stably (exposed for tests and reference code).
[[nodiscard]] double log_sigmoid(double x);

// The value set of int_edges(lo, hi), in draw order (exposed for tests).
[[nodiscard]] std::vector<double> int_edge_values(double lo, double hi);

}  // namespace kloop::check
