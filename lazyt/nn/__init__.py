"""`lazyt.nn`: modules, parameters and layers for building models, plus checkpoints."""
from .activation import (CELU, ELU, GELU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                         LogSigmoid, Mish, ReLU, ReLU6, Sigmoid, SiLU, Softmin, Softplus,
                         Softsign, Tanh)
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .embedding import Embedding
from . import functional
from .linear import Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, KLDivLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)
from .module import (LoadResult, MissingMemberError, Module, ModuleError, StateDictError,
                     functional_call)
from .normalization import LayerNorm, RMSNorm
from .parameter import Parameter
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d,
                      MaxPool2d, MaxUnpool1d, MaxUnpool2d)
from .serialization import (CheckpointError, from_checkpoint_state, load_checkpoint_state,
                            to_checkpoint_state)

__all__ = [
    "Module", "Parameter", "Linear", "Identity", "Embedding", "LayerNorm", "RMSNorm", "GELU",
    "SiLU", "ReLU", "Tanh", "Sigmoid", "Dropout", "Sequential", "ModuleList", "ModuleDict",
    "functional_call", "StateDictError", "ModuleError", "MissingMemberError", "CheckpointError", "LoadResult",
    "to_checkpoint_state", "from_checkpoint_state", "load_checkpoint_state", "functional",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "L1Loss",
    "SmoothL1Loss", "KLDivLoss", "ELU", "CELU", "SELU", "LeakyReLU", "ReLU6", "Hardtanh",
    "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "Mish", "LogSigmoid", "Softmin",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "MaxUnpool1d", "MaxUnpool2d",
]

# upsampling modules and torch.nn.init (lazyt/nn/interpolate.py, lazyt/nn/init.py)
from . import init  # noqa: E402
from .interpolate import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402

__all__ += ["init", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]

# more of torch's modules: shape, distance, normalization and activation layers
from .activation import (GLU, Hardshrink, LogSoftmax, Softmax, Softshrink,  # noqa: E402
                         Tanhshrink, Threshold)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .linear import Flatten, Unflatten  # noqa: E402
from .loss import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss,  # noqa: E402
                   HuberLoss, MarginRankingLoss, MultiLabelSoftMarginLoss, PoissonNLLLoss,
                   SoftMarginLoss, TripletMarginLoss)
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm  # noqa: E402

__all__ += ["Softmax", "LogSoftmax", "GLU", "Hardshrink", "Softshrink", "Tanhshrink",
            "Threshold", "CosineSimilarity", "PairwiseDistance", "Flatten", "Unflatten",
            "HuberLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
            "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
            "PoissonNLLLoss", "GaussianNLLLoss", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
            "BatchNorm3d"]

# attention and transformer layers (torch's names and state_dict keys)
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder,  # noqa: E402
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)

__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
            "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]

# recurrent layers (torch's names and state_dict keys)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: E402

__all__ += ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

# padding, pixel shuffle, PReLU, Bilinear, instance norm and the parameter containers
from .layers import (Bilinear, CircularPad1d, CircularPad2d, CircularPad3d,  # noqa: E402
                     ConstantPad1d, ConstantPad2d, ConstantPad3d, InstanceNorm1d,
                     InstanceNorm2d, InstanceNorm3d, ParameterDict, ParameterList,
                     PixelShuffle, PixelUnshuffle, PReLU, ReflectionPad1d, ReflectionPad2d,
                     ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                     ZeroPad1d, ZeroPad2d, ZeroPad3d)

__all__ += ["Bilinear", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
            "ConstantPad2d", "ConstantPad3d", "InstanceNorm1d", "InstanceNorm2d",
            "InstanceNorm3d", "ParameterDict", "ParameterList", "PixelShuffle",
            "PixelUnshuffle", "PReLU", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
            "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d",
            "ZeroPad2d", "ZeroPad3d"]

# torch.nn.utils: clipping, parameter vectors, weight/spectral norm, parametrizations, rnn
from . import utils  # noqa: E402

__all__ += ["utils"]

# channel dropout, shuffles, adaptive max pooling
from .layers import (AlphaDropout, ChannelShuffle, Dropout1d, Dropout2d,  # noqa: E402
                     Dropout3d, FeatureAlphaDropout, Fold, Softmax2d, Unfold)
from .pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d  # noqa: E402
from .pooling import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, LPPool1d,  # noqa: E402
                      LPPool2d, LPPool3d, MaxPool3d, MaxUnpool3d)

__all__ += ["AlphaDropout", "ChannelShuffle", "Dropout1d", "Dropout2d", "Dropout3d",
            "FeatureAlphaDropout", "Softmax2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
            "Fold", "Unfold"]

__all__ += ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "LPPool1d", "LPPool2d",
            "LPPool3d", "MaxPool3d", "MaxUnpool3d"]

# class margin losses, random and response-normalizing layers
from .activation import RReLU  # noqa: E402
from .loss import MultiLabelMarginLoss, MultiMarginLoss  # noqa: E402
from .normalization import LocalResponseNorm  # noqa: E402

__all__ += ["RReLU", "MultiMarginLoss", "MultiLabelMarginLoss", "LocalResponseNorm"]
from .embedding import EmbeddingBag  # noqa: E402

__all__ += ["EmbeddingBag"]

# connectionist temporal classification
from .loss import CTCLoss  # noqa: E402

__all__ += ["CTCLoss"]

# adaptive softmax, fractional pooling, synchronized batch norm and the legacy LRN
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .extras import CrossMapLRN2d, SyncBatchNorm, TripletMarginWithDistanceLoss  # noqa: E402
from .fractional_pool import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402

__all__ += ["AdaptiveLogSoftmaxWithLoss", "FractionalMaxPool2d", "FractionalMaxPool3d",
            "TripletMarginWithDistanceLoss", "SyncBatchNorm", "CrossMapLRN2d"]

# lazy modules: the input size comes from the first call (lazyt/nn/lazy.py)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,  # noqa: E402
                   LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                   LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                   LazyInstanceNorm3d, LazyLinear, LazyModuleMixin)
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: E402

__all__ += ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
            "LazyModuleMixin", "UninitializedParameter", "UninitializedBuffer"]
