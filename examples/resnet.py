"""A small ResNet on scikit-learn's digits (8×8 images upsampled to 16×16), typed channels
through the whole network.

    python examples/resnet.py            # 20-25 s on 2 cores
    python examples/resnet.py --quick    # CI: fewer epochs, an accuracy floor (about 20 s)

Residual blocks with batch normalisation, a strided block with a 1×1 projection shortcut,
global average pooling; ``model.train()`` while training, ``model.eval()`` (running
statistics) to test.
"""

from __future__ import annotations

import time
from typing import Any, Generic, Literal as L, TypeVar

import numpy as np
from _cli import example_parser, parse
from train_digits import load_digits

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import BatchNorm2d, Conv2d, GlobalAvgPool2d, Linear, Module, SameConv2d

T = TypeVar("T")
I = TypeVar("I")
O = TypeVar("O")
SI = TypeVar("SI")
SO = TypeVar("SO")


class Batch(sg.Dim): ...


class Block(Module, Generic[I, O, SI, SO], checked=False):
    """``relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))`` from ``I`` channels of ``SI×SI``
    to ``O`` channels of ``SO×SO``; with ``stride=2`` the shortcut is a strided 1×1
    convolution (a projection), else the identity (``I`` = ``O``). Python cannot compute
    ``SO`` from ``SI`` and the stride, so the block states it with a checked ``sg.cast``."""

    def __init__(self, channels_in: I, channels_out: O, stride: int, generator: sg.Generator) -> None:
        # The sizes have the block's own types (I, O): a size of the wrong kind is a pyright error.
        cin, cout = channels_in, channels_out
        self.conv1 = Conv2d[I, O](
            3, stride=stride, padding=1, bias=False, in_channels=cin, out_channels=cout, generator=generator
        )
        self.bn1 = BatchNorm2d[O](cout)
        self.conv2 = SameConv2d[O, O](3, bias=False, in_channels=cout, out_channels=cout, generator=generator)
        self.bn2 = BatchNorm2d[O](cout)
        self.project = (
            Conv2d[I, O](1, stride=stride, bias=False, in_channels=cin, out_channels=cout, generator=generator)
            if stride != 1 or cin != cout
            else None
        )

    def __call__(self, x: Tensor[T, Batch, I, SI, SI]) -> Tensor[T, Batch, O, SO, SO]:
        h = self.bn1(self.conv1(x)).relu()
        h = self.bn2(self.conv2(h))
        shortcut: Any = x if self.project is None else self.project(x)
        return sg.cast((h + shortcut).relu(), Tensor[T, Batch, O, SO, SO])


class ResNet(Module):
    """16 → 16 (×2 blocks) → 32 (strided, projected) channels, pooled, 10 classes."""

    def __init__(self, generator: sg.Generator) -> None:
        self.stem = SameConv2d[L[1], L[16]](3, bias=False, generator=generator)  # keeps 16×16, typed
        self.stem_bn = BatchNorm2d[L[16]]()
        self.block1 = Block[L[16], L[16], L[16], L[16]](16, 16, 1, generator)
        self.block2 = Block[L[16], L[32], L[16], L[8]](16, 32, 2, generator)  # strided: 16×16 → 8×8
        self.block3 = Block[L[32], L[32], L[8], L[8]](32, 32, 1, generator)
        self.pool = GlobalAvgPool2d()
        self.head = Linear[L[32], L[10]](generator=generator)

    def __call__(self, x: Tensor[T, Batch, L[1], L[16], L[16]]) -> Tensor[T, Batch, L[10]]:
        h = self.stem_bn(self.stem(x)).relu()
        h2 = self.block3(self.block2(self.block1(h)))
        return self.head(self.pool(h2))


def upsample(images: np.ndarray) -> np.ndarray:
    """8×8 → 16×16 by repeating each pixel (nearest neighbour)."""
    return images.repeat(2, axis=2).repeat(2, axis=3)


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def accuracy(model: ResNet, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    x = sg.cast(sg.tensor(images), Tensor[NoTape, Batch, L[1], L[16], L[16]])
    correct = sg.argmax(model(x), axis=-1) == sg.tensor(labels)
    model.train()
    return correct.astype("float32").mean().item()


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--quick", action="store_true", help="5 epochs and an accuracy floor (CI)")
    parser.add_argument("--floor", type=float, default=0.95)
    args = parse(parser)
    epochs = 5 if args.quick else args.epochs
    train_x, train_y, test_x, test_y = load_digits()
    train_x, test_x = upsample(train_x), upsample(test_x)
    model = ResNet(sg.Generator(0))
    grads = model.alloc_grads()
    steps_per_epoch = len(train_y) // 32 + 1
    opt = sg.optim.Adam(model, lr=sg.optim.schedules.cosine(3e-3, epochs * steps_per_epoch))
    loader = sg.data.batches(train_x, train_y, batch_size=32, shuffle=True, generator=sg.Generator(1))
    from tqdm import tqdm

    started = time.perf_counter()
    for _ in tqdm(range(epochs), desc="ResNet", unit="epoch"):
        for xb, yb in loader:
            x = sg.cast(xb, Tensor[NoTape, Batch, L[1], L[16], L[16]])
            grads.zero()
            logits: Tensor[OwnedTape[ResNet], Batch, L[10]] = model(x.trace(grads))
            loss = sg.losses.cross_entropy(logits, sg.cast(yb, Tensor[NoTape, Batch]))
            loss.backward()
            opt.update(model, grads)
    seconds = time.perf_counter() - started
    test_accuracy = accuracy(model, test_x, test_y)
    sg.save(model, args.output / "resnet.safetensors", optimizer=opt)
    print("\n| parameters | epochs | steps | seconds | test accuracy |\n| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {model.num_parameters():,} | {epochs} | {epochs * len(loader)} | {seconds:.1f} | {test_accuracy:.2%} |")
    if args.quick:
        assert test_accuracy >= args.floor, f"test accuracy {test_accuracy:.4f} below the floor {args.floor}"


if __name__ == "__main__":
    main()
