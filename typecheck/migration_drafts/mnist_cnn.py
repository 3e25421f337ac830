"""First draft: the classic MNIST CNN of pytorch/examples (mnist/main.py): conv-conv-maxpool-
dropout-fc-fc, log_softmax and nll_loss, Adadelta with a step decay, written the way a
PyTorch user writes it after skimming shapegrad's docs."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Net(nn.Module):
    def __init__(self) -> None:
        self.conv1 = nn.Conv2d[L[1], L[32]](3, 1)
        self.conv2 = nn.Conv2d[L[32], L[64]](3, 1)
        self.pool = nn.MaxPool2d(2)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear[L[9216], L[128]]()
        self.fc2 = nn.Linear[L[128], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[1], L[28], L[28]]) -> Tensor[T, Batch, L[10]]:
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.pool(x)
        x = self.dropout1(x)
        x = x.flatten(1)
        x = self.fc1(x)
        x = x.relu()
        x = self.dropout2(x)
        x = self.fc2(x)
        output = x.log_softmax(axis=1)
        return output


def main() -> None:
    sg.seed(1)
    model = Net()
    grads = model.alloc_grads()
    opt = sg.optim.Adadelta(model, lr=sg.optim.schedules.step(1.0, 1, gamma=0.7))
    data = sg.randn(4, 1, 28, 28)
    target = sg.randint(0, 10, (4,))
    model.train()
    for _ in range(2):
        grads.zero()
        output = model(data.trace(grads))
        loss = sg.losses.nll_loss(output, target)
        loss.backward()
        opt.update(model, grads)
    model.eval()
    output = model(data)
    pred = output.argmax(axis=1, keepdims=True)
    correct = (pred == target.reshape(pred.shape)).sum().item()
    print(loss.item(), correct)


if __name__ == "__main__":
    main()
