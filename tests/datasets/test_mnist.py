import gzip

import numpy as np
import pytest
from dataset_files import MNIST_FILES, idx_bytes, write_mnist

from s4tf.datasets import (
    MNIST,
    CorruptDataError,
    FashionMNIST,
    KuzushijiMNIST,
    MissingDataError,
    read_idx,
)


def numpy_pass(batches):
    return list(batches._numpy_batches())


def stacked(batches):
    parts = numpy_pass(batches)
    return np.concatenate([d for d, _ in parts]), np.concatenate([l for _, l in parts])


@pytest.mark.parametrize("dtype, shape", [
    (np.uint8, (3, 4, 5)), (np.int8, (7,)), (">i2", (2, 3)),
    (">i4", (4, 1, 2)), (">f4", (6,)), (">f8", (2, 2)),
])
@pytest.mark.parametrize("compressed", [True, False])
def test_idx_round_trip(tmp_path, dtype, shape, compressed):
    array = (np.arange(np.prod(shape)) - 3).astype(dtype).reshape(shape)
    raw = idx_bytes(array)
    path = tmp_path / ("a.idx.gz" if compressed else "a.idx")
    path.write_bytes(gzip.compress(raw) if compressed else raw)
    out = read_idx(path)
    assert out.shape == shape and out.dtype.isnative
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize("damage, message", [
    (lambda raw: b"\x08\x03" + raw[2:], "does not start with an IDX magic"),
    (lambda raw: raw[:-5], "2368 bytes, but holds 2363 bytes"),
    (lambda raw: raw + b"\x00", "2368 bytes, but holds 2369 bytes"),
    (lambda raw: raw[:10], "ends inside its IDX header|holds 10 bytes"),
])
def test_idx_with_a_bad_header_or_size_is_corrupt(tmp_path, damage, message):
    raw = idx_bytes(np.zeros((3, 28, 28), np.uint8))
    path = tmp_path / "x-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(damage(raw)))
    with pytest.raises(CorruptDataError, match=message):
        read_idx(path)


