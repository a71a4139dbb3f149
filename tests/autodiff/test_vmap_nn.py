"""Per-example gradients through the neural-network primitives equal a loop of ``gradient``.

``vmap(gradient(...))`` over a batch runs every convolution, pool, batch norm
and gather once for the whole batch (their batching rules); each example's
gradient must be the one ``gradient`` gives that example alone.
"""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import assert_allclose, check_gradients
from s4tf.tree import tree_leaves

pytestmark = pytest.mark.usefixtures("backend")

BATCH = 3


def _images(rng, size, channels):
    return s4tf.Tensor(rng.standard_normal((BATCH, size, size, channels)).astype(np.float32))


def _labels(rng, classes):
    return s4tf.Tensor(rng.integers(0, classes, BATCH).astype(np.int32))


def _loss(model, x, label):
    """One example's loss: the model sees a batch of one."""
    logits = model(s4tf.expand_dims(x, 0))
    return s4tf.softmax_cross_entropy(logits=logits, labels=s4tf.expand_dims(label, 0))


def _assert_per_example_gradients(model, x, labels, atol=2e-5):
    per_example = s4tf.vmap(
        lambda x, label: s4tf.gradient(model, of=lambda m: _loss(m, x, label)))(x, labels)
    looped = [s4tf.gradient(model, of=lambda m, i=i: _loss(m, x[i], labels[i]))
              for i in range(BATCH)]
    got, expected = tree_leaves(per_example), [tree_leaves(g) for g in looped]
    assert got and len(got) == len(expected[0])
    for j, leaf in enumerate(got):
        assert leaf.shape == (BATCH, *expected[0][j].shape)
        assert_allclose(leaf, s4tf.stack([e[j] for e in expected]), atol=atol, rtol=1e-4)
    # The examples differ, so a rule that mixed them up could not pass the check above.
    assert not np.allclose(got[0][0].numpy(), got[0][1].numpy())


def test_lenet_conv_average_pool_dense(backend):
    s4tf.random.seed(0)
    rng = np.random.default_rng(0)
    model = s4tf.models.LeNet.for_digits()
    _assert_per_example_gradients(model, _images(rng, 8, 1), _labels(rng, 10))


def test_strided_grouped_convolution_and_max_pool(backend):
    s4tf.random.seed(1)
    rng = np.random.default_rng(1)
    model = layers.Sequential(
        layers.Conv2D(filter_shape=(3, 3, 2, 4), strides=2, padding="same",
                      activation=s4tf.relu),
        layers.DepthwiseConv2D(filter_shape=(3, 3, 4, 2), padding="same"),
        layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2)),
        layers.Flatten(),
        layers.Dense(input_size=2 * 2 * 8, output_size=5),
    )
    _assert_per_example_gradients(model, _images(rng, 8, 2), _labels(rng, 5))


def test_embedding_and_batch_norm_in_inference(backend):
    s4tf.random.seed(2)
    rng = np.random.default_rng(2)
    norm = layers.BatchNorm(feature_count=4)
    # Running statistics of their own, so inference is not the identity.
    norm.running_mean.value = s4tf.Tensor(rng.standard_normal(4).astype(np.float32))
    norm.running_variance.value = s4tf.Tensor(rng.uniform(0.5, 2.0, 4).astype(np.float32))
    model = layers.Sequential(
        layers.Embedding(vocabulary_size=7, embedding_size=4),
        norm,
        layers.Flatten(),
        layers.Dense(input_size=5 * 4, output_size=3),
    )
    # Repeated tokens: their rows' gradients add up within an example, never across.
    tokens = s4tf.Tensor(np.array([[0, 3, 3, 6, 1], [2, 2, 2, 5, 0], [6, 0, 1, 3, 3]],
                                  dtype=np.int32))
    with s4tf.inference():
        _assert_per_example_gradients(model, tokens, _labels(rng, 3))


