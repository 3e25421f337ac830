"""Type variables shared by the typed signatures of ops, layers and losses.

Method signatures use these module-level variables, never the class's own ``Dims``: the
class's variable is already bound to the receiver, so reusing it makes overloads silently
fall through to a wrong one (pyright checks ``self: Tensor[T, *S, N]`` against the bound
variable, not a fresh one).
"""

from __future__ import annotations

from typing import Never, TypeVarTuple

from typing_extensions import TypeVar

from ._dims import Dim, LiteralSize, Open

T = TypeVar("T")  # whatever tape the operand carries
# The other operand's tape where a function form's union overload takes it apart from ``T``
# (``_typegen.binary``): the result is ``Tensor[T | U, ...]``, and ``NoTape`` is ``Never``.
U = TypeVar("U")
# A binary function form's other operand, whole, in its protocol overloads (``_broadcast``).
Operand = TypeVar("Operand")
# Its result, whole: a protocol's method returns it, so pyright solves it as one type and keeps
# the literal sizes inside (a ``*S`` solved through a protocol loses ``Literal[64]`` and then
# fails the match, which made every later overload run, at a cost exponential in the nesting).
Result = TypeVar("Result")
M = TypeVar("M")  # the model a tape records gradients for
# The model of the tape a backward pass starts from (``backward``'s ``M``). ty solves ``M`` in
# ``Tensor[OwnedTape[M]]`` from a join of two models' tapes (``OwnedTape[A] | OwnedTape[B]``,
# which no single ``M`` fits) to ``Unknown`` and accepts the call; it falls back to the
# default instead, and ``Never`` fits no traced tape, so the call is refused there as on the
# other checkers. A solved ``M`` never reads the default. (A TypeVar with a default goes after
# those without one: backward's other dims are ``*tuple[Any, ...]``, not ``*S``.)
BM = TypeVar("BM", default=Never)
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

# Sizes of a creation call (``sg.randn(8, 3)``, ``sg.zeros(Batch(32), 784)``): a Dim instance
# keeps its class and a literal in ``LiteralSize`` keeps its literal (Z*: every size is one).
# Otherwise each size is written ``Y0 | int``: a Dim solves Y0, an int solves nothing and the
# default gives Open, and an annotated target (``x: Tensor[NoTape, L[783]] = sg.zeros(783)``)
# solves Y0 from the annotation, as a stated size.
Z0 = TypeVar("Z0", bound=Dim | LiteralSize)
Z1 = TypeVar("Z1", bound=Dim | LiteralSize)
Z2 = TypeVar("Z2", bound=Dim | LiteralSize)
Z3 = TypeVar("Z3", bound=Dim | LiteralSize)
# A creation call's kept size where an earlier size is an int (``zeros(b, 3)``): a type
# variable after one with a default needs one too; a kept size is always solved.
W0 = TypeVar("W0", bound=Dim | LiteralSize, default=Open)
W1 = TypeVar("W1", bound=Dim | LiteralSize, default=Open)
W2 = TypeVar("W2", bound=Dim | LiteralSize, default=Open)
W3 = TypeVar("W3", bound=Dim | LiteralSize, default=Open)
Y0 = TypeVar("Y0", bound=int, default=Open)
Y1 = TypeVar("Y1", bound=int, default=Open)
Y2 = TypeVar("Y2", bound=int, default=Open)
Y3 = TypeVar("Y3", bound=int, default=Open)
