"""Primitives: the ops that backends implement and differentiation knows rules for.

A :class:`Primitive` is defined once, with its derivative rules written in terms
of other primitives (so derivatives of derivatives come for free). Rules have
one shape: a *rule table* with one entry per positional argument, ``rules[i]``
for argument ``i`` (``None``: no derivative with respect to it).

* ``vjp[i](g, *args, out=..., **params)`` is argument ``i``'s cotangent given
  the output's cotangent ``g``;
* ``jvp[i](t, *args, out=..., **params)`` is argument ``i``'s contribution to
  the output's tangent, a linear map of its tangent ``t``; the contributions of
  the arguments being differentiated are added.

A table is a tuple, ``(rule_x, rule_y)``; a unary op's is a table of one,
``(rule,)``. Ops of any number of arguments (``concat``) use
:class:`EachArgument`, one rule given each argument's position. Either way the
engines (:mod:`s4tf.autodiff`) index the table and call one rule per argument,
with no other case. A cotangent is summed down to its argument's shape when
broadcasting made it larger, a tangent broadcast up to the output's; a rule may
return an :class:`~s4tf.ops.indexing.IndexAdd`, a value added at an index of
zeros, which the engines accumulate in place.

A third rule, ``batch``, is what :func:`s4tf.vmap` applies: ONE rule per
primitive (not per argument), ``batch(args, dims, **params) -> (out, out_dim)``.
``args`` are the positional arguments with the batch tracers of that level
unwrapped, ``dims[i]`` the axis of ``args[i]`` that holds the batch (``None``:
not batched), and ``out_dim`` the axis of ``out`` that holds it (``None``: the
result is the same for every example). Rules are written with primitives, so
they differentiate and nest. A rule written once for many primitives (the
elementwise rule of :mod:`s4tf.ops.batching_helpers`) is a :class:`GenericRule`:
it receives the primitive first, bound when the primitive is defined.

Calling a primitive finds the highest-level tracer among the arguments. With
none, it runs the backend's kernel of the same name (the fast path: one type
check per argument); otherwise that tracer's trace handles it.

A primitive is documented like a function: ``primitive(..., signature=, doc=)``
gives it a signature and a NumPy-style docstring, which ``help``,
``inspect.signature``, doctest and the documentation site read as they read a
function's.
"""

from __future__ import annotations

import ast
import functools
import inspect
import numbers
import sys

import numpy as np

from .. import dtypes as _dtypes
from ..backends.base import current_backend
from ..tensor import Tensor
from .tracer import Tracer

__all__ = ["EachArgument", "GenericRule", "Primitive", "primitive"]

_new = object.__new__


def _wrap(data, backend) -> Tensor:
    tensor = _new(Tensor)
    tensor._data = data
    tensor._backend = backend
    return tensor


_PY_SCALARS = (int, float, bool, np.number, np.bool_)
# The parameters of an op without any (never mutated): one dict, not one per call.
_NO_PARAMS: dict = {}


class EachArgument:
    """The rule table of an op with any number of arguments: one rule for every position.

    ``EachArgument(rule)[i]`` is ``rule`` with the position ``i`` bound first, so
    ``rule(i, v, *args, out=..., **params)`` is argument ``i``'s rule, as a
    tuple's entry ``i`` would be.

    Examples
    --------
    >>> from s4tf.ops.primitive import EachArgument
    >>> table = EachArgument(lambda i, g, *xs, out: g * len(xs) + i)
    >>> table[2](10, "a", "b", "c", out=None)
    32
    """

    __slots__ = ("rule",)

    def __init__(self, rule):
        self.rule = rule

    def __getitem__(self, i):
        return functools.partial(self.rule, i)


class GenericRule:
    """A batching rule written once for many primitives: ``rule(primitive, args, dims, **params)``.

    Given as ``primitive(..., batch=GenericRule(rule))``, it is bound to the
    primitive being defined, so the engine calls every batching rule the same
    way, ``batch(args, dims, **params)``.

    Examples
    --------
    >>> from s4tf.ops.primitive import GenericRule, primitive
    >>> same = GenericRule(lambda op, args, dims: (op.name, dims[0]))
    >>> neg2 = primitive("neg", batch=same)
    >>> neg2.batch(("x",), (0,))
    ('neg', 0)
    """

    __slots__ = ("rule",)

    def __init__(self, rule):
        self.rule = rule

    def bound(self, primitive):
        """The rule with ``primitive`` given first: the engine's ``batch(args, dims, **params)``."""
        return functools.partial(self.rule, primitive)