def test_gradient_of_gathered_rows_counts_each_examples_reads(backend):
    # The cotangent of the gathered rows is the same for every example (a plain tensor);
    # only the indices are batched, so the rows' gradients add up per example.
    table = s4tf.Tensor(np.arange(12.0).reshape(4, 3))
    indices = s4tf.Tensor(np.array([[0, 0, 2], [3, 1, 1]], dtype=np.int32))
    grads = s4tf.vmap(lambda i: s4tf.gradient(
        table, of=lambda t: s4tf.gather(t, i).sum()))(indices)
    assert grads.numpy()[:, :, 0].tolist() == [[2.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]]


def test_batched_tables_and_indices_never_read_another_examples_row(backend):
    # Example b's index i reads row b * n + i of the merged tables: an index n (out of
    # range) must not become the next example's row 0.
    tables = s4tf.Tensor(np.arange(12.0).reshape(2, 3, 2))
    indices = s4tf.Tensor(np.array([[0, 3], [2, 1]], dtype=np.int32))
    gather = s4tf.vmap(lambda t, i: s4tf.gather(t, i))
    if backend != "xla":
        with pytest.raises(IndexError, match=r"\[0, 3\)"):
            gather(tables, indices)
        return
    got = gather(tables, indices).numpy()
    assert got[0, 0].tolist() == [0.0, 1.0] and np.isnan(got[0, 1]).all()
    assert got[1].tolist() == [[10.0, 11.0], [8.0, 9.0]]
    # Its transpose drops the out-of-range update, as the unbatched scatter does.
    added = s4tf.vmap(lambda i: s4tf.ops.scatter_add(s4tf.zeros([3]), i, s4tf.ones([2]), axis=0))(
        indices)
    assert added.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]


def test_vmap_of_vmap_of_a_grouped_convolution(backend):
    # Two levels of batch, both on the input and the filters: each level becomes channel
    # groups of the level below (groups of groups).
    rng = np.random.default_rng(3)
    x = s4tf.Tensor(rng.standard_normal((2, 3, 1, 4, 4, 4)))
    w = s4tf.Tensor(rng.standard_normal((3, 2, 2, 2, 4, 2)))

    def conv(x, w):
        depthwise = s4tf.nn.depthwise_conv2d(x, w, padding="same")  # 4 groups
        return depthwise * s4tf.nn.conv2d(x, w, strides=2, padding="same").sum()

    inner = s4tf.vmap(conv, in_axes=(0, 1))
    got = s4tf.vmap(inner, in_axes=(1, 0))(x, w)
    for a in range(3):
        for b in range(2):
            assert_allclose(got[a, b], conv(x[b, a], w[a, :, b]), atol=1e-10)


def _f64(*shape):
    return s4tf.Tensor(_RNG.standard_normal(shape))


_RNG = np.random.default_rng(5)

