"""v0 — flash-linear-attention's own Triton kernels, from the pinned PyPI package fla-core 0.6.0.

fwd: FLA's chunk_gla (the public autograd function, called without grad): the gate's chunk-local
cumsum, the per-chunk states (chunk_fwd_h with a per-key gate), the intra-chunk attention in fp32
(chunk_gla_fwd_intra_gk) and the output (chunk_gla_fwd_o_gk).

bwd: FLA's chunked backward, chunk_gla_bwd, as ChunkGLAFunction.backward calls it. The backward
mode gets only the forward's inputs, so it first recomputes what FLA's forward would have saved:
the gate's cumsum and the intra-chunk attention A (chunk_gla_bwd recomputes the states itself).
The chunk size is the autograd function's: 64, or the next power of two >= T when T < 64 (16 at
least).

Outputs are returned (kloop copies them into its guarded buffers outside the timed window).
kloop rewrites inputs in place between calls; FLA caches index tensors derived from cu_seqlens
on the tensor object (fla.utils.tensor_cache), so the varlen entries pass a fresh view of
cu_seqlens each call — else a new batch in the same buffer would reuse the last batch's offsets.
"""
import torch
import triton
from fla.ops.gla import chunk_gla
from fla.ops.gla.chunk import chunk_gla_bwd as _fla_chunk_gla_bwd
from fla.ops.gla.chunk import chunk_gla_fwd_intra_gk
from fla.ops.utils import chunk_local_cumsum, prepare_chunk_indices
from fla.ops.utils.constant import RCP_LN2


def _fwd(q, k, v, g, h0, scale, cu_seqlens=None):
    with torch.no_grad():
        return chunk_gla(q, k, v, g, scale=scale, initial_state=h0, output_final_state=True, cu_seqlens=cu_seqlens)


def _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens=None):
    chunk_size = min(64, max(16, triton.next_power_of_2(q.shape[1])))
    indices = prepare_chunk_indices(cu_seqlens, chunk_size) if cu_seqlens is not None else None
    g_cumsum = chunk_local_cumsum(g, chunk_size, scale=RCP_LN2, cu_seqlens=cu_seqlens)
    A = chunk_gla_fwd_intra_gk(q=q, k=k, g=g_cumsum, scale=scale, cu_seqlens=cu_seqlens, chunk_size=chunk_size,
                               chunk_indices=indices)
    dq, dk, dv, dg, dh0 = _fla_chunk_gla_bwd(q=q, k=k, v=v, g=None, g_cumsum=g_cumsum, scale=scale, initial_state=h0,
                                        h=None, A=A, do=do, dht=dht, cu_seqlens=cu_seqlens, chunk_size=chunk_size,
                                        chunk_indices=indices)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dg, dh0


def chunk_gla_fwd(q, k, v, g, h0, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale)


def chunk_gla_bwd(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale)


def chunk_gla_fwd_varlen(q, k, v, g, h0, cu_seqlens, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale, cu_seqlens.view(-1))


def chunk_gla_bwd_varlen(q, k, v, g, h0, cu_seqlens, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens.view(-1))
