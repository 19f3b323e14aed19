"""Holds the references of examples/fla-chunk-simple-gla and examples/fla-chunk-gla (Triton sweeps
of the fp32 recurrence) to torch autograd of a plain fp64 loop over tokens, on small shapes:
dense and varlen, ragged lengths, K != V, mild and strong decay, every output of fwd and bwd.

Run: python3 tests/examples/fla_reference_check.py   (ctest: examples.fla_reference, label gpu)
Exit 0: all agree; 1: a disagreement (printed); 77: no torch, triton or GPU (skipped).
"""
import importlib.util
import os
import sys

try:
    import torch
    import triton  # noqa: F401
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no GPU visible to torch")
    sys.exit(77)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOL = 2e-5  # fp32 sweeps against fp64 autograd: summation order and exp's rounding only
# dg is a difference of sums (q.dq - k.dk + <dht, S_T>) that cancels to a small value under strong
# decay: its fp32 inputs' rounding shows at 4e-5 of the result (seen for one token at decay ~ -8).
TOL_DG = 2e-4


def load(example):
    spec = importlib.util.spec_from_file_location("ref_" + example.replace("-", "_"),
                                                  os.path.join(ROOT, "examples", example, "ref.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def naive(q, k, v, g, h0, scale, cu, per_key):
    """fp64 loop over tokens; autograd gives the gradients. Shapes as in op.toml."""
    n_seq = h0.shape[0]
    T_all = q.shape[1]
    bounds = [(int(cu[i]), int(cu[i + 1])) for i in range(n_seq)] if cu is not None else None
    outs, finals = [], []
    for n in range(n_seq):
        if bounds is None:
            qs, ks, vs, gs = q[n], k[n], v[n], g[n]
        else:
            b, e = bounds[n]
            qs, ks, vs, gs = q[0, b:e], k[0, b:e], v[0, b:e], g[0, b:e]
        s = h0[n]
        o = []
        for t in range(qs.shape[0]):
            decay = gs[t].exp()[..., None] if per_key else gs[t].exp()[:, None, None]
            s = decay * s + ks[t][:, :, None] * vs[t][:, None, :]
            o.append(scale * (qs[t][:, :, None] * s).sum(1))
        outs.append(torch.stack(o))
        finals.append(s)
    o = torch.stack(outs) if bounds is None else torch.cat(outs)[None]
    assert o.shape[1] == (q.shape[1] if bounds is None else T_all)
    return o, torch.stack(finals)


def rel_rms(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float(((a - b).pow(2).mean().sqrt() / b.pow(2).mean().sqrt().clamp_min(1e-300)))


def check(example, name, per_key, B, T, H, K, V, n_seq, gate, seed):
    ref = load(example)
    torch.manual_seed(seed)
    dev = "cuda"
    varlen = n_seq is not None
    lead = (1, B * T) if varlen else (B, T)
    n = n_seq if varlen else B
    q, k = (torch.randn(*lead, H, K, device=dev).bfloat16() for _ in range(2))
    v, do = (torch.randn(*lead, H, V, device=dev).bfloat16() for _ in range(2))
    gshape = (*lead, H, K) if per_key else (*lead, H)
    g = gate(torch.randn(gshape, device=dev))
    h0, dht = (torch.randn(n, H, K, V, device=dev) for _ in range(2))
    cu = None
    if varlen:
        cuts = torch.randperm(B * T - 1)[: n - 1].sort().values + 1
        cu = torch.cat([torch.tensor([0]), cuts, torch.tensor([B * T])]).int().to(dev)
    scale = 0.3

    x = [t.double().requires_grad_() for t in (q, k, v, g, h0)]
    o_ref, ht_ref = naive(*x, scale, cu, per_key)
    ((o_ref * do.double()).sum() + (ht_ref * dht.double()).sum()).backward()
    want = {"o": o_ref, "ht": ht_ref, "dq": x[0].grad, "dk": x[1].grad, "dv": x[2].grad, "dg": x[3].grad,
            "dh0": x[4].grad}

    got = {"o": torch.empty_like(v), "ht": torch.empty_like(h0), "dq": torch.empty_like(q), "dk": torch.empty_like(k),
           "dv": torch.empty_like(v), "dg": torch.empty_like(g), "dh0": torch.empty_like(h0)}
    suffix = "_varlen" if varlen else ""
    fwd = getattr(ref, "%s_fwd%s_ref" % (name, suffix))
    bwd = getattr(ref, "%s_bwd%s_ref" % (name, suffix))
    extra = {"cu_seqlens": cu} if varlen else {}
    fwd(q=q, k=k, v=v, g=g, h0=h0, o=got["o"], ht=got["ht"], scale=scale, **extra)
    bwd(q=q, k=k, v=v, g=g, h0=h0, do=do, dht=dht, dq=got["dq"], dk=got["dk"], dv=got["dv"], dg=got["dg"],
        dh0=got["dh0"], scale=scale, **extra)
    bad = []
    for out, w in want.items():
        # bf16 outputs: one rounding (2^-9 relative at most)
        tol = 4e-3 if got[out].dtype != torch.float32 else TOL_DG if out == "dg" else TOL
        err = rel_rms(got[out], w.to(got[out].dtype))
        if not err <= tol:
            bad.append("%s rel_rms %.3g > %.3g" % (out, err, tol))
    label = "%s B%d T%d H%d K%d V%d %s %s" % (example, B, T, H, K, V, "varlen N=%d" % n_seq if varlen else "dense",
                                               gate.__name__)
    print(("FAIL " if bad else "ok   ") + label + ("" if not bad else ": " + "; ".join(bad)), flush=True)
    return not bad


def mild(x):
    return torch.nn.functional.logsigmoid(x)


def strong(x):
    return torch.nn.functional.logsigmoid(x * 3 - 8)


def main():
    ok = True
    for example, name, per_key in (("fla-chunk-simple-gla", "chunk_simple_gla", False),
                                   ("fla-chunk-gla", "chunk_gla", True)):
        for B, T, H, K, V, n_seq in ((2, 70, 2, 64, 32, None), (1, 130, 3, 32, 64, 4), (1, 1, 1, 16, 16, None)):
            for gate in (mild, strong):
                ok &= check(example, name, per_key, B, T, H, K, V, n_seq, gate, seed=7)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
