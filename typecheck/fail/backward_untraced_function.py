r"""sg.backward() of outputs that were never traced.

runtime: untraced|not traced|traced"""

import shapegrad as sg


def main() -> None:
    x = sg.ones(3)
    sg.backward((x * 2.0).sum())  # E: backward() of untraced tensors
