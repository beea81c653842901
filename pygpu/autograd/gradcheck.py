"""gradcheck: backward's gradients against central finite differences, in
float64, as torch.autograd.gradcheck."""
import numpy as np

__all__ = ["gradcheck"]


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ."""


def _jacobian_numerical(fn, inputs, i, eps):
    """Column j: (fn(x + eps e_j) - fn(x - eps e_j)) / 2 eps, input i."""
    from .. import from_numpy, no_grad
    x = inputs[i]
    base = x.detach().cpu().numpy().astype(np.float64)
    cols = []
    with no_grad():
        for j in range(base.size):
            outs = []
            for sign in (1, -1):
                v = base.copy()
                v.reshape(-1)[j] += sign * eps
                args = list(inputs)
                args[i] = from_numpy(v).to(x.device)
                out = fn(*args)
                outs.append(out.detach().cpu().numpy().astype(np.float64))
            cols.append(((outs[0] - outs[1]) / (2 * eps)).reshape(-1))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3,
              raise_exception=True):
    """True when, for every input that requires grad, the gradient that
    backward computes of each output element matches the finite
    differences of func; inputs should be float64 tensors."""
    from .. import Tensor, zeros_like
    from . import grad
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    out = func(*inputs)
    n_out = out.numel()
    diff = [k for k, x in enumerate(inputs)
            if isinstance(x, Tensor) and x.requires_grad]
    for i in diff:
        numerical = _jacobian_numerical(func, inputs, i, eps)
        analytical = np.zeros((n_out, inputs[i].numel()))
        for r in range(n_out):
            out = func(*inputs)
            seed = zeros_like(out).cpu().numpy()
            seed.reshape(-1)[r] = 1.0
            from .. import from_numpy
            g, = grad(out, inputs[i],
                      from_numpy(seed).to(out.device).to(out.dtype),
                      allow_unused=True)
            if g is not None:
                analytical[r] = g.cpu().numpy().astype(np.float64).reshape(-1)
        if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
            if raise_exception:
                raise GradcheckError(
                    f"Jacobian mismatch for output 0 with respect to input "
                    f"{i},\nnumerical:{numerical}\nanalytical:{analytical}")
            return False
    return True
