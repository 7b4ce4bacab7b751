"""torch's recurrent layers: `RNN`, `LSTM`, `GRU` and their cells, with torch's parameter
names (`weight_ih_l0`, `weight_hh_l0_reverse`, ...: a torch `state_dict` loads as it is), gate
order (LSTM: input, forget, cell, output; GRU: reset, update, new), shapes and defaults.

The input projections of a whole sequence are one product per layer and direction; the steps
then run one after the other, each a product with the hidden state and a few elementwise ops
that the Fusion layer fuses, so a sequence of length L records about 6 L ops per layer and
direction (lazily: nothing runs until a value is read). A `PackedSequence` input
(`lazyt.nn.utils.rnn`) runs as its padded batch with each sequence's state frozen past its
length (the output is packed again; `h_n` is each sequence's state at its own last step, the
reverse direction starts there). LSTM's `proj_size` projects each step's h.
"""
from __future__ import annotations

import math

from .. import creation
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat, stack, where
from ..tensor import Tensor
from .dropout import _probability, drop
from .module import Module
from .parameter import Parameter
from .rnn_utils import PackedSequence, pad_packed_sequence, repack

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _uniform(shape: tuple, bound: float, dtype, device) -> Parameter:
    return Parameter(creation.rand(shape, dtype=dtype, device=device) * (2 * bound) - bound)


def _rnn_step(mode: str, gx: Tensor, h: Tensor, c, w_hh: Tensor, b_hh, w_hr=None):
    """One step from the input's projection `gx` ([N, gates * H], bias_ih included): the new
    (h, c) (c is None but for LSTM; an LSTM's `w_hr` projects h to proj_size)."""
    gh = h @ w_hh.mT
    if b_hh is not None:
        gh = gh + b_hh
    if mode == "LSTM":
        i, f, g, o = (gx + gh).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h if w_hr is None else h @ w_hr.mT), c
    if mode == "GRU":
        xr, xz, xn = gx.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return (1 - z) * n + z * h, None
    pre = gx + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


