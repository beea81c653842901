"""parameters_to_vector and vector_to_parameters (torch's rules)."""
from ... import _C

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, device):
    """The device of the first parameter; a later one elsewhere is
    refused, in torch's words."""
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is "
                        "currently not supported.")
    return device


def parameters_to_vector(parameters):
    """The parameters flattened and joined into one 1-D tensor (a copy),
    in order; all on one device."""
    device, flat = None, []
    for p in parameters:
        device = _check_device(p, device)
        flat.append(p.view(-1))
    return _C.cat(flat)


def _typename(obj):
    """torch.typename's name of a non-tensor: "list", "numpy.ndarray"."""
    cls = type(obj)
    module = cls.__module__ or ""
    if module in ("", "builtins"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def vector_to_parameters(vec, parameters):
    """Each parameter's data becomes the next numel() elements of vec, a
    view of vec in the parameter's shape (as torch's `param.data = ...`)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device, start = None, 0
    for p in parameters:
        device = _check_device(p, device)
        n = p.numel()
        p.data = vec[start:start + n].view(p.shape).data
        start += n
