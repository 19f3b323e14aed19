"""The chunked CUDA kernels of examples/fla-chunk-simple-gla as a numpy model, in fp64, against the
token-by-token recurrence of ref.py's docstring: the backward's three passes (sgla_bwd.cuh, used
by v2 and v3: the state walk, the reverse walk, the per-chunk dq/dk/dv and dg), v3's forward (the
state walk, then o = diag(scale e^G) q h_c + A' v per chunk) and the forward that passes states
between segments of several chunks (segmented_forward: one state per segment through memory,
not one per chunk), with the kernels' chunk slots (dense n NT + c; varlen cu[n] // 64 + n + c, each slot
written once). It holds the decomposition the kernels implement on the CPU — dense and varlen,
empty and one-token sequences, ragged last chunks, strong decay (g about -8 a token: no exp of
a positive number); the kernels themselves are gated on a GPU by `kloop verify`.

With the states h_c, D_c and the operands A', M rounded to bf16, as the kernels round them, the
model also shows why dg is computed per chunk (the chunk's own reverse scan of w plus
exp(gl) <D_c, h_c> + sum_j k_j.dk_j^inter) and not as a scan of w over the whole sequence plus
<dht, S_T>: the two are equal in exact arithmetic, but the sequence-long scan leaves the
cancellation of dk's state term to the rounded states and misses the gate's 5e-3 on dg."""
import sys
import unittest

import numpy as np

rng = np.random.default_rng(0)
C = 64
_drop_state_term = False  # the negative test's switch