# The nn functions made of primitives (attention, softmax, resampling, channel shuffle,
# padded and adaptive pools, transposed and separable convolutions, one-hot): batched
# through their primitives' rules. name: (f, args, in_axes).
COMPOSITES = {
    "attention": (
        lambda q, k, v, mask: s4tf.nn.scaled_dot_product_attention(q, k, v, mask=mask,
                                                                   causal=True),
        [_f64(BATCH, 2, 4, 3), _f64(2, 5, 3), _f64(BATCH, 2, 5, 2),
         s4tf.Tensor(_RNG.random((4, 5, BATCH)) > 0.3)], (0, None, 0, 2)),
    "softmax": (lambda x: s4tf.softmax(x, axis=0), [_f64(4, BATCH, 3)], 1),
    "log_softmax_cross_entropy": (
        lambda x, labels: s4tf.softmax_cross_entropy(logits=x, labels=labels),
        [_f64(BATCH, 4, 3), s4tf.Tensor(_RNG.integers(0, 3, (4, BATCH)).astype(np.int32))],
        (0, 1)),
    "upsampling_and_zero_padding": (
        lambda x: s4tf.nn.zero_padding2d(s4tf.nn.upsampling2d(x, size=(2, 3)), ((1, 0), (2, 1))),
        [_f64(1, BATCH, 2, 3, 2)], 1),
    "channel_shuffle": (lambda x: s4tf.nn.channel_shuffle(x, groups=2), [_f64(1, 2, BATCH, 6)], 2),
    "avg_pool_same_padding": (lambda x: s4tf.nn.avg_pool2d(x, 2, 2, padding="same"),
                              [_f64(1, 5, 5, 2, BATCH)], 4),
    "adaptive_avg_pool": (lambda x: s4tf.nn.adaptive_avg_pool2d(x, (2, 3)),
                          [_f64(BATCH, 1, 5, 4, 2)], 0),
    "conv_transpose": (lambda x, w: s4tf.nn.conv2d_transpose(x, w, strides=2, padding="same"),
                       [_f64(BATCH, 1, 3, 3, 2), _f64(3, 3, 4, 2)], (0, None)),
    "separable_conv": (
        lambda x, d, p: s4tf.nn.separable_conv2d(x, d, p, padding="same"),
        [_f64(BATCH, 1, 4, 4, 2), _f64(3, 3, 2, 2), _f64(BATCH, 1, 1, 4, 3)], (0, None, 0)),
    "conv3d_and_max_pool3d": (lambda x, w: s4tf.nn.max_pool3d(s4tf.nn.conv3d(x, w), 2, 1),
                              [_f64(1, 3, 3, 3, 2, BATCH), _f64(2, 2, 2, 2, 2, BATCH)], (5, 5)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_nn_functions_under_vmap_equal_a_loop_and_differentiate(name, backend):
    f, args, in_axes = COMPOSITES[name]
    args = [s4tf.to_backend(a, backend) for a in args]
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    batched = s4tf.vmap(f, in_axes=in_axes)
    expected = s4tf.stack([
        f(*(a if d is None else a[(slice(None),) * d + (i,)] for a, d in zip(args, in_axes,
                                                                             strict=True)))
        for i in range(BATCH)])
    assert_allclose(batched(*args), expected, atol=1e-10)
    floating = [i for i, a in enumerate(args) if a.dtype.is_floating]

    def of(*points):
        full = list(args)
        for i, point in zip(floating, points, strict=True):
            full[i] = point
        return batched(*full)

    check_gradients(of, *(args[i] for i in floating), modes=("reverse",))


def test_batch_norm_training_inside_vmap_raises_and_keeps_its_statistics(backend):
    norm = layers.BatchNorm(feature_count=2)
    x = s4tf.Tensor(np.arange(24.0, dtype=np.float32).reshape(3, 4, 2))
    with s4tf.training(), pytest.raises(TypeError, match="inference phase inside vmap"):
        s4tf.vmap(norm)(x)
    assert type(norm.running_mean.value) is s4tf.Tensor
    assert norm.running_mean.value.tolist() == [0.0, 0.0]


def test_the_issues_spelling_with_gradients_for_every_argument(backend):
    # vmap(gradient(of=loss), in_axes=(None, 0, 0))(model, x, y): the model's, the
    # image's and the (one-hot) label's gradients, per example.
    s4tf.random.seed(4)
    rng = np.random.default_rng(4)
    model = s4tf.models.LeNet.for_digits()
    x = _images(rng, 8, 1)
    y = s4tf.one_hot(_labels(rng, 10), 10)

    def loss(model, x, y):
        logits = model(s4tf.expand_dims(x, 0))
        return s4tf.softmax_cross_entropy(logits=logits, labels=s4tf.expand_dims(y, 0))

    got = s4tf.vmap(s4tf.gradient(of=loss), in_axes=(None, 0, 0))(model, x, y)
    looped = [s4tf.gradient(model, x[i], y[i], of=loss) for i in range(BATCH)]
    got_leaves, looped_leaves = tree_leaves(got), [tree_leaves(g) for g in looped]
    assert len(got_leaves) == len(looped_leaves[0]) == 10 + 2
    for j, leaf in enumerate(got_leaves):
        assert_allclose(leaf, s4tf.stack([e[j] for e in looped_leaves]), atol=2e-5, rtol=1e-4)
