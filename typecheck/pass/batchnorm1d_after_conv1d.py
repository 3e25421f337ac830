"""BatchNorm1d inside a Sequential after a Conv1d (channels of a (B, C, L) signal) and after a
Linear (features), as PyTorch models write both: BatchNorm1d[C] chains as a Layer[C, C] and as
a ChanLayer[Chan[C], Chan[C]] (issue #23 §6)."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn


class Batch(sg.Dim): ...


def main() -> None:
    signal: Tensor[NoTape, Batch, L[4], L[32]] = sg.randn(Batch(2), 4, 32)
    feats: Tensor[NoTape, Batch, L[20]] = sg.randn(Batch(2), 20)

    # a 1-D conv stack (a TCN / keyword-spotting block): conv, norm, activation
    convs = nn.Sequential(
        nn.Conv1d[L[4], L[16]](3, padding=1),
        nn.BatchNorm1d[L[16]](),
        nn.ReLU(),
        nn.Conv1d[L[16], L[8]](3, padding=1),
        nn.BatchNorm1d[L[8]](),
        nn.ReLU(),
    )
    assert_type(convs, nn.Sequential[nn.Chan[L[4]], nn.Chan[L[8]]])
    maps = convs(signal)
    assert_type(maps, Tensor[NoTape, Batch, L[8], Open])

    # then Flatten and a Linear head, with the norm after the conv (no activation between)
    classifier = nn.Sequential(
        nn.Conv1d[L[4], L[8]](3, padding=1), nn.BatchNorm1d[L[8]](), nn.Flatten(), nn.Linear[L[256], L[3]]()
    )
    assert_type(classifier(signal), Tensor[NoTape, Batch, L[3]])

    # BatchNorm1d after a Linear, as before
    mlp = nn.Sequential(nn.Linear[L[20], L[16]](), nn.BatchNorm1d[L[16]](), nn.ReLU(), nn.Linear[L[16], L[2]]())
    assert_type(mlp, nn.Sequential[L[20], L[2]])
    assert_type(mlp(feats), Tensor[NoTape, Batch, L[2]])

    # the global-batch statistics variant chains the same way
    assert_type(
        nn.Sequential(nn.Conv1d[L[4], L[16]](3), nn.BatchNorm1d[L[16]]()),
        nn.Sequential[nn.Chan[L[4]], nn.Chan[L[16]]],
    )
    print(maps.shape, mlp(feats).shape)


if __name__ == "__main__":
    main()
