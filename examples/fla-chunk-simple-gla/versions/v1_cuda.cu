// fla-chunk-simple-gla v1: the forward of FLA's chunk_simple_gla as one fused CUDA kernel, dense and
// varlen (sgla_fwd.cuh: the kernel and its design). The backward entries return
// KL_ERR_UNSUPPORTED: gate this version with --mode fwd --mode fwd_varlen (v2 adds the backward).
#include "sgla_fwd.cuh"

extern "C" int chunk_simple_gla_fwd(const kl_args* a) { return sgla_v1::fwd(a, false); }
extern "C" int chunk_simple_gla_fwd_varlen(const kl_args* a) { return sgla_v1::fwd(a, true); }
extern "C" int chunk_simple_gla_bwd(const kl_args*) { return KL_ERR_UNSUPPORTED; }
extern "C" int chunk_simple_gla_bwd_varlen(const kl_args*) { return KL_ERR_UNSUPPORTED; }