class _RNNBase(Module):
    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, proj_size: int = 0):
        super().__init__()
        name = type(self).__name__
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size),
                       ("num_layers", num_layers)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgumentError(f"{name}: {arg} must be a positive int, got {v!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dropout = _probability(name, dropout)
        self.proj_size = proj_size
        out_size = proj_size or hidden_size      # the size of h (and of each output step)
        gates = _GATES[self.mode] * hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        self._names = []
        for layer in range(num_layers):
            for sfx in ("", "_reverse") if bidirectional else ("",):
                width = input_size if layer == 0 else out_size * (2 if bidirectional else 1)
                names = [f"weight_ih_l{layer}{sfx}", f"weight_hh_l{layer}{sfx}"]
                shapes = [(gates, width), (gates, out_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{sfx}", f"bias_hh_l{layer}{sfx}"]
                    shapes += [(gates,), (gates,)]
                if proj_size:
                    names.append(f"weight_hr_l{layer}{sfx}")
                    shapes.append((proj_size, hidden_size))
                for n, s in zip(names, shapes):
                    setattr(self, n, _uniform(s, bound, dtype, device))
                self._names.append(names)

    def flatten_parameters(self) -> None:
        """torch's call to pack the weights for cuDNN: nothing to do here."""

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, in torch's order."""
        return [[getattr(self, n) for n in names] for names in self._names]

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _check_input(self, x, packed: bool = False) -> tuple:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in (2, 3):
            raise ShapeError(f"{name}: input must be 2-D (unbatched) or 3-D, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        if not x.dtype.is_float:
            raise DTypeError(f"{name}: expected a floating-point input, got {x.dtype.name}")
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input of shape {x.shape} should end with "
                             f"input_size={self.input_size}")
        w = getattr(self, self._names[0][0])
        if x.dtype is not w.dtype:  # as torch: no silent promotion
            raise DTypeError(f"{name}: input dtype {x.dtype.name} does not match the weights' "
                             f"{w.dtype.name}")
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first and not packed:
            x = x.transpose(0, 1)
        return x, batched

    def _unpack(self, input) -> tuple:
        """(x, lengths or None, the PackedSequence or None): a packed input as its time-major
        padded batch (original order) and the host lengths."""
        if isinstance(input, PackedSequence):
            x, lens = pad_packed_sequence(input)
            return x, lens.numpy(), input
        return input, None, None

    def _state(self, h, n: int, batched: bool, what: str, like: Tensor,
               size: int | None = None) -> Tensor:
        want = (self.num_layers * self._directions, n, size or self.hidden_size)
        if h is None:
            return creation.zeros(want, dtype=like.dtype, device=like.device)
        if not isinstance(h, Tensor):
            raise DTypeError(f"{type(self).__name__}: {what} must be a Tensor, got "
                             f"{type(h).__name__}")
        if h.dtype is not like.dtype:
            raise DTypeError(f"{type(self).__name__}: {what} dtype {h.dtype.name} does not "
                             f"match the input's {like.dtype.name}")
        if not batched:
            h = h.unsqueeze(1)
        if h.shape != want:
            got = h.shape if batched else h.squeeze(1).shape
            raise ShapeError(f"{type(self).__name__}: {what} should have shape "
                             f"{want if batched else (want[0], want[2])}, got {got}")
        return h

    def _run(self, x: Tensor, h0: Tensor, c0, lengths=None):
        """x [L, N, in]: (output [L, N, D * H], h_n, c_n or None). With `lengths` (host
        ints per sequence) a sequence's state stays as it is past its length and its
        outputs there are 0."""
        seq = x.shape[0]
        live = None if lengths is None else [
            creation.tensor((lengths > t)[:, None], device=x.device) for t in range(seq)]
        hs, cs = [], []
        layer_in = x
        k = 0
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self._directions):
                names = self._names[k]
                w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
                b_ih = getattr(self, names[2]) if self.bias else None
                b_hh = getattr(self, names[3]) if self.bias else None
                w_hr = getattr(self, names[-1]) if self.proj_size else None
                gx = layer_in @ w_ih.mT  # every step's input projection in one product
                if b_ih is not None:
                    gx = gx + b_ih
                h = h0[k]
                c = None if c0 is None else c0[k]
                steps = range(seq - 1, -1, -1) if direction else range(seq)
                ys = [None] * seq
                for t in steps:
                    h_new, c_new = _rnn_step(self.mode, gx[t], h, c, w_hh, b_hh, w_hr)
                    if live is None:
                        h, c = h_new, c_new
                        ys[t] = h
                    else:
                        h = where(live[t], h_new, h)
                        c = None if c is None else where(live[t], c_new, c)
                        ys[t] = where(live[t], h_new, 0.0)
                outs.append(stack(ys, 0))
                hs.append(h)
                cs.append(c)
                k += 1
            layer_in = outs[0] if len(outs) == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = drop(layer_in, self.dropout)
        return layer_in, stack(hs, 0), None if c0 is None else stack(cs, 0)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _output(module: _RNNBase, out: Tensor, batched: bool, packed=None):
    """The output [L, N, D * H] in the caller's layout (packed again for a packed input)."""
    if packed is not None:
        return repack(out, packed)
    if not batched:
        return out.squeeze(1)
    return out.transpose(0, 1) if module.batch_first else out


class RNN(_RNNBase):
    """torch's `nn.RNN`: `h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)` (or relu with
    `nonlinearity="relu"`). `forward(input, hx=None)` returns `(output, h_n)`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNN: nonlinearity must be 'tanh' or 'relu', got "
                                       f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)

    def forward(self, input, hx: Tensor | None = None) -> tuple:  # noqa: A002
        x, lengths, packed = self._unpack(input)
        x, batched = self._check_input(x, packed is not None)
        h0 = self._state(hx, x.shape[1], batched, "hx", x)
        out, hn, _ = self._run(x, h0, None, lengths)
        return _output(self, out, batched, packed), hn if batched else hn.squeeze(1)


class GRU(_RNNBase):
    """torch's `nn.GRU` (gates reset, update, new). `forward(input, hx=None)` returns
    `(output, h_n)`."""

    mode = "GRU"

    def forward(self, input, hx: Tensor | None = None) -> tuple:  # noqa: A002
        x, lengths, packed = self._unpack(input)
        x, batched = self._check_input(x, packed is not None)
        h0 = self._state(hx, x.shape[1], batched, "hx", x)
        out, hn, _ = self._run(x, h0, None, lengths)
        return _output(self, out, batched, packed), hn if batched else hn.squeeze(1)


class LSTM(_RNNBase):
    """torch's `nn.LSTM` (gates input, forget, cell, output). `forward(input, (h0, c0))`
    returns `(output, (h_n, c_n))`. With `proj_size` > 0 each step's h is projected to
    proj_size by `weight_hr_l{k}` (h_0 and h_n have proj_size columns, c has hidden_size)."""

    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise InvalidArgumentError(f"LSTM: proj_size must be a non-negative int, got "
                                       f"{proj_size!r}")
        if proj_size >= hidden_size:
            raise InvalidArgumentError(f"LSTM: proj_size ({proj_size}) has to be smaller than "
                                       f"hidden_size ({hidden_size})")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype, proj_size)

    def forward(self, input, hx: tuple | None = None) -> tuple:  # noqa: A002
        x, lengths, packed = self._unpack(input)
        x, batched = self._check_input(x, packed is not None)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise InvalidArgumentError("LSTM: hx must be a pair (h_0, c_0) or None")
        h0 = self._state(None if hx is None else hx[0], x.shape[1], batched, "h_0", x,
                         self.proj_size or None)
        c0 = self._state(None if hx is None else hx[1], x.shape[1], batched, "c_0", x)
        out, hn, cn = self._run(x, h0, c0, lengths)
        if not batched:
            hn, cn = hn.squeeze(1), cn.squeeze(1)
        return _output(self, out, batched, packed), (hn, cn)


class _CellBase(Module):
    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = _GATES[self.mode] * hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = _uniform((gates, input_size), bound, dtype, device)
        self.weight_hh = _uniform((gates, hidden_size), bound, dtype, device)
        if bias:
            self.bias_ih = _uniform((gates,), bound, dtype, device)
            self.bias_hh = _uniform((gates,), bound, dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _input(self, x) -> tuple:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input must be [N, {self.input_size}] or "
                             f"[{self.input_size}], got {getattr(x, 'shape', type(x).__name__)}")
        if x.dtype is not self.weight_ih.dtype:
            raise DTypeError(f"{name}: input dtype {x.dtype.name} does not match the weights' "
                             f"{self.weight_ih.dtype.name}")
        batched = x.ndim == 2
        return (x if batched else x.unsqueeze(0)), batched

    def _hidden(self, h, x: Tensor, batched: bool, what: str) -> Tensor:
        if h is None:
            return creation.zeros((x.shape[0], self.hidden_size), dtype=x.dtype,
                                  device=x.device)
        if not isinstance(h, Tensor) or h.dtype is not x.dtype:
            raise DTypeError(f"{type(self).__name__}: {what} must be a Tensor of the input's "
                             f"dtype {x.dtype.name}")
        h = h if batched else h.unsqueeze(0)
        if h.shape != (x.shape[0], self.hidden_size):
            raise ShapeError(f"{type(self).__name__}: {what} should have shape "
                             f"{(x.shape[0], self.hidden_size)}, got {h.shape}")
        return h

    def _step(self, x: Tensor, h: Tensor, c):
        gx = x @ self.weight_ih.mT
        if self.bias_ih is not None:
            gx = gx + self.bias_ih
        return _rnn_step(self.mode, gx, h, c, self.weight_hh, self.bias_hh)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_CellBase):
    """torch's `nn.RNNCell`: one step, `h' = tanh(...)` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                                       f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, batched = self._input(input)
        h, _ = self._step(x, self._hidden(hx, x, batched, "hx"), None)
        return h if batched else h.squeeze(0)


class GRUCell(_CellBase):
    """torch's `nn.GRUCell`: one step."""

    mode = "GRU"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, batched = self._input(input)
        h, _ = self._step(x, self._hidden(hx, x, batched, "hx"), None)
        return h if batched else h.squeeze(0)


class LSTMCell(_CellBase):
    """torch's `nn.LSTMCell`: one step; returns `(h', c')`."""

    mode = "LSTM"

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        x, batched = self._input(input)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise InvalidArgumentError("LSTMCell: hx must be a pair (h, c) or None")
        h = self._hidden(None if hx is None else hx[0], x, batched, "h")
        c = self._hidden(None if hx is None else hx[1], x, batched, "c")
        h, c = self._step(x, h, c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
