"""`lazyt.nn.utils`: torch's `torch.nn.utils` — gradient clipping (`clip_grad`), parameter
vectors (`convert_parameters`), the hook-based `weight_norm` and `spectral_norm`,
parametrizations (`parametrize`, `parametrizations`) and the sequence helpers (`rnn`)."""
from . import parametrizations, parametrize, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "parametrize", "parametrizations", "rnn"]
