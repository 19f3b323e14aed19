"""The gate of an FLA-style loop (tests/ops/test_*.py in FLA): the candidate against the reference
on the example's gate shapes, forward and backward, with its tolerances (op.toml)."""
import pytest
import torch

SHAPES = [(512, 1024), (1000, 777), (2048, 4096), (2048, 8192)]
EPS = 1e-6


def rel_rms(a, b):
    return ((a.float() - b.float()).pow(2).mean().sqrt() / b.float().pow(2).mean().sqrt().clamp_min(1e-30)).item()


@pytest.mark.parametrize("n,d", SHAPES)
def test_fwd(candidate, ref, n, d):
    torch.manual_seed(n * d)
    x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
    w = (torch.rand(d, device="cuda") + 0.5).to(torch.bfloat16)
    y, r = torch.empty_like(x), torch.empty(n, device="cuda")
    y_ref, r_ref = torch.empty_like(x), torch.empty(n, device="cuda")
    candidate.rmsnorm_fwd(x, w, y, r, EPS)
    ref.rmsnorm_fwd_ref(x, w, y_ref, r_ref, EPS)
    torch.testing.assert_close(y, y_ref, rtol=1.6e-2, atol=1e-5)
    assert rel_rms(y, y_ref) <= 4e-3
    torch.testing.assert_close(r, r_ref, rtol=5e-5, atol=0)


@pytest.mark.parametrize("n,d", SHAPES)
def test_bwd(candidate, ref, n, d):
    torch.manual_seed(n * d + 1)
    x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
    w = (torch.rand(d, device="cuda") + 0.5).to(torch.bfloat16)
    r = torch.rand(n, device="cuda") * 1.5 + 0.5
    dy = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
    dx, dw = torch.empty_like(x), torch.empty_like(w)
    dx_ref, dw_ref = torch.empty_like(x), torch.empty_like(w)
    candidate.rmsnorm_bwd(x, w, r, dy, dx, dw)
    ref.rmsnorm_bwd_ref(x, w, r, dy, dx_ref, dw_ref)
    torch.testing.assert_close(dx, dx_ref, rtol=1.6e-2, atol=1e-5)
    assert rel_rms(dx, dx_ref) <= 4e-3
    assert rel_rms(dw, dw_ref) <= 4e-3
