"""v0 — flash-linear-attention's own Triton kernels, from the pinned PyPI package fla-core 0.6.0.

fwd: FLA's chunk_simple_gla (the public autograd function, called without grad): the gate's
chunk-local cumsum, the per-chunk states (chunk_fwd_h) and the output (chunk_fwd_o), 64-token
chunks — what a model calls.

bwd: FLA's chunked backward refuses to run here: fla-core 0.6.0 raises in chunk_bwd_dqkwg on a
Hopper GPU with Triton >= 3.4 and < 3.7.1 ("produces incorrect results for gated
chunk_bwd_dqkwg", FLA issue #640), and the H200 has Triton 3.6. So v0's backward is the fastest
FLA path that runs: fused_recurrent_bwd, the sequential fused kernel (forward sweep for dq,
reverse sweep for dk, dv, dh0 and dg), then FLA's own sum of its per-block partials and the cast
to bf16. broken/fla_chunk_bwd_unguarded.py calls the refused chunked backward anyway.

Outputs are returned (kloop copies them into its guarded buffers outside the timed window).
kloop rewrites inputs in place between calls; FLA caches index tensors derived from cu_seqlens
on the tensor object (fla.utils.tensor_cache), so the varlen entries pass a fresh view of
cu_seqlens each call — else a new batch in the same buffer would reuse the last batch's offsets.
"""
import torch
from fla.ops.common.fused_recurrent import fused_recurrent_bwd
from fla.ops.simple_gla import chunk_simple_gla


def _fwd(q, k, v, g, h0, scale, cu_seqlens=None):
    with torch.no_grad():
        o, ht = chunk_simple_gla(q, k, v, g=g, scale=scale, initial_state=h0, output_final_state=True,
                                 cu_seqlens=cu_seqlens)
    return o, ht


def _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens=None):
    dq, dk, dv, dg, _, _, dh0 = fused_recurrent_bwd(q=q, k=k, v=v, g=g, do=do, dht=dht, scale=scale,
                                                    initial_state=h0, cu_seqlens=cu_seqlens)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dg, dh0


def chunk_simple_gla_fwd(q, k, v, g, h0, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale)


def chunk_simple_gla_bwd(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale)


def chunk_simple_gla_fwd_varlen(q, k, v, g, h0, cu_seqlens, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale, cu_seqlens.view(-1))


def chunk_simple_gla_bwd_varlen(q, k, v, g, h0, cu_seqlens, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens.view(-1))
