"""Run-time checking of Tensor annotations with jaxtyping + beartype."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Literal as L, TypeVar

import pytest
from jaxtyping import TypeCheckError

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Features(sg.Dim): ...


@sg.checked
def add_rows(x: Tensor[T, Batch, Features], y: Tensor[NoTape, Batch, Features]) -> Tensor[T, Batch, Features]:
    return x + y


@sg.checked
def wrong_return(x: Tensor[NoTape, Batch, L[3]]) -> Tensor[NoTape, Batch, L[4]]:
    return x  # pyright: ignore[reportReturnType] -- the mistake under test


@sg.checked
def needs_tape(x: Tensor[OwnedTape[None], Batch]) -> Tensor[OwnedTape[None]]:
    return x.sum()


def test_consistent_dims_pass(numpy_backend: str) -> None:
    out = add_rows(sg.zeros(Batch(4), Features(3)), sg.ones(4, 3))
    assert out.shape == (4, 3)


def test_dim_bound_inconsistently_across_arguments_names_the_dims(numpy_backend: str) -> None:
    with pytest.raises(TypeCheckError) as info:
        add_rows(sg.zeros(4, 3), sg.ones(5, 3))
    message = str(info.value)
    assert "parameter 'y'" in message  # the parameter, by name
    assert "Batch Features" in message  # the expected dims
    assert "Batch=4" in message and "Features=3" in message  # the bound values


def test_wrong_return_shape_is_reported(numpy_backend: str) -> None:
    with pytest.raises(TypeCheckError, match=r"(?s)return.*Batch 4"):
        wrong_return(sg.zeros(2, 3))


def test_untraced_tensor_where_owned_tape_is_annotated(numpy_backend: str) -> None:
    with pytest.raises(TypeCheckError, match=r"traced Tensor \(OwnedTape\)"):
        needs_tape(sg.zeros(3))  # pyright: ignore[reportArgumentType] -- the mistake under test
    grads = sg.Gradients()
    assert needs_tape(sg.zeros(3).trace(grads)).traced


def test_module_calls_are_checked(numpy_backend: str) -> None:
    layer = sg.nn.Linear[L[3], L[2]]()

    class Wrapper(sg.nn.Module):
        def __init__(self) -> None:
            self.layer = layer

        def __call__(self, x: Tensor[T, Batch, L[3]]) -> Tensor[T, Batch, L[2]]:
            return self.layer(x)

    assert Wrapper()(sg.zeros(5, 3)).shape == (5, 2)
    with pytest.raises(TypeCheckError, match="Batch 3"):
        Wrapper()(sg.zeros(5, 4))  # pyright: ignore[reportArgumentType] -- the mistake under test


def test_ops_raise_shape_error_naming_both_shapes(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match=r"\(2, 3\) and \(4,\)"):
        sg.ones(2, 3) + sg.ones(4)  # pyright: ignore[reportOperatorIssue] -- the mistake under test
    with pytest.raises(sg.ShapeError, match=r"left \(2, 3\) has 3 columns.*right \(4, 5\) has 4 rows"):
        sg.ones(2, 3) @ sg.ones(4, 5)  # pyright: ignore[reportOperatorIssue] -- the mistake under test


def test_cast_states_and_verifies_a_shape(numpy_backend: str) -> None:
    flat = sg.ones(2, 3).reshape(6)
    ok = sg.cast(flat, Tensor[NoTape, L[6]])
    assert ok.shape == (6,)
    with pytest.raises(sg.ShapeError, match="cast"):
        sg.cast(flat, Tensor[NoTape, L[5]])
    with pytest.raises(sg.ShapeError, match="traced"):
        sg.cast(flat, Tensor[OwnedTape[None], L[6]])


def test_repr_is_short(numpy_backend: str) -> None:
    grads = sg.Gradients()
    assert repr(sg.zeros(32, 784)) == "Tensor(shape=(32, 784), dtype=float32)"
    assert repr(sg.zeros(2).trace(grads)) == "Tensor([0., 0.], shape=(2,), dtype=float32, traced)"


def test_checks_off_leave_the_function_untouched() -> None:
    code = (
        "import shapegrad as sg\n"
        "def f(x): return x\n"
        "assert sg.checked(f) is f\n"
        "assert not sg.checks_enabled()\n"
        "from typing import Literal as L\n"
        "from shapegrad import Tensor, NoTape\n"
        "@sg.checked\n"
        "def g(x: Tensor[NoTape, L[3]]) -> Tensor[NoTape, L[3]]: return x\n"
        "g(sg.zeros(4))\n"
        "import sys\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('jaxtyping', 'beartype')], 'imported'\n"
        "print('unchecked')\n"
    )
    assert "unchecked" in _run_with_checks_off(code)


def _run_with_checks_off(code: str) -> str:
    """``code`` run by a fresh interpreter with ``SHAPEGRAD_CHECKS=0`` (read at import); its
    standard output, once it has exited cleanly."""
    env = dict(os.environ, SHAPEGRAD_CHECKS="0")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


class _CountingTapeChecks:
    """Counts the tape checks jaxtyping runs (one per annotated Tensor it looks at)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from shapegrad._annotations import _TapeCheck

        self.count = 0
        original = _TapeCheck.__instancecheck__

        def counting(cls: _TapeCheck, obj: object) -> bool:
            self.count += 1
            return original(cls, obj)

        monkeypatch.setattr(_TapeCheck, "__instancecheck__", counting)


