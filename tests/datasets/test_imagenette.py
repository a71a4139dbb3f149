import tarfile

import numpy as np
import pytest
from dataset_files import png_bytes, write_image, write_tar_gz

from s4tf.datasets import CorruptDataError, Imagenette, MissingDataError

TENCH, CHURCH = "n01440764", "n03028079"


def archive_members() -> dict[str, bytes]:
    members = {}
    for split, count in (("train", 3), ("val", 2)):
        for wnid, colour in ((TENCH, (200, 10, 10)), (CHURCH, (10, 10, 200))):
            for i in range(count):
                members[f"imagenette2-160/{split}/{wnid}/{wnid}_{i}.JPEG"] = png_bytes(
                    colour, size=(24, 16)
                )
    members["imagenette2-160/noisy_imagenette.csv"] = b"path,noisy_labels_0\n"
    return members


def labels_of(batches) -> list[int]:
    return np.concatenate([l for _, l in batches._numpy_batches()]).tolist()


def test_the_archive_is_extracted_once_and_read_as_an_image_folder(tmp_path):
    archive = write_tar_gz(tmp_path / "imagenette2-160.tgz", archive_members())
    imagenette = Imagenette(batch_size=4, root=tmp_path, download=False, verify=False, image_size=16)
    assert imagenette.class_names == ("tench", "church")
    assert imagenette.training.num_examples == 6 and imagenette.validation.num_examples == 4
    images, labels = next(imagenette.validation._numpy_batches())
    assert images.shape == (4, 16, 16, 3) and labels.tolist() == [0, 0, 1, 1]
    assert (tmp_path / "imagenette2-160" / "train" / TENCH).is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imagenette2-160", "imagenette2-160.tgz"]
    # Next time the extracted folder is used; the archive is no longer needed.
    archive.unlink()
    again = Imagenette(batch_size=4, root=tmp_path, download=False, verify=False, image_size=16)
    assert labels_of(again.validation) == [0, 0, 1, 1]


def test_a_root_holding_train_and_val_directly_works(tmp_path):
    for split in ("train", "val"):
        write_image(tmp_path / split / CHURCH / "a.png", (0, 0, 255))
    imagenette = Imagenette(batch_size=2, root=tmp_path, download=False, image_size=8)
    assert imagenette.class_names == ("church",)


def test_a_truncated_archive_is_refused_and_leaves_no_half_extracted_folder(tmp_path):
    archive = write_tar_gz(tmp_path / "imagenette2-160.tgz", archive_members())
    archive.write_bytes(archive.read_bytes()[:-30])
    with pytest.raises(CorruptDataError) as caught:
        Imagenette(root=tmp_path, download=False)
    assert str(archive) in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imagenette2-160.tgz"]


@pytest.mark.parametrize("stdlib_filter", [True, False])
def test_an_archive_escaping_its_folder_is_refused(tmp_path, monkeypatch, stdlib_filter):
    if not stdlib_filter:  # the fallback used on Pythons without tarfile.data_filter
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    members = archive_members()
    members["../escaped.txt"] = b"gotcha"
    write_tar_gz(tmp_path / "imagenette2-160.tgz", members)
    with pytest.raises(CorruptDataError):
        Imagenette(root=tmp_path, download=False)
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert not (tmp_path / "imagenette2-160").exists()


def test_missing_archive_offline_names_file_url_and_directory(tmp_path):
    with pytest.raises(MissingDataError) as caught:
        Imagenette(root=tmp_path / "inet", download=False)
    message = str(caught.value)
    assert "'imagenette2-160.tgz'" in message
    assert "https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-160.tgz" in message
    assert str((tmp_path / "inet").resolve()) in message


def test_a_hand_placed_archive_that_is_not_the_published_one_is_refused_unextracted(tmp_path):
    write_tar_gz(tmp_path / "imagenette2-160.tgz", archive_members())
    with pytest.raises(CorruptDataError, match="not the published imagenette2-160.tgz.*"
                                               "pass verify=False to use it"):
        Imagenette(root=tmp_path, download=False)
    # Refused before extraction, so that a later run cannot use it through the folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imagenette2-160.tgz"]
    assert Imagenette(root=tmp_path, download=False, verify=False, image_size=8).num_classes == 2
