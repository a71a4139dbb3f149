"""Compressed files: contents read as a stream, any damage reported as CorruptDataError."""

import gzip
import io
import tarfile

import pytest

from s4tf.datasets import CorruptDataError
from s4tf.datasets.archives import open_tar_gz, read_maybe_gzip


def _tar_gz(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_read_maybe_gzip_decompresses_only_gz_names(tmp_path):
    (tmp_path / "plain.bin").write_bytes(b"\x00\x01")
    with gzip.open(tmp_path / "packed.gz", "wb") as file:
        file.write(b"packed")
    assert read_maybe_gzip(tmp_path / "plain.bin") == b"\x00\x01"
    assert read_maybe_gzip(tmp_path / "packed.gz") == b"packed"


def test_read_maybe_gzip_reports_truncation(tmp_path):
    with gzip.open(tmp_path / "a.gz", "wb") as file:
        file.write(bytes(range(256)) * 64)
    raw = (tmp_path / "a.gz").read_bytes()
    (tmp_path / "a.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CorruptDataError, match="a.gz is not a complete gzip file"):
        read_maybe_gzip(tmp_path / "a.gz")


def test_open_tar_gz_streams_members_in_order(tmp_path):
    path = _tar_gz(tmp_path / "x.tar.gz", {"a": b"first", "b": b"second"})
    with open_tar_gz(path) as archive:
        read = [(info.name, archive.extractfile(info).read()) for info in archive]
    assert read == [("a", b"first"), ("b", b"second")]


def test_open_tar_gz_catches_a_damaged_tail_after_every_member_was_read(tmp_path):
    path = _tar_gz(tmp_path / "x.tar.gz", {"a": b"payload" * 100})
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # the gzip trailer (CRC and length): the members still decompress
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="x.tar.gz is not a complete tar.gz"):
        with open_tar_gz(path) as archive:
            assert [archive.extractfile(info).read() for info in archive] == [b"payload" * 100]


def test_open_tar_gz_rejects_non_gzip_and_lets_other_errors_through(tmp_path):
    (tmp_path / "bad.tar.gz").write_bytes(b"not gzip at all")
    with pytest.raises(CorruptDataError, match="bad.tar.gz is not a complete tar.gz"):
        with open_tar_gz(tmp_path / "bad.tar.gz"):
            pass
    path = _tar_gz(tmp_path / "ok.tar.gz", {"a": b"x"})
    with pytest.raises(KeyError):
        with open_tar_gz(path):
            raise KeyError("raised by the caller, not a damaged file")
