"""The classic MNIST CNN of pytorch/examples (mnist/main.py), ported to shapegrad: conv-conv-
maxpool-dropout-fc-fc, log_softmax and nll_loss, Adadelta with a step decay of 0.7, a couple
of steps on random 28×28 images, then the accuracy count in eval mode. The first draft is
typecheck/migration_drafts/mnist_cnn.py; each change from it is marked "# port:" (what our
docs say to write) or "# until #23 §N lands:"."""

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
        # port: a new name per shape (x is declared (Batch, 1, 28, 28); rebinding it to another
        # shape is an error in any typed Python)
        h = self.conv1(x)
        h = h.relu()
        h = self.conv2(h)
        h = h.relu()
        h = self.pool(h)
        h = self.dropout1(h)
        # port: flatten() keeps the batch axis (no start_dim); 64 channels of 12×12 are 9216,
        # a convolution's arithmetic Python cannot compute: stated, checked at run time
        flat = sg.cast(h.flatten(), Tensor[T, Batch, L[9216]])
        z = self.fc1(flat)
        z = z.relu()
        z = self.dropout2(z)
        z = self.fc2(z)
        output = z.log_softmax(axis=1)
        return output


def main() -> None:
    sg.seed(1)
    model = Net()
    grads = model.alloc_grads()
    opt = sg.optim.Adadelta(model, lr=sg.optim.schedules.step(1.0, 1, gamma=0.7))
    data = sg.randn(Batch(4), 1, 28, 28)  # port: a named batch size
    target = sg.randint(0, 10, (Batch(4),))  # port: a named size
    loss_value = 0.0  # port: defined before the loop (strict mode: possibly unbound)
    model.train()
    for _ in range(2):
        grads.zero()
        output = model(data.trace(grads))
        loss = sg.losses.nll_loss(output, target)
        loss.backward()
        opt.update(model, grads)
        loss_value = loss.item()
    model.eval()
    with sg.no_grad():  # port: the example's test() under torch.no_grad(), which the first draft left out
        output = model(data)
    pred = output.argmax(axis=1, keepdims=True)
    correct = (pred == target[..., None]).sum().item()  # port: [..., None] for view_as(pred)
    print(loss_value, correct)


if __name__ == "__main__":
    main()
