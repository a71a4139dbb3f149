"""A Differentiable class whose TangentVector is written by hand, naming a field of its own."""

import typing

import s4tf
from s4tf.differentiable import TangentVectorBase


class Custom(s4tf.Differentiable):
    a: float
    b: float

    class TangentVector(TangentVectorBase):
        a: typing.Any = 0.0
        extra: typing.Any = 0.0
