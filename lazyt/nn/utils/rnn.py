"""`lazyt.nn.utils.rnn`: torch's variable-length sequence helpers, importable by torch's
path; they live in `lazyt/nn/rnn_utils.py`, next to the recurrent layers that use them."""
from ..rnn_utils import (PackedSequence, pack_padded_sequence, pack_sequence,  # noqa: F401
                         pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)
from ..rnn_utils import __all__  # noqa: F401
