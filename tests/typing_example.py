"""Everyday pygpu code, type-checked against the stubs in CI (mypy) and
run by tests/packaging/test_typing.py, so both the stubs and the example
stay true."""
import io

import pygpu
import pygpu as torch

x: pygpu.Tensor = torch.zeros(2, 3, dtype=torch.float32, device="cpu")
y = torch.ones((2, 3)).to(torch.float16).to("cpu", torch.float32)
z = torch.matmul(x, y.t()) + 1.0
s: pygpu.Size = z.shape
n: int = s.numel() + z.size(0)
values, indices = z.max(dim=1)
top: pygpu.Tensor = z.max()
w = torch.add(x, y, alpha=2).sum(dim=(0, 1), keepdim=True)
a = x.numpy()
d = torch.device("cpu")
same: bool = torch.equal(x, y) and torch.is_tensor(x)
filled = torch.full((2,), 3.0).tolist()
buf = io.BytesIO()
torch.save({"w": w}, buf)
