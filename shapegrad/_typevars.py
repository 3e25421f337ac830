"""Type variables shared by the typed signatures of ops, layers and losses.

Method signatures use these module-level variables, never the class's own ``Dims``: the
class's variable is already bound to the receiver, so reusing it makes overloads silently
fall through to a wrong one (pyright checks ``self: Tensor[T, *S, N]`` against the bound
variable, not a fresh one).
"""

from __future__ import annotations

from typing import Never, TypeVar, TypeVarTuple

from typing_extensions import TypeVar as DefaultTypeVar

from ._dims import Dim

T = TypeVar("T")  # whatever tape the operand carries
M = TypeVar("M")  # the model a tape records gradients for
# The model of the tape a backward pass starts from (``backward``'s ``M``). ty solves ``M`` in
# ``Tensor[OwnedTape[M]]`` from a join of two models' tapes (``OwnedTape[A] | OwnedTape[B]``,
# which no single ``M`` fits) to ``Unknown`` and accepts the call; it falls back to the
# default instead, and ``Never`` fits no traced tape, so the call is refused there as on the
# other checkers. A solved ``M`` never reads the default. (A TypeVar with a default goes after
# those without one: backward's other dims are ``*tuple[Any, ...]``, not ``*S``.)
BM = DefaultTypeVar("BM", default=Never)
S = TypeVarTuple("S")  # the leading dims, passed through untouched
N = TypeVar("N")
K = TypeVar("K")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
F = TypeVar("F")
G = TypeVar("G")
H = TypeVar("H")
I = TypeVar("I")
J = TypeVar("J")
O = TypeVar("O")

# Sizes given as sg.Dim instances (reshape to Batch(32), Pixels(784)): a Dim instance keeps
# its class where an int literal would widen to int.
DA = TypeVar("DA", bound=Dim)
DB = TypeVar("DB", bound=Dim)
DC = TypeVar("DC", bound=Dim)
DD = TypeVar("DD", bound=Dim)
