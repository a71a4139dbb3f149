"""Imagenette: ten easy ImageNet classes (fast.ai), as ``imagenette2-160.tgz``."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from .archives import open_tar_gz
from .dataset import Normalize, _options_doc
from .download import CorruptDataError, RemoteFile, data_directory, obtain, require_writable
from .image_folder import ImageFolder

__all__ = ["Imagenette"]

_FOLDER = "imagenette2-160"
_ARCHIVE = RemoteFile(
    f"{_FOLDER}.tgz",
    (f"https://s3.amazonaws.com/fast-ai-imageclas/{_FOLDER}.tgz",),
    # As recorded by TensorFlow Datasets (url_checksums/imagenette.txt).
    "88daccb09b6fce93f45e6c09ddeb269cce705549e6bff322092a2a5a11489863",
    98948031,
)
# The folders are WordNet ids; these are their ImageNet class names.
_CLASS_NAMES = {
    "n01440764": "tench",
    "n02102040": "English springer",
    "n02979186": "cassette player",
    "n03000684": "chain saw",
    "n03028079": "church",
    "n03394916": "French horn",
    "n03417042": "garbage truck",
    "n03425413": "gas pump",
    "n03445777": "golf ball",
    "n03888605": "parachute",
}


class Imagenette(ImageFolder):
    __doc__ = (
        """Imagenette (160 px version): 9,469 training and 3,925 validation photos, 10 classes.

    A subset of ImageNet chosen by fast.ai to be quick to train on. The
    archive's images have their shorter side at 160 pixels; they are resized
    and centre-cropped to ``image_size``. Needs pillow.

    Parameters
    ----------
    batch_size : int
        Examples per batch.
    root : path-like or None
        The directory holding ``imagenette2-160.tgz``, its extracted
        ``imagenette2-160/`` folder, or that folder's ``train/`` and ``val/``
        themselves. Default: ``$S4TF_DATA_DIR/imagenette`` (``S4TF_DATA_DIR``
        defaults to ``~/.cache/s4tf``). The archive is extracted next to itself
        on first use.
    download : bool
        Download the archive when missing or corrupt (SHA-256 verified).
    verify : bool
        Check an archive found in ``root`` against its published SHA-256 and
        refuse one that differs. ``False`` accepts such an archive; an
        extracted folder is never checked.
    image_size : int or (height, width)
        The size of the returned images.
"""
        + _options_doc(standard="with ImageNet's per-channel constants", prefetch="Decode")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> imagenette = datasets.Imagenette(batch_size=64, image_size=128)  # doctest: +SKIP
    >>> imagenette.class_names[0]                                        # doctest: +SKIP
    'tench'
"""
    )

    def __init__(
        self,
        batch_size: int = 128,
        root: str | os.PathLike | None = None,
        download: bool = True,
        *,
        verify: bool = True,
        image_size: int | tuple[int, int] = 160,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        directory = data_directory("imagenette", root)
        if _is_split_folder(directory):
            folder = directory
        else:
            folder = obtain(
                _ARCHIVE,
                directory,
                _extract,
                download=download,
                dataset="Imagenette",
                alternatives=[(directory / _FOLDER, _checked_folder)],
                verify=verify,
                check=_check_archive,
            )
        super().__init__(
            folder,
            image_size,
            batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
            validation_transform=validation_transform,
        )
        self.class_names = tuple(_CLASS_NAMES.get(n, n) for n in self.class_names)


def _is_split_folder(folder: Path) -> bool:
    return (folder / "train").is_dir() and (folder / "val").is_dir()


def _checked_folder(folder: Path) -> Path:
    if not _is_split_folder(folder):
        raise CorruptDataError(f"{folder} has no train/ and val/ folders")
    return folder


def _check_archive(archive: Path) -> None:
    """Read the archive through without extracting: raises CorruptDataError if damaged."""
    with open_tar_gz(archive) as tar:
        for _ in tar:
            pass


def _extract(archive: Path) -> Path:
    """Extract the archive next to itself; the folder appears only when complete."""
    final = archive.parent / _FOLDER
    if final.exists():
        # Reached only when the folder failed its check: it is not ours to delete.
        raise FileExistsError(
            f"Imagenette: {final} exists but is not a complete Imagenette folder (it needs "
            f"train/ and val/). Delete it so that it can be extracted again from {archive}."
        )
    require_writable(archive.parent, f"extract {archive.name} for Imagenette")
    staging = Path(tempfile.mkdtemp(prefix=f".{_FOLDER}.", suffix=".partial", dir=archive.parent))
    try:
        with open_tar_gz(archive) as tar:
            _extract_safely(tar, staging)
        _checked_folder(staging / _FOLDER)
        os.replace(staging / _FOLDER, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _extract_safely(tar: tarfile.TarFile, destination: Path) -> None:
    """Extract only regular files and folders that stay inside ``destination``."""
    if hasattr(tarfile, "data_filter"):
        # Python >= 3.10.12 / 3.11.4: the standard library's own safe filter.
        tar.extractall(destination, filter="data")
        return
    tar.extractall(destination, members=_checked_members(tar, destination))


def _checked_members(tar: tarfile.TarFile, destination: Path):
    inside = destination.resolve()
    for member in tar:
        target = (destination / member.name).resolve()
        if not (member.isfile() or member.isdir()) or inside not in (target, *target.parents):
            raise CorruptDataError(
                f"the archive member {member.name!r} is a link or points outside the "
                f"extraction folder; refusing to extract it"
            )
        yield member
