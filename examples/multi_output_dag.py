"""A DAG with three outputs: one backward pass over all of them, or one per output.

python examples/multi_output_dag.py
"""

from __future__ import annotations

import numpy as np

import shapegrad as sg


def main() -> None:
    grads = sg.Gradients()
    x = sg.tensor([0.5, -1.0, 2.0]).trace(grads)
    shared = x.tanh()
    energy = (shared * shared).sum()
    spread = shared.var()
    peak = shared.max()

    sg.backward(energy, spread, peak)  # one reverse pass over all three outputs
    together = grads[x].numpy()

    separate = sg.Gradients()
    y = sg.tensor([0.5, -1.0, 2.0]).trace(separate)
    h = y.tanh()
    for output in ((h * h).sum(), h.var(), h.max()):
        output.backward()  # each call accumulates into the same Gradients
    print("one pass :", np.round(together, 6))
    print("in turn  :", np.round(separate[y].numpy(), 6))
    assert np.allclose(together, separate[y].numpy())


if __name__ == "__main__":
    main()