def test_a_call_shaped_like_an_earlier_passing_one_is_not_checked_again(
    numpy_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = _CountingTapeChecks(monkeypatch)
    x, y = sg.zeros(17, 3), sg.ones(17, 3)  # shapes no other test passes to add_rows
    add_rows(x, y)
    first = checks.count
    assert first > 0
    add_rows(sg.ones(17, 3), sg.zeros(17, 3))  # same tapes and shapes: known to pass
    assert checks.count == first
    add_rows(sg.ones(18, 3), sg.zeros(18, 3))  # a new shape: checked in full
    assert checks.count > first
    with pytest.raises(TypeCheckError, match="Batch=17"):
        add_rows(x, sg.ones(18, 3))


def test_a_known_argument_signature_still_checks_a_new_result(numpy_backend: str) -> None:
    widths = [3, 3, 4]

    @sg.checked
    def grow(x: Tensor[NoTape, Batch, L[3]]) -> Tensor[NoTape, Batch, L[3]]:
        return sg.zeros(x.shape[0], widths.pop(0))  # pyright: ignore[reportReturnType] -- the mistake under test

    grow(sg.zeros(2, 3))
    grow(sg.zeros(2, 3))
    with pytest.raises(TypeCheckError, match=r"(?s)return value.*Batch 3"):
        grow(sg.zeros(2, 3))  # the same arguments as before, a result of the wrong width


def test_tape_and_non_tensor_arguments_are_part_of_the_known_signature(numpy_backend: str) -> None:
    @sg.checked
    def scale(x: Tensor[NoTape, Batch], by: int) -> Tensor[NoTape, Batch]:
        return x * by

    scale(sg.zeros(3), 2)
    with pytest.raises(TypeCheckError, match="by"):
        scale(sg.zeros(3), "2")  # pyright: ignore[reportArgumentType] -- the mistake under test
    grads = sg.Gradients()
    with pytest.raises(TypeCheckError, match=r"untraced Tensor \(NoTape\)"):
        scale(sg.zeros(3).trace(grads), 2)  # pyright: ignore[reportArgumentType] -- the mistake under test


def test_checking_does_not_import_jax_where_it_is_installed() -> None:
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        pytest.skip("JAX is not installed here: nothing could import it")
    code = (
        "import sys\n"
        "from typing import Literal as L\n"
        "import shapegrad as sg\n"
        "from shapegrad import Tensor, NoTape\n"
        "@sg.checked\n"
        "def g(x: Tensor[NoTape, L[3]]) -> Tensor[NoTape, L[3]]: return x\n"
        "g(sg.zeros(3))\n"
        "sg.cast(sg.zeros(3), Tensor[NoTape, L[3]])\n"
        "assert 'jax' not in sys.modules, 'jax imported'\n"
        "print('no jax')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "no jax" in result.stdout


# --------------------------------------------------------------- annotations resolved at the first call (issue #24 item 9)
# This module has ``from __future__ import annotations``: every annotation below is a string.


@sg.checked
def uses_a_dim_defined_below(x: Tensor[NoTape, DefinedBelow, L[2]]) -> Tensor[NoTape, DefinedBelow, L[2]]:
    return x


class DefinedBelow(sg.Dim): ...


Rows = Tensor[T, Batch, L[3]]  # a generic alias over Tensor


@sg.checked
def takes_untraced_rows(x: Rows[NoTape]) -> Rows[NoTape]:
    return x


def test_a_dim_defined_further_down_the_module_is_checked(numpy_backend: str) -> None:
    assert uses_a_dim_defined_below(sg.zeros(4, 2)).shape == (4, 2)
    with pytest.raises(TypeCheckError):
        uses_a_dim_defined_below(sg.zeros(4, 3))  # L[2]: once silently Any


def test_a_dim_defined_inside_the_enclosing_function_is_checked(numpy_backend: str) -> None:
    class Local(sg.Dim): ...

    @sg.checked
    def pair(x: Tensor[NoTape, Local], y: Tensor[NoTape, Local]) -> Tensor[NoTape, Local]:
        return x + y

    assert pair(sg.zeros(3), sg.zeros(3)).shape == (3,)
    with pytest.raises(TypeCheckError, match="Local"):
        pair(sg.zeros(3), sg.zeros(4))


def test_a_module_defined_inside_a_function_checks_its_local_dims(numpy_backend: str) -> None:
    class Width(sg.Dim): ...

    class Double(sg.nn.Module):
        def __call__(self, x: Tensor[NoTape, Width, L[2]]) -> Tensor[NoTape, Width, L[2]]:
            return x * 2.0

    assert Double()(sg.ones(5, 2)).shape == (5, 2)
    with pytest.raises(TypeCheckError):
        Double()(sg.ones(5, 3))


def test_an_annotation_that_cannot_be_resolved_raises_instead_of_checking_nothing(numpy_backend: str) -> None:
    @sg.checked
    def broken(x: Tensor[NoTape, NowhereDefined]) -> Tensor[NoTape, NowhereDefined]:  # type: ignore[name-defined]  # noqa: F821
        return x

    with pytest.raises(sg.AnnotationError, match=r"'NowhereDefined' is not defined.*would check nothing"):
        broken(sg.zeros(2))


def test_a_generic_alias_over_tensor_checks_with_the_future_import(numpy_backend: str) -> None:
    assert takes_untraced_rows(sg.zeros(4, 3)).shape == (4, 3)
    with pytest.raises(TypeCheckError):
        takes_untraced_rows(sg.zeros(4, 2))
    with pytest.raises(TypeCheckError, match="untraced"):
        takes_untraced_rows(sg.zeros(4, 3).trace(sg.Gradients()))


def test_a_generic_alias_over_tensor_checks_without_the_future_import(numpy_backend: str) -> None:
    source = (
        "from typing import Literal as L, TypeVar\n"
        "import shapegrad as sg\n"
        "from shapegrad import NoTape, Tensor\n"
        "T = TypeVar('T')\n"
        "class Batch(sg.Dim): ...\n"
        "Rows = Tensor[T, Batch, L[3]]\n"
        "@sg.checked\n"
        "def f(x: Rows[NoTape]) -> Rows[NoTape]:\n"
        "    return x\n"
    )
    namespace: dict[str, object] = {"__name__": "alias_without_future_import"}
    exec(compile(source, "<alias>", "exec", dont_inherit=True), namespace)
    f: object = namespace["f"]
    assert callable(f)
    assert f(sg.zeros(2, 3)).shape == (2, 3)
    with pytest.raises(TypeCheckError):
        f(sg.zeros(2, 4))


# --------------------------------------------------------------- the signature cache never lets a refusal through (item 10)


def test_a_dtype_annotation_is_checked_on_every_new_dtype(numpy_backend: str) -> None:
    from jaxtyping import Float32

    @sg.checked
    def single(x: Float32[sg.Tensor, " b"]) -> Float32[sg.Tensor, " b"]:  # noqa: F722 -- jaxtyping dims
        return x

    single(sg.zeros(3))
    with pytest.raises(TypeCheckError):
        single(sg.zeros(3, dtype="float64"))  # same class, tape and shape as the passing call


def test_a_beartype_validator_is_checked_on_every_call(numpy_backend: str) -> None:
    from typing import Annotated

    from beartype.vale import Is

    @sg.checked
    def positive(x: Annotated[Tensor[NoTape, L[2]], Is[lambda t: bool((t.min() > 0).item())]]) -> float:
        return 1.0

    positive(sg.ones(2))
    with pytest.raises(TypeCheckError):
        positive(sg.zeros(2))  # same signature as the call that passed; other values


def test_cast_refuses_a_contradicting_literal_size_with_checks_off() -> None:
    """issue #23: a cast of an (8,) tensor to L[16] (or to another rank) is refused at run time
    even with SHAPEGRAD_CHECKS=0; named dims stay unchecked there."""
    code = (
        "from typing import Literal as L\n"
        "import shapegrad as sg\n"
        "from shapegrad import Tensor, NoTape\n"
        "class Batch(sg.Dim): ...\n"
        "x = sg.zeros(8)\n"
        "assert sg.cast(x, Tensor[NoTape, L[8]]) is x\n"
        "assert sg.cast(sg.zeros(3, 8), Tensor[NoTape, Batch, L[8]]).shape == (3, 8)\n"
        "assert sg.cast(x, Tensor[NoTape, sg.Sum[L[3], L[5]]]) is x\n"
        "for target, words in ((Tensor[NoTape, L[16]], 'axis 0 expected size 16, found 8'),\n"
        "                      (Tensor[NoTape, sg.Half[L[8]]], 'axis 0 expected size 4, found 8'),\n"
        "                      (Tensor[NoTape, L[8], L[1]], 'expected rank 2')):\n"
        "    try:\n"
        "        sg.cast(x, target)\n"
        "    except sg.ShapeError as e:\n"
        "        assert words in str(e), str(e)\n"
        "    else:\n"
        "        raise AssertionError(f'cast to {target} accepted')\n"
        "print('refused')\n"
    )
    assert "refused" in _run_with_checks_off(code)
