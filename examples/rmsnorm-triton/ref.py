"""Reference of examples/rmsnorm-triton: torch, fp32 math, rounded to the output dtype once.

fwd:  rstd[i] = 1 / sqrt(mean_j x[i,j]^2 + eps)         y[i,j] = x[i,j] * rstd[i] * w[j]
bwd:  g = dy * w     c[i] = mean_j g[i,j] * x[i,j]       (rstd is an input, as saved by fwd)
      dx[i,j] = rstd[i] * g[i,j] - x[i,j] * rstd[i]^3 * c[i]
      dw[j]   = sum_i dy[i,j] * x[i,j] * rstd[i]

Plain torch on whatever device the tensors live on (the GPU, or the CPU under TRITON_INTERPRET).
kloop holds TF32 off for it and for every candidate ([python] allow_tf32 = false). The fp32
sums' own rounding (~1e-6 relative for D = 8192) is far below the bf16 tolerances.
"""
import torch


def rmsnorm_fwd_ref(x, w, y, rstd, eps):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(dim=-1) + eps)
    y.copy_((xf * r[:, None] * w.float()).to(y.dtype))
    rstd.copy_(r)


def rmsnorm_bwd_ref(x, w, rstd, dy, dx, dw):
    xf, wf, dyf, r = x.float(), w.float(), dy.float(), rstd.float()
    g = dyf * wf
    c = (g * xf).mean(dim=-1)
    dx.copy_((r[:, None] * g - xf * (r.pow(3) * c)[:, None]).to(dx.dtype))
    dw.copy_((dyf * xf * r[:, None]).sum(dim=0).to(dw.dtype))
