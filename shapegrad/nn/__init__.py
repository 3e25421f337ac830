"""Modules and layers: a model is a ``Module`` subclass with a typed ``__call__``.

Layers carry their sizes in their type (``Linear[L[784], L[128]]()``); ``Sequential``
chains them and pyright rejects a chain whose sizes disagree.
"""

from typing import TYPE_CHECKING, NoReturn

from .._torch_names import missing_module_attribute
from .._typevars import T
from . import init
from ._activations import (
    ELU,
    GELU,
    SELU,
    Dropout,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSigmoid,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softplus,
    Tanh,
)
from ._attention import MultiHeadAttention, TransformerEncoderBlock, scaled_dot_product_attention
from ._containers import Residual, Sequential
from ._conv import (
    AvgPool2d,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    Doubles,
    Flatten,
    GlobalAvgPool2d,
    GlobalMaxPool2d,
    Halves,
    HalvesIndices,
    Indices,
    MaxPool2d,
    MaxUnpool2d,
    SameConv2d,
    SizeRule,
    conv2d,
    max_pool2d,
    max_unpool2d,
)
from ._linear import Embedding, Linear
from ._module import Chan, ChanLayer, Layer, Module, parameter
from ._norm import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm2d,
    LayerNorm,
    SyncBatchNorm1d,
    SyncBatchNorm2d,
)
from ._recurrent import GRU, LSTM, RNN
from ._spatial import ReflectionPad2d, Upsample
from ._state import IncompatibleKeys
from ._torch import from_torch

__all__ = [
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "SELU",
    "Hardtanh",
    "Identity",
    "LogSigmoid",
    "Mish",
    "SiLU",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Doubles",
    "Dropout",
    "Embedding",
    "Flatten",
    "GlobalAvgPool2d",
    "GlobalMaxPool2d",
    "GroupNorm",
    "Halves",
    "HalvesIndices",
    "Indices",
    "IncompatibleKeys",
    "InstanceNorm2d",
    "Chan",
    "ChanLayer",
    "Layer",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "MaxUnpool2d",
    "SameConv2d",
    "SizeRule",
    "Module",
    "MultiHeadAttention",
    "ReLU",
    "ReflectionPad2d",
    "Residual",
    "Sequential",
    "Sigmoid",
    "Softplus",
    "SyncBatchNorm1d",
    "SyncBatchNorm2d",
    "T",
    "Tanh",
    "TransformerEncoderBlock",
    "Upsample",
    "conv2d",
    "max_pool2d",
    "max_unpool2d",
    "from_torch",
    "init",
    "parameter",
    "scaled_dot_product_attention",
]

if not TYPE_CHECKING:  # hidden from the checkers: sg.nn.ReLU6 stays an unknown attribute to them

    def __getattr__(name: str) -> NoReturn:
        """``sg.nn.ReLU6`` and PyTorch's other layer names: an ``AttributeError`` naming
        shapegrad's spelling (``sg.nn.Hardtanh(0.0, 6.0)``); called only for a name the module lacks."""
        missing_module_attribute(__name__, name)