def _batch_rule(name, rule):
    """``rule`` checked to be one callable (or None); a GenericRule is bound by the caller."""
    if rule is None or callable(rule) or isinstance(rule, GenericRule):
        return rule
    raise TypeError(
        f"primitive {name!r}: batch must be one rule for the whole primitive, "
        f"batch(args, dims, **params) -> (out, out_dim), or a GenericRule; got "
        f"{type(rule).__name__}."
    )


def _rule_table(name, kind, rules):
    """``rules`` checked to be a rule table (or None), so a bare function fails at definition."""
    if rules is None or isinstance(rules, tuple | EachArgument):
        return rules
    raise TypeError(
        f"primitive {name!r}: {kind} must be a rule table with one rule per positional "
        f"argument, e.g. {kind}=(rule,) for one argument or EachArgument(rule) for any "
        f"number; got {type(rules).__name__}."
    )


class Primitive:
    """An op with a kernel on every backend and (optionally) derivative rules.

    Parameters
    ----------
    name : str
        Also the name of the kernel method backends provide.
    vjp, jvp : tuple or EachArgument, optional
        Rule tables, one rule per positional argument (see the module
        docstring). A primitive without them is not differentiable
        (comparisons, argmax, ...): its results are constants.
    batch : callable or GenericRule, optional
        The batching rule :func:`s4tf.vmap` applies, one for the whole
        primitive (see the module docstring). Without it, the primitive
        raises ``NotImplementedError`` under ``vmap``.
    scalar : callable, optional
        How to compute the op when every argument is a Python number, so that
        differentiating plain float code stays in Python floats.
    promote : bool or int
        Whether the positional arguments are brought to one dtype first
        (elementwise arithmetic, matmul, concat); an int ``k`` promotes only the
        arguments from position ``k`` on (``where``'s condition stays bool).
    signature : str, optional
        The parameters as a ``def`` would write them, ``"x, *, dtype"``: the
        arrays positional, the static parameters keyword-only.
    doc : str, optional
        The op's docstring (NumPy style, with an example).
    module : str, optional
        The module that defines the primitive (where ``help`` and the
        documentation site say it lives).
    """

    # __dict__ holds what documents the op (__doc__, __signature__, __name__, ...),
    # read only by introspection; the slots are what calls read.
    __slots__ = ("name", "vjp", "jvp", "batch", "scalar", "promote", "describe",
                 "_same_dtype_from", "__dict__")

    def __init__(self, name, *, vjp=None, jvp=None, batch=None, scalar=None, promote=False,
                 describe=None, signature=None, doc=None, module=None):
        self.name = name
        self.__name__ = self.__qualname__ = name
        if doc is not None:
            self.__doc__ = doc
        if signature is not None:
            self.__signature__ = _parse_signature(name, signature)
        if module is not None:
            self.__module__ = module
        self.vjp = _rule_table(name, "vjp", vjp)
        self.jvp = _rule_table(name, "jvp", jvp)
        batch = _batch_rule(name, batch)
        self.batch = batch.bound(self) if isinstance(batch, GenericRule) else batch
        self.scalar = scalar
        self.promote = promote
        self.describe = describe
        # The first argument whose dtype promotion would change (None: none would), for
        # the n-ary fast path: arguments from there on must share one dtype to skip it.
        self._same_dtype_from = None if promote is False else (0 if promote is True else int(promote))

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def __get__(self, instance, owner=None):
        # Stored on a class, a primitive stays unbound, as it was without __get__
        # (staticmethod's behaviour). Defining it makes a primitive a method
        # descriptor, which is how pydoc, doctest and griffe recognise a routine.
        return self

    def __call__(self, *args, **params):
        if len(args) == 1:
            x = args[0]
            if type(x) is Tensor:
                backend = x._backend
                try:
                    out = getattr(backend.kernels, self.name)(x._data, **params)
                except (ValueError, TypeError, IndexError) as error:
                    raise self._error(args, error) from None
                tensor = _new(Tensor)
                tensor._data = out
                tensor._backend = backend
                return tensor
            if isinstance(x, Tracer):
                return x._trace.process(self, args, params)
            return self._impl(args, params)
        if len(args) == 2 and not params:
            return self.binary(args[0], args[1])
        # Plain tensors of one backend (and of one dtype where promoted, so promotion
        # has nothing to do) go straight to the kernel.
        first = args[0] if args else None
        if type(first) is Tensor:
            backend, same_from, dtype, datas = first._backend, self._same_dtype_from, None, []
            for i, arg in enumerate(args):
                if type(arg) is not Tensor or arg._backend is not backend:
                    break
                data = arg._data
                if same_from is not None and i >= same_from:
                    if dtype is None:
                        dtype = data.dtype
                    elif not (data.dtype is dtype or data.dtype == dtype):
                        break
                datas.append(data)
            else:
                try:
                    out = getattr(backend.kernels, self.name)(*datas, **params)
                except (ValueError, TypeError, IndexError) as error:
                    raise self._error(args, error) from None
                tensor = _new(Tensor)
                tensor._data = out
                tensor._backend = backend
                return tensor
        top = None
        for arg in args:
            if isinstance(arg, Tracer) and (top is None or arg._trace.level > top.level):
                top = arg._trace
        if top is not None:
            return top.process(self, args, params)
        return self._impl(args, params)

    def binary(self, x, y):
        """``self(x, y)`` with no static parameters: the hot path of Tensor operators.

        Plain tensors of one backend and dtype, or a floating tensor and a Python
        number, go straight to the kernel; anything else takes the general path.
        """
        tx, ty = type(x), type(y)
        dx = dy = None
        if tx is Tensor:
            backend, dx = x._backend, x._data
            if ty is Tensor:
                dy = y._data
                if y._backend is not backend or not (dy.dtype is dx.dtype or dy.dtype == dx.dtype):
                    dy = None
            elif (ty is float or ty is int) and self.promote and dx.dtype.kind == "f":
                dy = backend.weak_scalar(y, dx.dtype)
        elif ty is Tensor and (tx is float or tx is int) and self.promote:
            backend, dy = y._backend, y._data
            dx = backend.weak_scalar(x, dy.dtype) if dy.dtype.kind == "f" else None
        if dx is not None and dy is not None:
            try:
                out = getattr(backend.kernels, self.name)(dx, dy)
            except (ValueError, TypeError) as error:
                raise self._error((x, y), error) from None
            tensor = _new(Tensor)
            tensor._data = out
            tensor._backend = backend
            return tensor
        # A value being differentiated: the highest level's trace handles the op.
        if isinstance(x, Tracer):
            top = x._trace
            if isinstance(y, Tracer) and y._trace.level > top.level:
                top = y._trace
            return top.process_binary(self, x, y)
        if isinstance(y, Tracer):
            return y._trace.process_binary(self, x, y)
        return self._impl((x, y), _NO_PARAMS)

    def _impl(self, args, params):
        """The general no-tracer path: mixed dtypes, Python scalars, NumPy arrays."""
        backend = None
        for arg in args:
            if isinstance(arg, Tensor):
                if backend is None:
                    backend = arg._backend
                elif arg._backend is not backend:
                    if arg._backend.absorbs_others or backend.absorbs_others:
                        # The jax backend (values inside a JAX transformation) takes in
                        # tensors of the others: they are constants of the traced function.
                        backend = backend if backend.absorbs_others else arg._backend
                        continue
                    raise TypeError(
                        f"{self.name}: the operands are on different backends "
                        f"({backend.name!r} and {arg._backend.name!r}). Move one with "
                        f"t.to({backend.name!r}) or s4tf.to_backend(value, {backend.name!r})."
                    )
        if backend is None:
            if self.scalar is not None and all(isinstance(a, _PY_SCALARS) for a in args):
                return self.scalar(*args, **params)
            backend = current_backend()
        datas = _convert(args, backend, self.promote)
        try:
            out = getattr(backend.kernels, self.name)(*datas, **params)
        except (ValueError, TypeError, IndexError) as error:
            raise self._error(args, error) from None
        return _wrap(out, backend)

    def _error(self, args, error) -> Exception:
        shapes = " and ".join(str(_shape(a)) for a in args)
        if self.describe is not None:
            return type(error)(self.describe(args, error))
        if self.promote and len(args) >= 2:
            return ValueError(
                f"{self.name}: cannot broadcast shapes {shapes}. Each axis must have equal "
                "sizes or size 1 (NumPy broadcasting); reshape or expand_dims an operand. "
                f"(backend said: {error})"
            )
        return type(error)(f"{self.name} failed on operands of shapes {shapes}: {error}")


