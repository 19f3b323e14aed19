"""Reference of examples/fla-chunk-gla: the naive recurrence of gated linear attention with a
per-key-dimension decay (FLA's GLA), one token at a time, in fp32, rounded to the output dtype once.

Per sequence, per head (S is a K x V state, g_t a K-vector of log-decays per token and head):

    S_t = diag(exp(g_t)) S_{t-1} + k_t^T v_t    S_0 = h0
    o_t = scale * q_t S_t                         ht = S_T

Backward, with dS_t the gradient of the loss with respect to S_t (dS_T starts at dht):

    dS_t  = scale * q_t^T do_t + diag(exp(g_{t+1})) dS_{t+1}
    dq_t  = scale * S_t do_t^T     dk_t = dS_t v_t^T     dv_t = k_t dS_t     dh0 = diag(exp(g_1)) dS_1
    dg_i  = sum_{t >= i} (q_t * dq_t - k_t * dk_t)  +  rowsum(dht * S_T)       (elementwise over K)

(row j of S_t scales by exp(G_t[j]), G_t = g_1 + ... + g_t, so dL/dG_t[j] = q_t[j] dq_t[j] -
k_t[j] dk_t[j], plus sum_v dht[j, v] S_T[j, v] at t = T). No chunking, no exp of a positive
number: the recurrence never overflows, whatever the decay.

The sweeps are Triton kernels for the reason examples/fla-chunk-simple-gla/ref.py gives (a torch
loop over 16k tokens costs seconds per checked call): one program per sequence, head and block of
the state, the state in registers, every product an fp32 FMA (no tl.dot, nothing TF32). dq and
dk stay in fp32 for dg, summed in fp64 on the host. tests/examples/fla_reference_check.py holds
the sweeps to torch autograd of a plain fp64 loop.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _forward_sweep(q, k, v, g, h0, cu, out, state_out, scale, T,
                   H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                   WANT_DQ: tl.constexpr, VARLEN: tl.constexpr):
    # WANT_DQ = False: out = o (needs all of K; the program holds K x BV).
    # WANT_DQ = True:  out = dq, with v standing for do (needs all of V; the program holds BK x V)
    #                  — the state is recomputed from k and the real v, passed as state_out's pair.
    i_b, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    if VARLEN:
        bos = tl.load(cu + i_n).to(tl.int64)
        eos = tl.load(cu + i_n + 1).to(tl.int64)
    else:
        bos = i_n.to(tl.int64) * T
        eos = bos + T
    if WANT_DQ:
        o_k = i_b * BK + tl.arange(0, BK)
        o_v = tl.arange(0, BV)
    else:
        o_k = tl.arange(0, BK)
        o_v = i_b * BV + tl.arange(0, BV)
    m_k = o_k < K
    m_v = o_v < V
    m_s = m_k[:, None] & m_v[None, :]
    p_s = i_nh.to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
    s = tl.load(h0 + p_s, mask=m_s, other=0.0)
    for t in range(bos, eos):
        row = t * H + i_h
        b_k = tl.load(k + row * K + o_k, mask=m_k, other=0.0).to(tl.float32)
        b_v = tl.load(v + row * V + o_v, mask=m_v, other=0.0).to(tl.float32)
        b_g = tl.load(g + row * K + o_k, mask=m_k, other=0.0).to(tl.float32)
        s = s * tl.exp(b_g)[:, None] + b_k[:, None] * b_v[None, :]
        if WANT_DQ:
            b_do = tl.load(q + row * V + o_v, mask=m_v, other=0.0).to(tl.float32)
            tl.store(out + row * K + o_k, tl.sum(s * b_do[None, :], axis=1) * scale, mask=m_k)
        else:
            b_q = tl.load(q + row * K + o_k, mask=m_k, other=0.0).to(tl.float32)
            b_o = tl.sum(s * b_q[:, None], axis=0) * scale
            tl.store(out + row * V + o_v, b_o.to(out.dtype.element_ty), mask=m_v)
    tl.store(state_out + p_s, s, mask=m_s)


@triton.jit
def _reverse_sweep(q, k, v, g, do, dht, cu, dout, dh0, scale, T,
                   H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                   WANT_DK: tl.constexpr, VARLEN: tl.constexpr):
    # WANT_DK = True: dout = dk (fp32; all of V, the program holds BK x V), and dh0 is stored.
    # WANT_DK = False: dout = dv (all of K, the program holds K x BV).
    i_b, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    if VARLEN:
        bos = tl.load(cu + i_n).to(tl.int64)
        eos = tl.load(cu + i_n + 1).to(tl.int64)
    else:
        bos = i_n.to(tl.int64) * T
        eos = bos + T
    if WANT_DK:
        o_k = i_b * BK + tl.arange(0, BK)
        o_v = tl.arange(0, BV)
    else:
        o_k = tl.arange(0, BK)
        o_v = i_b * BV + tl.arange(0, BV)
    m_k = o_k < K
    m_v = o_v < V
    m_s = m_k[:, None] & m_v[None, :]
    p_s = i_nh.to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
    ds = tl.load(dht + p_s, mask=m_s, other=0.0)
    for i in range(0, eos - bos):
        row = (eos - 1 - i) * H + i_h
        b_q = tl.load(q + row * K + o_k, mask=m_k, other=0.0).to(tl.float32)
        b_do = tl.load(do + row * V + o_v, mask=m_v, other=0.0).to(tl.float32)
        ds += (b_q * scale)[:, None] * b_do[None, :]
        if WANT_DK:
            b_v = tl.load(v + row * V + o_v, mask=m_v, other=0.0).to(tl.float32)
            tl.store(dout + row * K + o_k, tl.sum(ds * b_v[None, :], axis=1), mask=m_k)
        else:
            b_k = tl.load(k + row * K + o_k, mask=m_k, other=0.0).to(tl.float32)
            b_dv = tl.sum(ds * b_k[:, None], axis=0)
            tl.store(dout + row * V + o_v, b_dv.to(dout.dtype.element_ty), mask=m_v)
        ds = ds * tl.exp(tl.load(g + row * K + o_k, mask=m_k, other=0.0).to(tl.float32))[:, None]
    if WANT_DK:
        tl.store(dh0 + p_s, ds, mask=m_s)


_BLOCK = 32  # the split dimension's block; the other is whole (K, V <= 256: <= 64 fp32 registers a thread)


def _launch(kernel, n_seq, H, K, V, split_k, *args, T, varlen):
    pk, pv = triton.next_power_of_2(K), triton.next_power_of_2(V)
    bk, bv = (min(_BLOCK, pk), pv) if split_k else (pk, min(_BLOCK, pv))
    blocks = triton.cdiv(K, bk) if split_k else triton.cdiv(V, bv)
    kernel[(blocks, n_seq * H)](*args, T, H=H, K=K, V=V, BK=bk, BV=bv, num_warps=4, **varlen)


def _forward(q, k, v, g, h0, o, ht, scale, cu):
    B, T, H, K = q.shape
    V = v.shape[-1]
    n_seq = h0.shape[0]
    flags = {"VARLEN": cu is not None}
    _launch(_forward_sweep, n_seq, H, K, V, False, q, k, v, g, h0, cu, o, ht, scale, T=T, varlen=dict(WANT_DQ=False, **flags))


def _backward(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale, cu):
    B, T, H, K = q.shape
    V = v.shape[-1]
    n_seq = h0.shape[0]
    flags = {"VARLEN": cu is not None}
    dq32 = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    dk32 = torch.empty(k.shape, dtype=torch.float32, device=q.device)
    s_last = torch.empty_like(h0)
    # dq: the forward sweep with do in q's place, split over K.
    _launch(_forward_sweep, n_seq, H, K, V, True, do, k, v, g, h0, cu, dq32, s_last, scale, T=T,
            varlen=dict(WANT_DQ=True, **flags))
    _launch(_reverse_sweep, n_seq, H, K, V, True, q, k, v, g, do, dht, cu, dk32, dh0, scale, T=T,
            varlen=dict(WANT_DK=True, **flags))
    _launch(_reverse_sweep, n_seq, H, K, V, False, q, k, v, g, do, dht, cu, dv, dh0, scale, T=T,
            varlen=dict(WANT_DK=False, **flags))
    dq.copy_(dq32.to(dq.dtype))
    dk.copy_(dk32.to(dk.dtype))
    # dL/dG_t per token, head and key dim, in fp64; <dht, S_T> at each sequence's last token; then the
    # reverse cumulative sum within each sequence.
    dG = q.double() * dq32.double() - k.double() * dk32.double()                         # [B, T, H, K]
    tail = (dht.double() * s_last.double()).sum(-1)                                      # [n_seq, H, K]
    if cu is None:
        dG[:, -1, :] += tail
        dg.copy_(dG.flip(1).cumsum(1).flip(1).to(dg.dtype))
    else:
        ends = cu[1:].long()
        dG[0, ends - 1, :] += tail
        rc = torch.cat([dG[0].flip(0).cumsum(0).flip(0), dG.new_zeros(1, H, K)])          # rc[t] = sum over t' >= t
        seq_of = torch.searchsorted(ends, torch.arange(T, device=q.device), right=True)
        dg.copy_((rc[:T] - rc[ends[seq_of]])[None].to(dg.dtype))


def chunk_gla_fwd_ref(q, k, v, g, h0, o, ht, scale):
    _forward(q, k, v, g, h0, o, ht, scale, None)


def chunk_gla_bwd_ref(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale):
    _backward(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale, None)


def chunk_gla_fwd_varlen_ref(q, k, v, g, h0, cu_seqlens, o, ht, scale):
    _forward(q, k, v, g, h0, o, ht, scale, cu_seqlens)


def chunk_gla_bwd_varlen_ref(q, k, v, g, h0, cu_seqlens, do, dht, dq, dk, dv, dg, dh0, scale):
    _backward(q, k, v, g, h0, do, dht, dq, dk, dv, dg, dh0, scale, cu_seqlens)
