"""The JAX ops ONNX has no form for, rewritten into ones it has, before jax2onnx sees them.

A training step's backward pass holds the transposes of convolutions and
window sums (``jax.linear_transpose`` in the JAX kernels): a ``pad`` with
interior padding (the zeros a strided window's gradient spreads between
elements), and ``conv_general_dilated`` with an input dilation or with
operands in other layouts than NHWC/HWIO (the filter gradient swaps batch
and features). jax2onnx refuses those. :func:`rewritten` runs the function's
jaxpr again, equation by equation, and replaces just those with what
computes the same numbers from ops ONNX has: zeros interleaved by
``concatenate`` and ``reshape``, crops by ``slice``, and a plain NHWC/HWIO
convolution between transposes. Everything else is bound as it was, under
the equation's own source (so an op that still fails is named with the s4tf
kernel that made it, :mod:`.failures`).
"""

from __future__ import annotations

import contextlib

__all__ = ["rewritten"]


def _source(eqn):
    """The equation's own source while it is bound again (JAX's traceback and name stack)."""
    try:
        from jax._src import source_info_util
    except ImportError:  # a JAX without it: the error names the rewrite's line instead
        return contextlib.nullcontext()
    info = eqn.source_info
    return source_info_util.user_context(info.traceback, name_stack=info.name_stack)


def _dilate(x, axis: int, interior: int, fill):
    """``interior`` copies of ``fill`` between neighbouring elements of ``x`` along ``axis``."""
    import jax.numpy as jnp
    from jax import lax

    n = x.shape[axis]
    if interior == 0 or n <= 1:
        return x
    zeros = jnp.broadcast_to(fill, x.shape)
    parts = [lax.expand_dims(x, (axis + 1,))] + [lax.expand_dims(zeros, (axis + 1,))] * interior
    spread = lax.concatenate(parts, axis + 1)
    shape = list(x.shape)
    shape[axis] = n * (interior + 1)
    merged = lax.reshape(spread, tuple(shape))
    return lax.slice_in_dim(merged, 0, n + (n - 1) * interior, axis=axis)


def _pad(x, fill, config):
    """``lax.pad(x, fill, config)`` from slices and concatenations: jax2onnx's ``pad`` takes
    neither interior padding nor (in its output shape) a symbolic batch axis."""
    import jax.numpy as jnp
    from jax import lax

    fill = jnp.asarray(fill, x.dtype)
    for axis, (low, high, interior) in enumerate(config):
        low, high = int(low), int(high)
        x = _dilate(x, axis, int(interior), fill)
        if low < 0 or high < 0:
            x = lax.slice_in_dim(x, max(-low, 0), x.shape[axis] - max(-high, 0), axis=axis)
        before, after = ([_filled(x, axis, size, fill)] if size > 0 else [] for size in (low, high))
        if before or after:
            x = lax.concatenate([*before, x, *after], axis)
    return x


def _filled(x, axis: int, size: int, fill):
    """``fill`` in ``x``'s shape, with ``size`` along ``axis``."""
    import jax.numpy as jnp

    shape = list(x.shape)
    shape[axis] = size
    return jnp.broadcast_to(fill, tuple(shape))


def _pad_rule(x, fill, *, padding_config):
    from jax import lax

    plain = all(int(i) == 0 and int(lo) >= 0 and int(hi) >= 0 for lo, hi, i in padding_config)
    if plain and all(isinstance(d, int) for d in x.shape):
        return lax.pad(x, fill, padding_config)  # ONNX's own Pad
    return _pad(x, fill, padding_config)


def _channels_last(rank: int):
    spatial = tuple(range(1, rank - 1))
    return (0, rank - 1, *spatial), (rank - 1, rank - 2, *range(rank - 2)), (0, rank - 1, *spatial)


def _conv_rule(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision,
               preferred_element_type, **rest):
    import jax.numpy as jnp
    from jax import lax

    rank = lhs.ndim
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    plain = (tuple(lhs_spec), tuple(rhs_spec), tuple(out_spec)) == _channels_last(rank)
    dilated = any(int(d) != 1 for d in lhs_dilation)
    negative = any(int(lo) < 0 or int(hi) < 0 for lo, hi in padding)
    if plain and not dilated and not negative:
        return lax.conv_general_dilated_p.bind(
            lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
            rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
            feature_group_count=feature_group_count, batch_group_count=batch_group_count,
            precision=precision, preferred_element_type=preferred_element_type, **rest)
    # NHWC and HWIO, as the forward convolutions ONNX takes.
    x = lax.transpose(lhs, (lhs_spec[0], *lhs_spec[2:], lhs_spec[1]))
    w = lax.transpose(rhs, (*rhs_spec[2:], rhs_spec[1], rhs_spec[0]))
    if dilated or negative:
        config = [(0, 0, 0), *((lo, hi, int(d) - 1) for (lo, hi), d
                                in zip(padding, lhs_dilation, strict=True)), (0, 0, 0)]
        x = _pad(x, jnp.zeros((), x.dtype), config)
        padding = tuple((0, 0) for _ in padding)
    spec = "NHWC" if rank == 4 else "NWC" if rank == 3 else "NDHWC"
    filter_spec = {4: "HWIO", 3: "WIO", 5: "DHWIO"}[rank]
    y = lax.conv_general_dilated(
        x, w, window_strides=window_strides, padding=padding, rhs_dilation=rhs_dilation,
        dimension_numbers=(spec, filter_spec, spec), feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, precision=precision,
        preferred_element_type=preferred_element_type)
    axes = [0] * rank
    axes[out_spec[0]], axes[out_spec[1]] = 0, rank - 1
    for k, axis in enumerate(out_spec[2:]):
        axes[axis] = 1 + k
    return lax.transpose(y, tuple(axes))


_RULES = {"pad": _pad_rule, "conv_general_dilated": _conv_rule}
_CALLS = ("jit", "pjit", "closed_call", "core_call")


def _evaluate(jaxpr, consts, args, source=None):
    """Run ``jaxpr`` on ``args``, rewriting as it goes; ``source`` is the call equation
    whose source the equations inside a called jaxpr keep (JAX records only the last few
    frames, which inside a call such as ``jnp.remainder`` no longer reach s4tf's kernel)."""
    from jax.extend.core import Literal

    env = {}

    def read(var):
        return var.val if isinstance(var, Literal) else env[var]

    env.update(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        with _source(source or eqn):
            if name in _RULES:
                outs = _RULES[name](*values, **eqn.params)
            elif name in _CALLS and "jaxpr" in eqn.params:
                inner = eqn.params["jaxpr"]
                outs = _evaluate(inner.jaxpr, inner.consts, values, source or eqn)
            else:
                outs = eqn.primitive.bind(*values, **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(v) for v in jaxpr.outvars]


def rewritten(jfn):
    """``jfn`` with the ops ONNX lacks replaced by equivalent ones (see the module's notes).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from jax import lax
    >>> from s4tf.exporting.onnx_rewrites import rewritten
    >>> spread = lambda x: [lax.pad(x, 0.0, [(1, -1, 2)])]
    >>> x = jnp.arange(1.0, 4.0)
    >>> spread(x)[0].tolist(), rewritten(spread)(x)[0].tolist()
    ([0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0])
    """
    import jax

    def legal(*args):
        closed = jax.make_jaxpr(jfn)(*args)
        return _evaluate(closed.jaxpr, closed.consts, args)

    return legal