def primitive(name, **rules) -> Primitive:
    """Define a primitive; see :class:`Primitive` and the module docstring for its rules.

    The primitive belongs to the module that calls this (as a ``def`` would).

    Examples
    --------
    >>> import inspect
    >>> import s4tf
    >>> from s4tf.ops.primitive import primitive
    >>> twice = primitive("add", promote=True,  # the add kernel, with rules of its own
    ...                   vjp=(lambda g, x, y, out: g, lambda g, x, y, out: g),
    ...                   jvp=(lambda t, x, y, out: t, lambda t, x, y, out: t),
    ...                   signature="x, y", doc="``x + y``, differentiated by its own rules.")
    >>> s4tf.gradient(3.0, of=lambda x: twice(x, x))
    2.0
    >>> inspect.signature(twice), twice.__doc__
    (<Signature (x, y)>, '``x + y``, differentiated by its own rules.')
    """
    rules.setdefault("module", sys._getframe(1).f_globals.get("__name__"))
    return Primitive(name, **rules)


def _parse_signature(name, parameters: str) -> inspect.Signature:
    """``"x, *, axis=None"`` as an :class:`inspect.Signature` (defaults are literals)."""
    try:
        arguments = ast.parse(f"def {name}({parameters}): pass").body[0].args
        problem = "**" if arguments.kwarg else "/" if arguments.posonlyargs else None
    except SyntaxError as error:
        problem = error.msg
    if problem is not None:
        # A primitive passes every keyword to its kernel, and takes arrays by position.
        raise ValueError(
            f"primitive {name!r}: signature={parameters!r} is not a parameter list of "
            f"arrays then keyword-only parameters as a def writes it, e.g. 'x, *, dtype' "
            f"(found: {problem})."
        )
    kind = inspect.Parameter
    # A def's defaults belong to its last positional parameters.
    defaults = [kind.empty] * (len(arguments.args) - len(arguments.defaults))
    defaults += [ast.literal_eval(d) for d in arguments.defaults]
    positional = [kind(a.arg, kind.POSITIONAL_OR_KEYWORD, default=d)
                  for a, d in zip(arguments.args, defaults, strict=True)]
    keywords = [kind(a.arg, kind.KEYWORD_ONLY,
                     default=kind.empty if d is None else ast.literal_eval(d))
                for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
    variadic = [kind(arguments.vararg.arg, kind.VAR_POSITIONAL)] if arguments.vararg else []
    return inspect.Signature([*positional, *variadic, *keywords])


def _shape(value):
    if isinstance(value, Tensor):
        return value.shape
    return np.shape(value)


def result_dtype(args) -> _dtypes.DType:
    """JAX-style promotion: tensors decide; Python scalars only lift ints to float32."""
    # One pass, two accumulators: typed operands and weakly typed Python scalars (and
    # None, which counts as a weak float), each promoted in argument order.
    dtype = weak = None
    for arg in args:
        if isinstance(arg, Tensor):
            d = arg.dtype
        elif isinstance(arg, np.ndarray):
            d = _dtypes.as_dtype(arg.dtype)
        else:
            # A Python float (the common weak scalar) is known before the abc checks.
            if type(arg) is float:
                kind = _dtypes.float32
            elif isinstance(arg, bool | np.bool_):
                kind = _dtypes.bool_
            elif isinstance(arg, numbers.Integral):
                kind = _dtypes.int32
            else:
                kind = _dtypes.float32
            weak = kind if weak is None or weak is kind else _dtypes.promote(weak, kind)
            continue
        dtype = d if dtype is None or dtype is d else _dtypes.promote(dtype, d)
    if dtype is None:
        return weak if weak is not None else _dtypes.float32
    if weak is not None and weak.is_floating and not dtype.is_floating:
        return _dtypes.float32
    if weak is not None and weak == _dtypes.int32 and dtype == _dtypes.bool_:
        return _dtypes.int32
    return dtype


def _convert(args, backend, promote):
    """Backend arrays for ``args``, cast to one dtype when ``promote``."""
    start = 0 if promote is True else int(promote)
    dtype = result_dtype(args[start:]) if promote is not False else None
    want = dtype.numpy if dtype is not None else None
    # Python numbers meeting an IEEE-float array among the promoted operands stay weak
    # scalars, as in the two-operand fast path: NumPy keeps the array's dtype (not
    # bfloat16's, an extension type), and no 0-d array is made. Without such an
    # array they become arrays of the result dtype.
    weak = want is not None and want.kind == "f" and any(
        isinstance(arg, Tensor) for arg in args[start:])
    datas = []
    for i, arg in enumerate(args):
        # Arguments before ``start`` (where's condition) keep their own dtype.
        target = dtype if i >= start else None
        if isinstance(arg, Tensor):
            data = arg._data
            if arg._backend is not backend:  # only into a backend that absorbs_others
                data = backend.from_jax(arg._backend.to_jax(data))
            if target is not None and data.dtype != want:
                data = backend.kernels.cast(data, dtype=want)
        elif isinstance(arg, np.ndarray):
            data = backend.asarray(arg, target or _dtypes.as_dtype(arg.dtype))
        elif weak and target is not None and (type(arg) is float or type(arg) is int):
            data = backend.weak_scalar(arg, want)
        elif isinstance(arg, _PY_SCALARS):
            data = backend.scalar(arg, target or result_dtype([arg]))
        elif arg is None:
            data = None
        else:
            raise TypeError(
                f"s4tf ops take Tensors and numbers; got {type(arg).__name__}. "
                "Convert it with s4tf.Tensor(...) first."
            )
        datas.append(data)
    return datas
