"""Dim expressions (docs/spec.md, "Dim expressions"): integer arithmetic over named dims.

The worker needs them only for ``cu_seqlens(total)`` initialisers, whose total is an expression
(the job carries the init text and the call's dims). The grammar and semantics are kloop's
(src/spec/dim_expr.cpp): + - * / % with / the floor division and % its remainder (Python's own
// and %), unary minus, min, max, ceil_div, parentheses. kloop has validated every expression
before writing the job; errors here raise ValueError.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _tokenize(text: str) -> List[Tuple[str, str]]:
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any character
            break
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("int", m.group(1)))
        elif m.group(2) is not None:
            tokens.append(("name", m.group(2)))
        elif m.group(3) is not None and not m.group(3).isspace():
            tokens.append(("op", m.group(3)))
    return tokens


def _check(v: int, text: str) -> int:
    if v < _INT64_MIN or v > _INT64_MAX:
        raise ValueError("dim expression '%s': overflows int64" % text)
    return v


def evaluate(text: str, dims: Dict[str, int]) -> int:
    """The value of ``text`` with ``dims``; raises ValueError on any error."""
    tokens = _tokenize(text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else ("end", "")

    def take():
        nonlocal pos
        t = peek()
        pos += 1
        return t

    def expect(op):
        t = take()
        if t != ("op", op):
            raise ValueError("dim expression '%s': expected '%s'" % (text, op))

    def expr():
        v = term()
        while peek() in (("op", "+"), ("op", "-")):
            op = take()[1]
            rhs = term()
            v = _check(v + rhs if op == "+" else v - rhs, text)
        return v

    def term():
        v = unary()
        while peek() in (("op", "*"), ("op", "/"), ("op", "%")):
            op = take()[1]
            rhs = unary()
            if op == "*":
                v = _check(v * rhs, text)
            else:
                if rhs == 0:
                    raise ValueError("dim expression '%s': division by zero" % text)
                v = _check(v // rhs if op == "/" else v % rhs, text)
        return v

    def unary():
        if peek() == ("op", "-"):
            take()
            return _check(-unary(), text)
        return atom()

    def atom():
        kind, value = take()
        if kind == "int":
            return _check(int(value), text)
        if kind == "name":
            if peek() == ("op", "("):
                take()
                args = [expr()]
                while peek() == ("op", ","):
                    take()
                    args.append(expr())
                expect(")")
                if value in ("min", "max", "ceil_div") and len(args) == 2:
                    a, b = args
                    if value == "min":
                        return min(a, b)
                    if value == "max":
                        return max(a, b)
                    if b == 0:
                        raise ValueError("dim expression '%s': division by zero" % text)
                    return _check(-((-a) // b), text)
                raise ValueError("dim expression '%s': unknown function '%s'" % (text, value))
            if value not in dims:
                raise ValueError("dim expression '%s': unknown dim '%s'" % (text, value))
            return int(dims[value])
        if (kind, value) == ("op", "("):
            v = expr()
            expect(")")
            return v
        raise ValueError("dim expression '%s': expected a number, a name or '('" % text)

    v = expr()
    if pos != len(tokens):
        raise ValueError("dim expression '%s': unexpected '%s'" % (text, peek()[1]))
    return v
