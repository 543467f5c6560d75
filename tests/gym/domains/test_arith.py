"""Bounds on the calculate tools' arithmetic (orchestra_gym.domains.arith)."""

from __future__ import annotations

import ast
import time

import pytest

from orchestra_gym.domains import arith
from orchestra_gym.domains.synthetic.core import ToolError, safe_calculate


def test_check_binop_refuses_huge_integer_powers_and_products_before_computing():
    until = arith.deadline()
    arith.check_binop(ast.Pow(), 2, 65_536, until)  # exactly at the limit: allowed
    with pytest.raises(arith.ArithmeticLimitError, match="about 65537 bits"):
        arith.check_binop(ast.Pow(), 2, 65_537, until)
    with pytest.raises(arith.ArithmeticLimitError, match="number too large"):
        arith.check_binop(ast.Mult(), 1 << 40_000, 1 << 40_000, until)
    arith.check_binop(ast.Pow(), 1, 10**9, until)  # 1 ** n and floats are cheap
    arith.check_binop(ast.Pow(), 2.0, 10**9, until)
    with pytest.raises(arith.ArithmeticLimitError, match="too long"):
        arith.check_binop(ast.Add(), 1, 1, time.monotonic() - 1)


def test_safe_calculate_keeps_its_answers():
    assert safe_calculate("9 ** 99 * 9 ** 99") == pytest.approx(8.70997420821646e188)
    assert safe_calculate("(120.5 + 30) * 2") == 301.0
    with pytest.raises(ToolError, match="exponent too large"):  # its own, stricter bound
        safe_calculate("(9999**9999)**999")
