"""Bounds on the work of the ``calculate`` tools' arithmetic (one place for both evaluators).

`orchestra_gym.domains.synthetic.core.safe_calculate` (ToolScale) and tau2's ``calculate``
(`orchestra_gym.domains.tau2.toolkit.calculate_expression`, retail and airline)
evaluate a policy-written expression tree node by node with Python's operators. Python integers
are unbounded, so ``(9999**9999)**999`` would run for minutes; `check_binop` refuses, before the
operation runs, any integer power or product whose result would exceed `MAX_RESULT_BITS`, and any
evaluation that has run past its deadline. Results that large could never become the tools'
float answer anyway (a float holds at most 1024 bits of exponent), so no valid answer is lost.
"""

from __future__ import annotations

import ast
import time
from typing import Any

from orchestra_gym.errors import OrchestraError

__all__ = ["MAX_RESULT_BITS", "MAX_EVAL_S", "ArithmeticLimitError", "check_binop", "deadline"]

MAX_RESULT_BITS = 65_536  # about 19,700 decimal digits; any such operation takes well under 1 ms
MAX_EVAL_S = 1.0  # wall-clock budget of one expression, seconds


class ArithmeticLimitError(OrchestraError, ValueError):
    """An expression whose evaluation would exceed `MAX_RESULT_BITS` or `MAX_EVAL_S`."""


def deadline(budget_s: float = MAX_EVAL_S) -> float:
    """The `time.monotonic` time by which an evaluation started now must end."""
    return time.monotonic() + budget_s


def _bits(v: Any) -> int:
    return abs(v).bit_length() if isinstance(v, int) else 0


def check_binop(op: ast.operator, left: Any, right: Any, until: float) -> None:
    """Refuse ``left <op> right`` when its integer result would be too large, or time is up.

    Args:
        op: the `ast` operator node (``ast.Pow``, ``ast.Mult``, ...).
        left, right: the evaluated operands (ints, floats or anything else; only ints are checked).
        until: the deadline from `deadline`.

    Raises:
        ArithmeticLimitError: the result would need more than `MAX_RESULT_BITS` bits, or the
            evaluation has run past `until`. The message says which and the limit.
    """
    if time.monotonic() > until:
        raise ArithmeticLimitError(f"expression takes too long to evaluate (limit {MAX_EVAL_S:g} s)")
    if isinstance(left, bool) or isinstance(right, bool):
        return
    estimate = 0
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        estimate = (_bits(left) - 1) * right
    elif isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        estimate = _bits(left) + _bits(right) - 1
    if estimate > MAX_RESULT_BITS:
        raise ArithmeticLimitError(
            f"number too large: the result would have about {estimate} bits (limit {MAX_RESULT_BITS}, "
            "about 19,700 digits)"
        )
