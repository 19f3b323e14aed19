// fla-chunk-simple-gla v2: v1's fused forward (sgla_fwd.cuh) and the CUDA backward (sgla_bwd.cuh: two
// state walks into stream-ordered scratch, one CTA per chunk and head for dq, dk, dv, a reverse scan
// for dg), dense and varlen: every mode of the op.
#include "sgla_bwd.cuh"

extern "C" int chunk_simple_gla_fwd(const kl_args* a) { return sgla_v1::fwd(a, false); }
extern "C" int chunk_simple_gla_fwd_varlen(const kl_args* a) { return sgla_v1::fwd(a, true); }
extern "C" int chunk_simple_gla_bwd(const kl_args* a) { return sgla_v2::bwd(a, false); }
extern "C" int chunk_simple_gla_bwd_varlen(const kl_args* a) { return sgla_v2::bwd(a, true); }
