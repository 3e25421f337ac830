"""Weights in and out (issue #25): state_dict / load_state_dict, PyTorch weights through
from_torch, sg.nn.init through Module.apply, and Module.to(dtype=...): each keeps the
model's own type, and the layers' typed weights stay typed."""

from typing import Literal as L, TypeVar, assert_type

import numpy as np

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import IncompatibleKeys, Linear, Module, init

T = TypeVar("T")


class Batch(sg.Dim): ...


class Classifier(Module):
    def __init__(self) -> None:
        self.hidden = Linear[L[4], L[8]]()
        self.norm = sg.nn.BatchNorm1d[L[8]]()
        self.out = Linear[L[8], L[3]]()

    def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[3]]:
        return self.out(self.norm(self.hidden(x)).relu())


def reset(module: Module) -> None:
    if isinstance(module, Linear):
        # isinstance cannot know the sizes: the layer is Linear[Any, Any], typed enough here.
        init.kaiming_uniform_(module.weight, nonlinearity="relu", generator=sg.Generator(0))
        if module.bias is not None:
            init.zeros_(module.bias)


def main() -> None:
    model = assert_type(Classifier().to(dtype="float64"), Classifier)
    assert_type(model.apply(reset), Classifier)
    weight = init.orthogonal_(model.hidden.weight, gain=2.0)
    assert_type(weight, Tensor[NoTape, L[4], L[8]])

    state: dict[str, np.ndarray] = model.state_dict()
    other = Classifier().to(dtype="float64")
    keys: IncompatibleKeys = other.load_state_dict(state)
    missing: list[str] = keys.missing_keys

    # A PyTorch state_dict (torch tensors, or the arrays of a safetensors file it wrote):
    # PyTorch's Linear weight is (out, in); from_torch transposes it into ours.
    torch_state = {
        name: array.T if name.endswith("weight") and array.ndim == 2 else array for name, array in state.items()
    }
    result = sg.nn.from_torch(other, torch_state)
    unexpected: list[str] = result.unexpected_keys

    x: Tensor[NoTape, Batch, L[4]] = sg.randn(Batch(5), 4, dtype="float64")
    logits: Tensor[NoTape, Batch, L[3]] = other.eval()(x)
