import pickle

import numpy as np
import pytest
from dataset_files import cifar10_members, cifar100_members, write_members, write_tar_gz

from s4tf.datasets import CIFAR10, CIFAR100, CorruptDataError, MissingDataError


def stacked(batches):
    parts = list(batches._numpy_batches())
    return np.concatenate([d for d, _ in parts]), np.concatenate([l for _, l in parts])


def as_nhwc(rows: np.ndarray) -> np.ndarray:
    """The documented layout: 1024 red, then 1024 green, then 1024 blue values, row-major."""
    red, green, blue = rows[:, :1024], rows[:, 1024:2048], rows[:, 2048:]
    return np.stack([c.reshape(-1, 32, 32) for c in (red, green, blue)], axis=-1)


@pytest.mark.parametrize("extracted", [False, True])
def test_cifar10_reads_the_archive_or_its_folder(tmp_path, extracted):
    members, arrays = cifar10_members(per_batch=6, test=8)
    if extracted:
        write_members(tmp_path, members)
    else:
        write_tar_gz(tmp_path / "cifar-10-python.tar.gz", members)
    cifar = CIFAR10(batch_size=5, root=tmp_path, download=False, verify=False, seed=0)
    assert cifar.class_names[:3] == ("airplane", "automobile", "bird")
    assert cifar.image_shape == (32, 32, 3) and cifar.num_classes == 10
    assert cifar.training.num_examples == 30 and len(cifar.training) == 6
    images, labels = stacked(cifar.validation)
    data, expected_labels = arrays["test_batch"]
    assert images.shape == (8, 32, 32, 3) and images.dtype == np.float32
    np.testing.assert_allclose(images, as_nhwc(data) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(labels, expected_labels)
    assert labels.dtype == np.int32


def test_cifar10_training_holds_all_five_batches(tmp_path):
    members, arrays = cifar10_members(per_batch=4, test=2)
    write_tar_gz(tmp_path / "cifar-10-python.tar.gz", members)
    cifar = CIFAR10(batch_size=7, root=tmp_path, download=False, verify=False, seed=1)
    images, labels = stacked(cifar.training)
    expected = np.concatenate([as_nhwc(arrays[f"data_batch_{i}"][0]) for i in range(1, 6)])
    expected_labels = np.concatenate([arrays[f"data_batch_{i}"][1] for i in range(1, 6)])
    order = cifar.training.order(0)
    np.testing.assert_allclose(images, expected[order] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(labels, expected_labels[order])


def test_cifar10_normalize_true_standardises_each_channel(tmp_path):
    write_tar_gz(tmp_path / "cifar-10-python.tar.gz", cifar10_members(per_batch=5)[0])
    cifar = CIFAR10(batch_size=25, root=tmp_path, download=False, verify=False, normalize=True)
    images, _ = stacked(cifar.training)
    np.testing.assert_allclose(images.mean(axis=(0, 1, 2)), 0, atol=1e-4)
    np.testing.assert_allclose(images.std(axis=(0, 1, 2)), 1, atol=1e-4)
    assert cifar.normalization[0].shape == (3,)


@pytest.mark.parametrize("mode, classes, key", [("fine", 100, 1), ("coarse", 20, 2)])
def test_cifar100_label_modes(tmp_path, mode, classes, key):
    members, arrays = cifar100_members(train=12, test=5)
    write_tar_gz(tmp_path / "cifar-100-python.tar.gz", members)
    cifar = CIFAR100(batch_size=4, root=tmp_path, download=False, verify=False, label_mode=mode)
    assert cifar.num_classes == classes and cifar.class_names[1] == f"{mode}1"
    images, labels = stacked(cifar.validation)
    np.testing.assert_array_equal(labels, arrays["test"][key])
    np.testing.assert_allclose(images, as_nhwc(arrays["test"][0]) / 255.0, rtol=1e-6)
    assert cifar.training.num_examples == 12


def test_cifar100_extracted_folder(tmp_path):
    members, arrays = cifar100_members(train=3, test=2)
    write_members(tmp_path, members)
    cifar = CIFAR100(batch_size=4, root=tmp_path, download=False)
    np.testing.assert_array_equal(stacked(cifar.validation)[1], arrays["test"][1])


def test_cifar100_rejects_an_unknown_label_mode(tmp_path):
    with pytest.raises(ValueError, match="label_mode must be 'fine'.*received label_mode='medium'"):
        CIFAR100(root=tmp_path, download=False, label_mode="medium")


@pytest.mark.parametrize("damage", [
    lambda gz: gz[: len(gz) // 2],
    lambda gz: gz[:-9],
    lambda gz: b"PK\x03\x04" + gz[4:],
])
def test_a_damaged_archive_is_reported_not_used(tmp_path, damage):
    path = write_tar_gz(tmp_path / "cifar-10-python.tar.gz", cifar10_members()[0])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CorruptDataError) as caught:
        CIFAR10(root=tmp_path, download=False)
    assert str(path) in str(caught.value)
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in str(caught.value)


def test_an_archive_missing_a_batch_is_corrupt(tmp_path):
    members, _ = cifar10_members()
    del members["cifar-10-batches-py/data_batch_3"]
    write_tar_gz(tmp_path / "cifar-10-python.tar.gz", members)
    with pytest.raises(CorruptDataError, match="has no file cifar-10-batches-py/data_batch_3"):
        CIFAR10(root=tmp_path, download=False, verify=False)


def test_a_batch_of_the_wrong_shape_is_corrupt(tmp_path):
    members, _ = cifar10_members()
    members["cifar-10-batches-py/test_batch"] = pickle.dumps(
        {b"data": np.zeros((4, 100), np.uint8), b"labels": [0, 1, 2, 3]}, protocol=2
    )
    write_tar_gz(tmp_path / "cifar-10-python.tar.gz", members)
    with pytest.raises(CorruptDataError, match=r"shape \(4, 100\); expected uint8 of shape"):
        CIFAR10(root=tmp_path, download=False, verify=False)


class _Exploit:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


def test_a_pickle_that_would_run_code_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    members, _ = cifar10_members()
    members["cifar-10-batches-py/batches.meta"] = pickle.dumps(
        {b"label_names": _Exploit()}, protocol=2
    )
    write_tar_gz(tmp_path / "cifar-10-python.tar.gz", members)
    with pytest.raises(CorruptDataError, match="refers to (posix|os).system"):
        CIFAR10(root=tmp_path, download=False, verify=False)
    assert not (tmp_path / "pwned").exists()


def test_missing_archive_offline_names_file_url_and_directory(tmp_path):
    with pytest.raises(MissingDataError) as caught:
        CIFAR100(root=tmp_path / "c100", download=False)
    message = str(caught.value)
    assert "'cifar-100-python.tar.gz'" in message
    assert "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz" in message
    assert str((tmp_path / "c100").resolve()) in message


def test_a_downloaded_archive_is_verified_against_the_real_checksum(tmp_path, network):
    # The small test archive is not the real one, so its checksum must fail.
    network.serve("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                  write_tar_gz(tmp_path / "staging.tar.gz", cifar10_members()[0]).read_bytes())
    with pytest.raises(CorruptDataError, match="failed its integrity check"):
        CIFAR10(root=tmp_path / "c10", download=True)
    assert not (tmp_path / "c10" / "cifar-10-python.tar.gz").exists()


def test_a_hand_placed_archive_that_is_not_the_published_one_is_refused(tmp_path, network):
    archive = write_tar_gz(tmp_path / "cifar-10-python.tar.gz", cifar10_members()[0])
    with pytest.raises(CorruptDataError, match="not the published cifar-10-python.tar.gz.*"
                                               "pass verify=False to use it"):
        CIFAR10(root=tmp_path, download=True)
    assert network.calls == [] and archive.exists()
    assert CIFAR10(root=tmp_path, download=False, verify=False).num_classes == 10
