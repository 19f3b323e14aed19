"""FLA's chunked backward with its Hopper guard switched off.

fla-core 0.6.0 refuses chunk_bwd_dqkwg on Hopper with Triton >= 3.4 and < 3.7.1: "produces
incorrect results for gated chunk_bwd_dqkwg" (FLA issue #640). This candidate clears the flag the
guard reads and runs FLA's chunked backward (chunk_simple_gla_bwd, as FLA's autograd function
calls it: the gate's chunk-local cumsum in log2 units first, the reverse cumsum of dg after).
Whether kloop's gate catches the wrong results FLA warns about is what it is here for.
The forward is v0's (FLA's chunk_simple_gla).
"""
import torch
from fla.ops.common import chunk_o
from fla.ops.simple_gla import chunk_simple_gla
from fla.ops.simple_gla.chunk import chunk_simple_gla_bwd as _fla_chunk_bwd
from fla.ops.utils import chunk_local_cumsum, prepare_chunk_indices
from fla.ops.utils.constant import RCP_LN2

chunk_o.IS_NVIDIA_HOPPER = False  # the guard's condition reads this module global


def _fwd(q, k, v, g, h0, scale, cu_seqlens=None):
    with torch.no_grad():
        return chunk_simple_gla(q, k, v, g=g, scale=scale, initial_state=h0, output_final_state=True,
                                cu_seqlens=cu_seqlens)


def _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens=None):
    indices = prepare_chunk_indices(cu_seqlens, 64) if cu_seqlens is not None else None
    gc = chunk_local_cumsum(g, chunk_size=64, scale=RCP_LN2, cu_seqlens=cu_seqlens, chunk_indices=indices)
    dq, dk, dv, dg, dh0 = _fla_chunk_bwd(q=q, k=k, v=v, g=gc, g_gamma=None, initial_state=h0, do=do, dht=dht,
                                         scale=scale, cu_seqlens=cu_seqlens, chunk_indices=indices)
    dg = chunk_local_cumsum(dg, chunk_size=64, reverse=True, cu_seqlens=cu_seqlens, chunk_indices=indices)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dg.to(g.dtype), dh0


def chunk_simple_gla_fwd(q, k, v, g, h0, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale)


def chunk_simple_gla_bwd(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale)


def chunk_simple_gla_fwd_varlen(q, k, v, g, h0, cu_seqlens, o, ht, scale):
    return _fwd(q, k, v, g, h0, scale, cu_seqlens.view(-1))


def chunk_simple_gla_bwd_varlen(q, k, v, g, h0, cu_seqlens, do, dht, dq, dk, dv, dg, dh0, scale):
    return _bwd(q, k, v, g, h0, do, dht, scale, cu_seqlens.view(-1))