@pytest.mark.parametrize("damage", [
    lambda gz: gz[: len(gz) // 2],                                   # truncated
    lambda gz: gz[:40] + bytes([gz[40] ^ 0xFF]) + gz[41:],             # flipped byte
    lambda gz: b"not gzip at all" + gz,                              # not gzip
])
def test_a_damaged_gzip_is_corrupt(tmp_path, damage):
    raw = idx_bytes(np.random.default_rng(0).integers(0, 255, (5, 28, 28), dtype=np.uint8))
    path = tmp_path / "x-idx3-ubyte.gz"
    path.write_bytes(damage(gzip.compress(raw)))
    with pytest.raises(CorruptDataError, match="x-idx3-ubyte.gz"):
        read_idx(path)


def test_mnist_loads_the_four_files_as_float_nhwc_and_int32(tmp_path):
    written = write_mnist(tmp_path, train=50, test=20)
    mnist = MNIST(batch_size=16, root=tmp_path, download=False, verify=False, seed=0)
    assert mnist.image_shape == (28, 28, 1) and mnist.num_classes == 10
    assert len(mnist.training) == 4 and len(mnist.validation) == 2
    images, labels = stacked(mnist.validation)
    assert images.shape == (20, 28, 28, 1) and images.dtype == np.float32
    assert labels.dtype == np.int32
    assert 0.0 <= images.min() and images.max() <= 1.0
    # Validation is the t10k set, in file order, scaled by 1/255.
    np.testing.assert_allclose(images[..., 0], written["t10k-images-idx3-ubyte.gz"] / 255.0,
                               rtol=1e-6)
    np.testing.assert_array_equal(labels, written["t10k-labels-idx1-ubyte.gz"])


def test_mnist_training_pairs_each_image_with_its_label(tmp_path):
    written = write_mnist(tmp_path, train=50, test=20)
    mnist = MNIST(batch_size=16, root=tmp_path, download=False, verify=False, seed=3)
    images, labels = stacked(mnist.training)
    raw = written["train-images-idx3-ubyte.gz"].reshape(50, -1)
    # Find each shuffled image in the file and check its label came with it.
    scaled = np.round(images.reshape(len(images), -1) * 255).astype(np.uint8)
    positions = [int(np.flatnonzero((raw == row).all(axis=1))[0]) for row in scaled]
    assert sorted(positions) == list(range(50)) and positions != list(range(50))
    np.testing.assert_array_equal(labels, written["train-labels-idx1-ubyte.gz"][positions])


def test_normalize_true_standardises_by_the_training_statistics(tmp_path):
    write_mnist(tmp_path, train=60, test=10)
    mnist = MNIST(batch_size=32, root=tmp_path, download=False, verify=False, normalize=True)
    images, _ = stacked(mnist.training)
    assert abs(images.mean()) < 1e-4 and abs(images.std() - 1) < 1e-4
    mean, std = mnist.normalization
    assert mean.shape == std.shape == (1,)


def test_normalize_with_a_pair_uses_those_constants(tmp_path):
    written = write_mnist(tmp_path, train=10, test=10)
    mnist = MNIST(batch_size=10, root=tmp_path, download=False, verify=False, normalize=(0.5, 0.25))
    images, _ = stacked(mnist.validation)
    expected = (written["t10k-images-idx3-ubyte.gz"] / 255.0 - 0.5) / 0.25
    np.testing.assert_allclose(images[..., 0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("normalize, error", [
    ("yes", TypeError), ((0.5, 0.0), ValueError), (([0.1, 0.2], 0.3), ValueError),
])
def test_bad_normalize_values_are_refused(tmp_path, normalize, error):
    write_mnist(tmp_path, train=4, test=4)
    with pytest.raises(error, match="MNIST: normalize"):
        MNIST(root=tmp_path, download=False, verify=False, normalize=normalize)


def test_missing_files_offline_name_the_file_url_and_directory(tmp_path):
    with pytest.raises(MissingDataError) as caught:
        MNIST(root=tmp_path / "nowhere", download=False)
    message = str(caught.value)
    assert "MNIST needs the file 'train-images-idx3-ubyte.gz'" in message
    assert "https://storage.googleapis.com/cvdf-datasets/mnist/train-images-idx3-ubyte.gz" in message
    assert str((tmp_path / "nowhere").resolve()) in message


def test_a_failing_network_gives_the_same_guidance(tmp_path, network):
    with pytest.raises(MissingDataError) as caught:
        FashionMNIST(root=tmp_path, download=True)
    message = str(caught.value)
    assert "'train-images-idx3-ubyte.gz'" in message and "are you offline?" in message
    assert "fashion-mnist.s3-website.eu-central-1.amazonaws.com" in message
    assert str(tmp_path.resolve()) in message
    assert len(network.calls) == 2  # both mirrors were tried


def test_a_truncated_file_is_reported_when_download_is_off(tmp_path):
    write_mnist(tmp_path, train=8, test=4)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(CorruptDataError) as caught:
        MNIST(root=tmp_path, download=False, verify=False)
    assert str(path) in str(caught.value) and "corrupt or truncated" in str(caught.value)


def test_a_truncated_file_is_downloaded_again_when_allowed(tmp_path, network, monkeypatch):
    written = write_mnist(tmp_path, train=8, test=4)
    name = "t10k-labels-idx1-ubyte.gz"
    good = (tmp_path / name).read_bytes()
    (tmp_path / name).write_bytes(good[:-3])
    # Publish the small test file in place of the real one, with its checksum.
    checksums = dict(MNIST._checksums)
    sha = network.serve(MNIST._urls[0] + name, good)
    checksums[name] = (sha, len(good))
    monkeypatch.setattr(MNIST, "_checksums", checksums)
    with pytest.warns(RuntimeWarning, match="downloading it again"):
        mnist = MNIST(batch_size=4, root=tmp_path, download=True, verify=False)
    assert network.calls == [MNIST._urls[0] + name]
    assert (tmp_path / name).read_bytes() == good
    np.testing.assert_array_equal(stacked(mnist.validation)[1], written[name])


def test_real_checksums_reject_a_download_that_differs(tmp_path, network):
    write_mnist(tmp_path, train=8, test=4)
    name = "train-labels-idx1-ubyte.gz"
    (tmp_path / name).unlink()
    for url in MNIST._urls:
        network.serve(url + name, b"\x1f\x8b" + b"\x00" * 28879)
    with pytest.raises(CorruptDataError, match="failed its integrity check"):
        MNIST(root=tmp_path, download=True, verify=False)
    assert not (tmp_path / name).exists()


def test_hand_decompressed_files_are_read_too(tmp_path):
    written = write_mnist(tmp_path, train=6, test=3)
    for name in MNIST_FILES:
        gz = tmp_path / name
        gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
        gz.unlink()
    mnist = MNIST(batch_size=3, root=tmp_path, download=False)
    np.testing.assert_array_equal(stacked(mnist.validation)[1],
                                  written["t10k-labels-idx1-ubyte.gz"])


def test_image_and_label_counts_must_agree(tmp_path):
    write_mnist(tmp_path, train=8, test=4)
    labels = np.zeros(7, np.uint8)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(labels)))
    with pytest.raises(CorruptDataError, match="8 images but train-labels holds 7 labels"):
        MNIST(root=tmp_path, download=False, verify=False)


def test_labels_out_of_range_are_refused(tmp_path):
    write_mnist(tmp_path, train=4, test=4)
    labels = np.array([0, 1, 2, 12], np.uint8)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(labels)))
    with pytest.raises(ValueError, match="validation labels must lie in"):
        MNIST(root=tmp_path, download=False, verify=False)


