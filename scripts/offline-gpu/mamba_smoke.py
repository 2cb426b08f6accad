"""Forward and backward through the Mamba kernels on the GPU (install_mamba.sh runs it after installing them,
before a job relies on them). Prints one line per kernel; exits non-zero when one fails."""
import sys

import torch

ok = True
try:
    from causal_conv1d import causal_conv1d_fn
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    x = torch.randn(2, 64, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(64, 4, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    causal_conv1d_fn(x, w, activation="silu").sum().backward()
    print("causal_conv1d forward+backward ok")
    u = torch.randn(2, 64, 128, device="cuda", requires_grad=True)
    delta = torch.rand(2, 64, 128, device="cuda", requires_grad=True)
    A = -torch.rand(64, 16, device="cuda", requires_grad=True)
    B = torch.randn(2, 16, 128, device="cuda", requires_grad=True)
    C = torch.randn(2, 16, 128, device="cuda", requires_grad=True)
    selective_scan_fn(u, delta, A, B, C).sum().backward()
    torch.cuda.synchronize()
    print("selective_scan forward+backward ok")
except Exception as e:  # noqa: BLE001  (report any failure as a line, then exit non-zero)
    ok = False
    print(f"mamba kernels failed: {type(e).__name__}: {e}")
sys.exit(0 if ok else 1)
