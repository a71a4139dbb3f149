"""Neural Matrix Factorization (He et al. 2017), swift-models' ``NeuMF``."""

from __future__ import annotations

import functools

from .. import layers
from .. import random as _random
from ..activations import relu
from ..layers import Layer
from ..layers.layer import check_input_shape
from ..ops import concat, sigmoid
from ..tensor import Tensor

__all__ = ["NeuMF"]


class NeuMF(Layer):
    """Neural Matrix Factorization: a GMF and an MLP tower fused by one dense layer.

    For each (user, item) pair: the generalised matrix factorisation (GMF)
    tower multiplies a user and an item embedding of ``mf_size`` features
    elementwise; the MLP tower concatenates a user and an item embedding of
    ``mlp_sizes[0] / 2`` features each and applies dense relu layers
    ``mlp_sizes[0] -> mlp_sizes[1] -> ...``; the two results are concatenated
    and a dense layer gives one score. Embeddings start as N(0, 0.01^2), as
    the paper's implementation.

    ``model(pairs)`` returns the predicted probability of an interaction,
    ``sigmoid(score)``, of shape ``(batch, 1)``. For training use
    ``model.logits(pairs)`` with ``s4tf.sigmoid_cross_entropy(logits=...,
    labels=...)`` (the paper's log loss; numerically stable), as
    swift-models' example does.

    Parameters
    ----------
    user_count, item_count : int
        Number of users and items; ids are ``0 .. count - 1``.
    mf_size : int, default 8
        GMF embedding size ("predictive factors").
    mlp_sizes : sequence of int, default (64, 32, 16, 8)
        The MLP's layer widths; the first is the concatenated user and item
        embedding, so it must be even.

    Notes
    -----
    Input: int tensor ``(batch, 2)`` of ``(user, item)`` ids. Fields:
    ``mf_user_embedding``, ``mf_item_embedding``, ``mlp_user_embedding``,
    ``mlp_item_embedding``, ``mlp_layers`` (list of Dense) and
    ``neumf_layer``. Parameter count: ``(users + items) * (mf_size +
    mlp_sizes[0] / 2)`` plus the dense layers; 100 users, 50 items and the
    defaults give 8,761.

    References
    ----------
    He et al., "Neural Collaborative Filtering" (WWW 2017);
    swift-models ``Models/Recommendation/NeuMF.swift`` (without its unused
    regularisation settings).

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.NeuMF(user_count=100, item_count=50)
    >>> pairs = s4tf.Tensor([[0, 3], [99, 49]])
    >>> p = model(pairs)
    >>> p.shape, [round(v, 2) for v in p[:, 0].tolist()]  # small initial weights: about 0.5
    ((2, 1), [0.5, 0.5])
    >>> s4tf.parameter_count(model)
    8761
    """

    mf_user_embedding: layers.Embedding
    mf_item_embedding: layers.Embedding
    mlp_user_embedding: layers.Embedding
    mlp_item_embedding: layers.Embedding
    mlp_layers: list[layers.Dense]
    neumf_layer: layers.Dense

    def __init__(self, user_count: int, item_count: int, mf_size: int = 8,
                 mlp_sizes=(64, 32, 16, 8)):
        mlp_sizes = list(mlp_sizes)
        if not mlp_sizes or mlp_sizes[0] % 2:
            raise ValueError(f"NeuMF: mlp_sizes[0] is the user and item MLP embeddings side "
                             f"by side, so it must be even; received mlp_sizes={mlp_sizes}.")
        half = mlp_sizes[0] // 2
        init = functools.partial(_random.normal, stddev=0.01)
        self.mf_user_embedding = layers.Embedding(user_count, mf_size, embeddings_initializer=init)
        self.mf_item_embedding = layers.Embedding(item_count, mf_size, embeddings_initializer=init)
        self.mlp_user_embedding = layers.Embedding(user_count, half, embeddings_initializer=init)
        self.mlp_item_embedding = layers.Embedding(item_count, half, embeddings_initializer=init)
        self.mlp_layers = [layers.Dense(n_in, n_out, activation=relu)
                           for n_in, n_out in zip(mlp_sizes[:-1], mlp_sizes[1:], strict=True)]
        self.neumf_layer = layers.Dense(mlp_sizes[-1] + mf_size, 1)

    def logits(self, pairs):
        """The score before the sigmoid, ``(batch, 1)``; train on it with sigmoid_cross_entropy."""
        if not isinstance(pairs, Tensor):
            pairs = Tensor(pairs)
        check_input_shape(self, pairs, (None, 2), "Pass int (user, item) id pairs.")
        users, items = pairs[:, 0], pairs[:, 1]
        mf = self.mf_user_embedding(users) * self.mf_item_embedding(items)
        mlp = concat([self.mlp_user_embedding(users), self.mlp_item_embedding(items)], axis=-1)
        for layer in self.mlp_layers:
            mlp = layer(mlp)
        return self.neumf_layer(concat([mlp, mf], axis=-1))

    def __call__(self, pairs):
        return sigmoid(self.logits(pairs))
