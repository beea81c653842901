"""pygpu.nn.utils: gradient clipping and the flattening of parameters into
one vector, with torch's names."""
from . import clip_grad, convert_parameters
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad", "convert_parameters", "clip_grad_norm_",
           "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