def bf16(x):
    """x rounded to bfloat16 (round to nearest even), as float64."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def rel_rms(ref, x):
    return np.sqrt(np.mean((ref - x) ** 2)) / np.sqrt(np.mean(ref ** 2))

def naive(q, k, v, g, h0, do, dht, scale, cu):
    Tt, H, K = q.shape; V = v.shape[2]; N = len(cu) - 1
    dq = np.zeros_like(q); dk = np.zeros_like(k); dv = np.zeros_like(v); dg = np.zeros_like(g)
    dh0 = np.zeros_like(h0)
    for n in range(N):
        b, e = cu[n], cu[n + 1]
        for h in range(H):
            S = [h0[n, h].copy()]
            for t in range(b, e):
                S.append(np.exp(g[t, h]) * S[-1] + np.outer(k[t, h], v[t, h]))
            dS = dht[n, h].copy()
            w = np.zeros(e - b)
            for t in range(e - 1, b - 1, -1):
                dS = dS + scale * np.outer(q[t, h], do[t, h])
                St = S[t - b + 1]
                dq[t, h] = scale * St @ do[t, h]
                dk[t, h] = dS @ v[t, h]
                dv[t, h] = k[t, h] @ dS
                dS = np.exp(g[t, h]) * dS
            dh0[n, h] = dS
            for t in range(b, e):
                w[t - b] = q[t, h] @ dq[t, h] - k[t, h] @ dk[t, h]
            tail = np.sum(dht[n, h] * S[-1])
            dg[b:e, h] = np.cumsum(w[::-1])[::-1] + tail
    return dq, dk, dv, dg, dh0

def slot_base(n, cu, varlen, NT):
    return cu[n] // C + n if varlen else n * NT

def chunked(q, k, v, g, h0, do, dht, scale, cu, varlen, rounded=False, dg_over="chunk"):
    """The backward's passes. rounded: the states and A', M rounded to bf16 as the kernels do.
    dg_over: "chunk" (the kernels' form) or "sequence" (w scanned over the whole sequence)."""
    rnd = bf16 if rounded else (lambda x: x)
    Tt, H, K = q.shape; V = v.shape[2]; N = len(cu) - 1
    NT = (cu[1] - cu[0] + C - 1) // C if not varlen else 0
    nslots = Tt // C + N + 1 if varlen else N * NT
    Hs = np.full((nslots, H, K, V), np.nan); Ds = np.full((nslots, H, K, V), np.nan)
    HT = np.zeros((N, H, K, V)); dh0 = np.full_like(h0, np.nan)
    def gates(b, e, c, h):
        t0 = b + c * C; L = min(C, e - t0)
        G = np.cumsum(g[t0:t0 + L, h]); return t0, L, G
    # pass 1 and 2: walks
    for n in range(N):
        b, e = cu[n], cu[n + 1]; nc = (e - b + C - 1) // C; sb = slot_base(n, cu, varlen, NT)
        for h in range(H):
            S = h0[n, h].copy()
            for c in range(nc):
                assert np.isnan(Hs[sb + c, h]).all()
                Hs[sb + c, h] = S
                t0, L, G = gates(b, e, c, h)
                r = np.exp(G[-1] - G)
                S = np.exp(G[-1]) * S + (k[t0:t0 + L, h] * r[:, None]).T @ v[t0:t0 + L, h]
            HT[n, h] = S
            D = dht[n, h].copy()
            for c in range(nc - 1, -1, -1):
                Ds[sb + c, h] = D
                t0, L, G = gates(b, e, c, h)
                r = scale * np.exp(G)
                D = np.exp(G[-1]) * D + (q[t0:t0 + L, h] * r[:, None]).T @ do[t0:t0 + L, h]
            dh0[n, h] = D
    # pass 3: per slot
    dq = np.full_like(q, np.nan); dk = np.full_like(k, np.nan); dv = np.full_like(v, np.nan); w = np.full_like(g, np.nan)
    dg = np.full_like(g, np.nan)
    bases = [slot_base(n, cu, varlen, NT) for n in range(N + 1)] if varlen else None
    for s in range(nslots):
        if varlen:
            n = max(i for i in range(N) if bases[i] <= s)  # the device does a binary search
        else:
            n = s // NT
        b, e = cu[n], cu[n + 1]; nc = (e - b + C - 1) // C; c = s - slot_base(n, cu, varlen, NT)
        if c >= nc:
            continue
        for h in range(H):
            t0, L, G = gates(b, e, c, h)
            qc, kc, vc, doc = q[t0:t0 + L, h], k[t0:t0 + L, h], v[t0:t0 + L, h], do[t0:t0 + L, h]
            Hc, Dc = rnd(Hs[s, h]), rnd(Ds[s, h])
            mask = np.tril(np.ones((L, L)))
            dec = np.exp(np.minimum(G[:, None] - G[None, :], 0)) * mask
            Ap = rnd(scale * dec * (qc @ kc.T))
            M = rnd(scale * dec * (doc @ vc.T))
            eG = scale * np.exp(G); eT = np.exp(G[-1] - G)
            dvc = Ap.T @ doc + eT[:, None] * (kc @ Dc)
            dqc = M @ kc + eG[:, None] * (doc @ Hc.T)
            dk_inter = 0 if _drop_state_term else eT[:, None] * (vc @ Dc.T)
            dkc = M.T @ qc + dk_inter
            dq[t0:t0 + L, h], dk[t0:t0 + L, h], dv[t0:t0 + L, h] = dqc, dkc, dvc
            wc = np.sum(qc * dqc, 1) - np.sum(kc * dkc, 1)
            w[t0:t0 + L, h] = wc
            # dg: the chunk-local cumsum's gradient scanned back in the chunk, plus gl's through h_{c+1}
            dg[t0:t0 + L, h] = np.cumsum(wc[::-1])[::-1] + np.exp(G[-1]) * np.sum(Dc * Hc) + np.sum(kc * dk_inter)
    if dg_over == "sequence":
        for n in range(N):
            b, e = cu[n], cu[n + 1]
            for h in range(H):
                dg[b:e, h] = np.cumsum(w[b:e, h][::-1])[::-1] + np.sum(dht[n, h] * HT[n, h])
    return dq, dk, dv, dg, dh0

def naive_forward(q, k, v, g, h0, scale, cu):
    """The recurrence token by token: (o, ht)."""
    o = np.zeros((q.shape[0], q.shape[1], v.shape[2]))
    ht = np.zeros_like(h0)
    for n in range(len(cu) - 1):
        for h in range(q.shape[1]):
            S = h0[n, h].copy()
            for t in range(cu[n], cu[n + 1]):
                S = np.exp(g[t, h]) * S + np.outer(k[t, h], v[t, h])
                o[t, h] = scale * q[t, h] @ S
            ht[n, h] = S
    return o, ht


def chunk_state_update(k, v, g, h, t0, L, S):
    """The state leaving chunk t0 .. t0 + L - 1 of head h from the one entering it:
    exp(gl) S + k^T diag(exp(gl - G)) v. Returns (it, gl)."""
    G = np.cumsum(g[t0:t0 + L, h])
    return np.exp(G[-1]) * S + (k[t0:t0 + L, h] * np.exp(G[-1] - G)[:, None]).T @ v[t0:t0 + L, h], G[-1]


def chunk_output(q, k, v, g, h, t0, L, S, scale):
    """The chunk's o from the state entering it: diag(scale e^G) q S + A' v."""
    G = np.cumsum(g[t0:t0 + L, h])
    qc, kc, vc = q[t0:t0 + L, h], k[t0:t0 + L, h], v[t0:t0 + L, h]
    dec = np.exp(np.minimum(G[:, None] - G[None, :], 0)) * np.tril(np.ones((L, L)))
    return scale * np.exp(G)[:, None] * (qc @ S) + (scale * dec * (qc @ kc.T)) @ vc


def chunked_forward(q, k, v, g, h0, scale, cu):
    """v3's forward: the state walk, then every chunk's o = diag(scale e^G) q h_c + A' v (the
    slots through which the states pass are the backward's, modelled in chunked())."""
    Tt, H = q.shape[:2]
    N = len(cu) - 1
    o = np.full((Tt, H, v.shape[2]), np.nan)
    for n in range(N):
        b, e = cu[n], cu[n + 1]
        for h in range(H):
            S = h0[n, h].copy()
            for t0 in range(b, e, C):
                L = min(C, e - t0)
                o[t0:t0 + L, h] = chunk_output(q, k, v, g, h, t0, L, S, scale)
                S, _ = chunk_state_update(k, v, g, h, t0, L, S)
    return o


def segmented_forward(q, k, v, g, h0, scale, cu, varlen, S):
    """The forward with states passed between segments of S chunks instead of between chunks, so
    that only one state per segment (not per chunk) goes through memory:
      1. per (sequence, segment, head), all at once: the segment's own contribution to the state
         leaving it, U = sum_t exp(G_end - G_t) k_t^T v_t (G the cumsum from the segment's start;
         walked chunk by chunk), and its decay a = exp(G_end);
      2. per (sequence, head): the states entering the segments, E_0 = h0, E_{s+1} = a_s E_s + U_s;
         ht = the last one;
      3. per (sequence, segment, head), all at once: v1's fused walk over the segment's chunks from
         E_s, writing o.
    Segment slots: dense n NS + s (NS = ceil(ceil(T / 64) / S)); varlen cu[n] // (64 S) + n + s, each
    written once (a sequence of len tokens spans at most floor(len / (64 S)) + 1 of them). Returns
    (o, ht)."""
    Tt, H, K = q.shape
    V = v.shape[2]
    N = len(cu) - 1
    W = C * S  # tokens per segment
    NS = (cu[1] - cu[0] + W - 1) // W if not varlen else 0
    nseg = Tt // W + N + 1 if varlen else N * NS
    U = np.full((nseg, H, K, V), np.nan)
    A = np.full((nseg, H), np.nan)

    def segments(n):
        b, e = cu[n], cu[n + 1]
        base = cu[n] // W + n if varlen else n * NS
        return [(base + s, b + s * W, min(e, b + (s + 1) * W)) for s in range((e - b + W - 1) // W)]

    for n in range(N):  # pass 1
        for slot, b, e in segments(n):
            for h in range(H):
                assert np.isnan(A[slot, h]), "segment slot written twice"
                Us, decay = np.zeros((K, V)), 1.0
                for t0 in range(b, e, C):
                    Us, gl = chunk_state_update(k, v, g, h, t0, min(C, e - t0), Us)
                    decay *= np.exp(gl)
                U[slot, h], A[slot, h] = Us, decay
    o = np.full((Tt, H, V), np.nan)
    ht = np.full((N, H, K, V), np.nan)
    for n in range(N):  # passes 2 and 3
        for h in range(H):
            E = h0[n, h].copy()
            for slot, b, e in segments(n):
                Sx = E.copy()
                for t0 in range(b, e, C):
                    L = min(C, e - t0)
                    o[t0:t0 + L, h] = chunk_output(q, k, v, g, h, t0, L, Sx, scale)
                    Sx, _ = chunk_state_update(k, v, g, h, t0, L, Sx)
                E = A[slot, h] * E + U[slot, h]
            ht[n, h] = E
    return o, ht


def draw_inputs(r, lens, H, K, V, strong, rnd=lambda x: x):
    """q, k, v, g, h0, do, dht and cu_seqlens for sequences of `lens` tokens; rnd rounds the
    token tensors (bf16: as the kernels' inputs are)."""
    Tt = sum(lens); cu = np.concatenate([[0], np.cumsum(lens)]).astype(int); N = len(lens)
    q, k = rnd(r.normal(size=(Tt, H, K))), rnd(r.normal(size=(Tt, H, K)))
    v, do = rnd(r.normal(size=(Tt, H, V))), rnd(r.normal(size=(Tt, H, V)))
    x = r.normal(-8 if strong else 0, 3 if strong else 1, size=(Tt, H)); g = -np.log1p(np.exp(-x))
    h0, dht = r.normal(size=(N, H, K, V)), r.normal(size=(N, H, K, V))
    return q, k, v, g, h0, do, dht, cu


def case(lens, H, K, V, varlen, strong):
    q, k, v, g, h0, do, dht, cu = draw_inputs(rng, lens, H, K, V, strong)
    scale = 0.3
    a = naive(q, k, v, g, h0, do, dht, scale, cu); bb = chunked(q, k, v, g, h0, do, dht, scale, cu, varlen)
    for name, x1, x2 in zip(["dq", "dk", "dv", "dg", "dh0"], a, bb):
        assert not np.isnan(x2).any(), name
        err = rel_rms(x1, x2)
        assert err < 1e-10, (name, err, lens, varlen, strong)
    err = rel_rms(a[3], chunked(q, k, v, g, h0, do, dht, scale, cu, varlen, dg_over="sequence")[3])
    assert err < 1e-10, ("dg over the sequence", err, lens, varlen, strong)
    (o1, ht1), o2 = naive_forward(q, k, v, g, h0, scale, cu), chunked_forward(q, k, v, g, h0, scale, cu)
    assert not np.isnan(o2).any()
    err = np.sqrt(np.mean((o1 - o2) ** 2)) / np.sqrt(np.mean(o1 ** 2))
    assert err < 1e-10, ("o", err, lens, varlen, strong)
    for S in (1, 2, 3):
        o3, ht3 = segmented_forward(q, k, v, g, h0, scale, cu, varlen, S)
        assert not np.isnan(o3).any() and not np.isnan(ht3).any(), ("segments", S)
        assert rel_rms(o1, o3) < 1e-10, ("o by segments", S, rel_rms(o1, o3), lens, varlen, strong)
        assert rel_rms(ht1, ht3) < 1e-10, ("ht by segments", S, lens, varlen, strong)


def dg_errors_rounded(lens, H, K, V, varlen, strong):
    """dg's rel_rms against the fp64 recurrence with bf16 inputs, states and operands: (the kernels'
    per-chunk form, the sequence-long scan)."""
    q, k, v, g, h0, do, dht, cu = draw_inputs(np.random.default_rng(1), lens, H, K, V, strong, bf16)
    scale = K ** -0.5
    ref = naive(q, k, v, g, h0, do, dht, scale, cu)[3]
    return tuple(rel_rms(ref, chunked(q, k, v, g, h0, do, dht, scale, cu, varlen, rounded=True, dg_over=f)[3])
                 for f in ("chunk", "sequence"))


class ChunkedModelTest(unittest.TestCase):
    def test_dense(self):
        case([130, 130], 2, 8, 4, False, False)

    def test_one_ragged_chunk_under_strong_decay(self):
        case([63], 1, 8, 8, False, True)

    def test_varlen_with_empty_and_one_token_sequences(self):
        case([64, 0, 1, 200, 65, 3], 2, 4, 8, True, False)
        case([64, 0, 1, 200, 65, 3], 2, 4, 8, True, True)
        case([129, 127], 1, 4, 4, True, True)

    def test_rounded_states_hold_dg_to_the_gate_tolerance_per_chunk_only(self):
        # The gate holds dg to rel_rms 5e-3 (op.toml). Per chunk, the rounding costs about 2e-3; the
        # sequence-long scan misses 5e-3, by far under strong decay (as v2's first kernel did on the GPU).
        for lens, varlen, strong in [([1000], False, False), ([1000], False, True), ([63], False, True),
                                     ([700, 0, 1, 90], True, True)]:
            per_chunk, over_sequence = dg_errors_rounded(lens, 2, 64, 64, varlen, strong)
            self.assertLess(per_chunk, 5e-3, (lens, strong))
            if strong:
                self.assertGreater(over_sequence, 2e-2, (lens, strong))
        self.assertGreater(dg_errors_rounded([700], 2, 128, 64, False, False)[1], 5e-3)

    def test_the_model_sees_a_wrong_term(self):
        # The decomposition without dk's state term is not the recurrence: the check can fail.
        global _drop_state_term
        _drop_state_term = True
        try:
            with self.assertRaises(AssertionError):
                case([130], 1, 4, 4, False, False)
        finally:
            _drop_state_term = False


if __name__ == "__main__":
    sys.exit(unittest.main())