def test_swapped_images_and_labels_files_are_refused(tmp_path):
    write_mnist(tmp_path, train=4, test=4)
    images = tmp_path / "t10k-images-idx3-ubyte.gz"
    labels = tmp_path / "t10k-labels-idx1-ubyte.gz"
    a, b = images.read_bytes(), labels.read_bytes()
    images.write_bytes(b)
    labels.write_bytes(a)
    with pytest.raises(CorruptDataError, match="expected images"):
        MNIST(root=tmp_path, download=False, verify=False)


@pytest.mark.parametrize("cls, directory, last_class", [
    (MNIST, "mnist", "9"),
    (FashionMNIST, "fashion_mnist", "ankle boot"),
    (KuzushijiMNIST, "kuzushiji_mnist", "wo"),
])
def test_the_default_root_is_under_s4tf_data_dir(tmp_path, monkeypatch, cls, directory,
                                                 last_class):
    monkeypatch.setenv("S4TF_DATA_DIR", str(tmp_path / "data"))
    write_mnist(tmp_path / "data" / directory, train=5, test=5)
    dataset = cls(batch_size=5, download=False, verify=False)
    assert dataset.class_names[-1] == last_class and dataset.num_classes == 10
    assert dataset.training.num_examples == 5


def test_hand_placed_files_that_are_not_the_published_ones_are_refused(tmp_path, network):
    written = write_mnist(tmp_path, train=6, test=3)  # readable, but not the real MNIST
    before = {name: (tmp_path / name).read_bytes() for name in MNIST_FILES}
    with pytest.raises(CorruptDataError) as caught:
        MNIST(root=tmp_path, download=True)
    message = str(caught.value)
    assert "is not the published train-images-idx3-ubyte.gz" in message
    assert MNIST._checksums["train-images-idx3-ubyte.gz"][0] in message
    assert "pass verify=False to use it" in message
    assert network.calls == []
    assert {name: (tmp_path / name).read_bytes() for name in MNIST_FILES} == before
    mnist = MNIST(batch_size=3, root=tmp_path, download=False, verify=False)
    np.testing.assert_array_equal(stacked(mnist.validation)[1],
                                  written["t10k-labels-idx1-ubyte.gz"])


def test_a_corrupt_file_while_offline_is_reported_as_corrupt_not_missing(tmp_path, network):
    write_mnist(tmp_path, train=6, test=3)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.warns(RuntimeWarning), pytest.raises(CorruptDataError) as caught:
        MNIST(root=tmp_path, download=True, verify=False)
    message = str(caught.value)
    assert f"{path} is corrupt or truncated" in message and "are you offline?" in message
    assert not isinstance(caught.value, MissingDataError)


def test_s4tf_data_dir_that_is_a_file_names_the_variable(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("S4TF_DATA_DIR", str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError, match=r"S4TF_DATA_DIR=.*file is a file"):
        MNIST(download=True)
