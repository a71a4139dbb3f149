import errno
import hashlib
import io
import os
import urllib.error
from pathlib import Path

import pytest

from s4tf.datasets import CorruptDataError, MissingDataError, download
from s4tf.datasets.download import RemoteFile, data_directory, fetch, obtain

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB, so the stream takes several chunks
URL = "https://data.example/files/blob.bin"
MIRROR = "https://mirror.example/blob.bin"


def remote(payload: bytes = PAYLOAD, size: int | None = None, urls=(URL, MIRROR)) -> RemoteFile:
    return RemoteFile("blob.bin", tuple(urls), hashlib.sha256(payload).hexdigest(), size)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_data_directory_prefers_root_then_the_environment(tmp_path, monkeypatch):
    assert data_directory("mnist", tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.setenv("S4TF_DATA_DIR", str(tmp_path / "env"))
    assert data_directory("mnist") == tmp_path / "env" / "mnist"
    monkeypatch.delenv("S4TF_DATA_DIR")
    assert data_directory("cifar10") == Path.home() / ".cache" / "s4tf" / "cifar10"


def test_fetch_streams_verifies_and_places_the_file(tmp_path, network):
    network.serve(URL, PAYLOAD)
    path = fetch(remote(size=len(PAYLOAD)), tmp_path / "new", dataset="Blob")
    assert path == tmp_path / "new" / "blob.bin"
    assert path.read_bytes() == PAYLOAD
    assert leftovers(tmp_path / "new") == ["blob.bin"]
    assert network.calls == [URL]


def test_the_file_appears_only_once_the_download_is_complete(tmp_path, monkeypatch):
    target = tmp_path / "blob.bin"
    observed = []

    class Watching(io.BytesIO):
        def read(self, size=-1):
            # Mid-stream: only the hidden temporary file exists.
            observed.append((target.exists(), leftovers(tmp_path)))
            return super().read(size)

    monkeypatch.setattr(download, "_open_url", lambda url: (Watching(PAYLOAD), len(PAYLOAD)))
    fetch(remote(), tmp_path, dataset="Blob")
    assert observed and not any(exists for exists, _ in observed)
    names = observed[1][1]
    assert len(names) == 1 and names[0].startswith(".blob.bin.") and names[0].endswith(".part")
    assert target.read_bytes() == PAYLOAD


def test_a_checksum_mismatch_writes_nothing_and_says_so(tmp_path, network):
    network.serve(URL, PAYLOAD[:-1] + b"X")
    network.serve(MIRROR, PAYLOAD[:-1] + b"Y")
    with pytest.raises(CorruptDataError) as caught:
        fetch(remote(), tmp_path, dataset="Blob")
    message = str(caught.value)
    assert "failed its integrity check" in message
    assert hashlib.sha256(PAYLOAD).hexdigest() in message
    assert URL in message and MIRROR in message and str(tmp_path) in message
    assert leftovers(tmp_path) == []


def test_a_truncated_transfer_is_detected(tmp_path, network):
    network.serve(URL, PAYLOAD[:1000], announce=len(PAYLOAD))
    with pytest.raises(CorruptDataError, match=f"stopped after 1000 of {len(PAYLOAD)} bytes"):
        fetch(remote(urls=(URL,)), tmp_path, dataset="Blob")
    assert leftovers(tmp_path) == []


def test_a_short_file_is_detected_against_the_published_size(tmp_path, network):
    # A server that announces nothing; the published size still catches it.
    network.serve(URL, PAYLOAD[:1000])
    network.announce[URL] = None
    with pytest.raises(CorruptDataError, match=f"published file has {len(PAYLOAD)}"):
        fetch(remote(size=len(PAYLOAD), urls=(URL,)), tmp_path, dataset="Blob")


def test_a_connection_dropped_mid_stream_leaves_no_partial_file(tmp_path, monkeypatch):
    class Dropping(io.BytesIO):
        def read(self, size=-1):
            if self.tell() > 0:
                raise ConnectionResetError("peer reset")
            return super().read(size)

    monkeypatch.setattr(download, "_open_url", lambda url: (Dropping(PAYLOAD), len(PAYLOAD)))
    with pytest.raises(MissingDataError, match="ConnectionResetError: peer reset"):
        fetch(remote(), tmp_path, dataset="Blob")
    assert leftovers(tmp_path) == []


def test_the_next_mirror_is_tried_when_one_fails(tmp_path, network):
    network.failures[URL] = urllib.error.URLError("no route to host")
    network.serve(MIRROR, PAYLOAD)
    assert fetch(remote(), tmp_path, dataset="Blob").read_bytes() == PAYLOAD
    assert network.calls == [URL, MIRROR]


def test_offline_the_error_names_the_file_the_url_and_the_directory(tmp_path, network):
    directory = tmp_path / "cache" / "blob"
    with pytest.raises(MissingDataError) as caught:
        obtain(remote(), directory, Path.read_bytes, download=True, dataset="Blob")
    message = str(caught.value)
    assert "'blob.bin'" in message and "are you offline?" in message
    assert URL in message and MIRROR in message
    assert str(directory.resolve()) in message
    assert isinstance(caught.value, FileNotFoundError)


def test_download_false_never_touches_the_network(tmp_path):
    # The autouse fixture turns any network access into an AssertionError.
    with pytest.raises(MissingDataError) as caught:
        obtain(remote(), tmp_path / "d", Path.read_bytes, download=False, dataset="Blob")
    message = str(caught.value)
    assert "download=False" in message and URL in message
    assert str((tmp_path / "d").resolve()) in message
    assert not (tmp_path / "d").exists()


def load_checked(path: Path) -> bytes:
    data = path.read_bytes()
    if data != PAYLOAD:
        raise CorruptDataError(f"{path.name} is not the payload")
    return data


def test_a_corrupt_file_is_fetched_again_when_allowed(tmp_path, network):
    network.serve(URL, PAYLOAD)
    (tmp_path / "blob.bin").write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="corrupt or truncated"):
        value = obtain(remote(), tmp_path, load_checked, download=True, dataset="Blob")
    assert value == PAYLOAD and (tmp_path / "blob.bin").read_bytes() == PAYLOAD


def test_a_corrupt_file_is_never_used_when_download_is_off(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"garbage")
    with pytest.raises(CorruptDataError) as caught:
        obtain(remote(), tmp_path, load_checked, download=False, dataset="Blob")
    message = str(caught.value)
    assert str(tmp_path / "blob.bin") in message and "Delete it" in message and URL in message
    assert (tmp_path / "blob.bin").read_bytes() == b"garbage"


def test_an_existing_good_file_is_used_without_downloading(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD)
    assert obtain(remote(), tmp_path, load_checked, download=True, dataset="Blob") == PAYLOAD


def test_an_alternative_form_is_preferred_when_present(tmp_path):
    (tmp_path / "blob").mkdir()
    value = obtain(remote(), tmp_path, load_checked, download=False, dataset="Blob",
                   alternatives=[(tmp_path / "blob", lambda p: "from folder")])
    assert value == "from folder"


def test_a_partial_file_from_an_earlier_crash_is_ignored(tmp_path, network):
    network.serve(URL, PAYLOAD)
    (tmp_path / ".blob.bin.abc123.part").write_bytes(PAYLOAD[:10])
    assert obtain(remote(), tmp_path, load_checked, download=True, dataset="Blob") == PAYLOAD
    assert os.path.exists(tmp_path / "blob.bin")


# --- the data directory: a file, unreadable or read-only ------------------------------

def _inside(path, directory) -> bool:
    path = os.path.abspath(os.fspath(path))
    return path.startswith(os.path.join(os.fspath(directory), ""))


@pytest.fixture
def unreadable(monkeypatch):
    """Make a directory unreadable (mode 000); as root, the kernel's refusals are imitated.

    Root ignores permission bits, so there os.stat of anything inside and
    listing the directory raise EACCES as they would for any other user.
    """
    made = []

    def make(directory: Path) -> Path:
        directory.chmod(0)
        made.append(directory)
        if os.geteuid() == 0:
            real_stat, real_scandir = os.stat, os.scandir

            def stat(path, *args, **kwargs):
                if _inside(path, directory):
                    raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
                return real_stat(path, *args, **kwargs)

            def scandir(path="."):
                if os.path.abspath(os.fspath(path)) == os.fspath(directory):
                    raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
                return real_scandir(path)

            monkeypatch.setattr(os, "stat", stat)
            monkeypatch.setattr(os, "scandir", scandir)
        return directory

    yield make
    monkeypatch.undo()
    for directory in made:
        directory.chmod(0o755)


@pytest.fixture
def read_only(monkeypatch):
    """Make a directory read-only; as root, a read-only mount (EROFS) is imitated."""
    made = []

    def make(directory: Path) -> Path:
        directory.chmod(0o555)
        made.append(directory)
        if os.geteuid() == 0:
            real_open, real_mkdir = os.open, os.mkdir
            writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT

            def refuse(path):
                raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))

            def open_(path, flags, *args, **kwargs):
                target = os.path.abspath(os.fspath(path))
                if flags & writing and (target == os.fspath(directory) or _inside(target, directory)):
                    refuse(path)
                return real_open(path, flags, *args, **kwargs)

            def mkdir(path, *args, **kwargs):
                if _inside(path, directory):
                    refuse(path)
                return real_mkdir(path, *args, **kwargs)

            monkeypatch.setattr(os, "open", open_)
            monkeypatch.setattr(os, "mkdir", mkdir)
        return directory

    yield make
    monkeypatch.undo()
    for directory in made:
        directory.chmod(0o755)


def test_s4tf_data_dir_that_is_a_file_is_named_in_the_error(tmp_path, monkeypatch):
    a_file = tmp_path / "cache.txt"
    a_file.write_text("not a directory")
    monkeypatch.setenv("S4TF_DATA_DIR", str(a_file))
    with pytest.raises(NotADirectoryError) as caught:
        data_directory("mnist")
    message = str(caught.value)
    assert f"S4TF_DATA_DIR={str(a_file)!r}" in message and "is a file, not a directory" in message
    assert "Set S4TF_DATA_DIR to a directory" in message
    # A folder below a file, and root= naming a file, are refused the same way.
    monkeypatch.setenv("S4TF_DATA_DIR", str(a_file / "below"))
    with pytest.raises(NotADirectoryError, match=f"{a_file} is a file"):
        data_directory("mnist")
    with pytest.raises(NotADirectoryError, match="root=.*Pass root= a directory"):
        data_directory("mnist", root=a_file)


def test_an_unreadable_s4tf_data_dir_is_named_in_the_error(tmp_path, monkeypatch, unreadable):
    base = tmp_path / "cache"
    (base / "blob").mkdir(parents=True)
    monkeypatch.setenv("S4TF_DATA_DIR", str(base))
    unreadable(base)
    with pytest.raises(PermissionError) as caught:
        data_directory("blob")
    message = str(caught.value)
    assert f"S4TF_DATA_DIR={str(base)!r}" in message and "Permission denied" in message


def test_an_unreadable_data_set_directory_is_named_in_the_error(tmp_path, monkeypatch,
                                                                 unreadable):
    base = tmp_path / "cache"
    (base / "blob").mkdir(parents=True)
    monkeypatch.setenv("S4TF_DATA_DIR", str(base))
    unreadable(base / "blob")
    with pytest.raises(PermissionError, match=f"S4TF_DATA_DIR={str(base)!r}: the directory "
                                              f"{base / 'blob'} cannot be read"):
        obtain(remote(), data_directory("blob"), load_checked, download=False, dataset="Blob")


def test_a_read_only_s4tf_data_dir_is_named_when_a_download_needs_it(tmp_path, monkeypatch,
                                                                     network, read_only):
    network.serve(URL, PAYLOAD)
    base = tmp_path / "cache"
    (base / "present").mkdir(parents=True)
    (base / "present" / "blob.bin").write_bytes(PAYLOAD)
    monkeypatch.setenv("S4TF_DATA_DIR", str(base))
    read_only(base)
    read_only(base / "present")
    # Reading from a read-only cache is fine ...
    assert obtain(remote(), data_directory("present"), load_checked, download=True,
                  dataset="Blob") == PAYLOAD
    # ... downloading into it is not, and the error says so instead of "offline".
    with pytest.raises(PermissionError) as caught:
        obtain(remote(), data_directory("absent"), load_checked, download=True, dataset="Blob")
    message = str(caught.value)
    assert "cannot download 'blob.bin' for Blob" in message
    assert f"S4TF_DATA_DIR={str(base)!r}: {base / 'absent'} is not a writable directory" in message
    assert network.calls == []


# --- a corrupt file while offline; a hand-placed file that is not the published one ---

def test_a_corrupt_file_while_offline_is_reported_as_corrupt(tmp_path, network):
    (tmp_path / "blob.bin").write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="downloading it again"):
        with pytest.raises(CorruptDataError) as caught:
            obtain(remote(), tmp_path, load_checked, download=True, dataset="Blob")
    message = str(caught.value)
    assert f"{tmp_path / 'blob.bin'} is corrupt or truncated" in message
    assert "downloading a fresh copy failed (are you offline?)" in message
    assert "which is not in" not in message and URL in message
    assert not isinstance(caught.value, MissingDataError)
    assert (tmp_path / "blob.bin").read_bytes() == b"garbage"


@pytest.mark.parametrize("size", [None, len(PAYLOAD)])
def test_a_hand_placed_file_that_fails_its_checksum_is_refused(tmp_path, network, size):
    network.serve(URL, PAYLOAD)
    mine = PAYLOAD[:-1] + b"!"  # readable by its parser, but not the published bytes
    (tmp_path / "blob.bin").write_bytes(mine)
    with pytest.raises(CorruptDataError) as caught:
        obtain(remote(size=size), tmp_path, Path.read_bytes, download=True, dataset="Blob")
    message = str(caught.value)
    assert f"{tmp_path / 'blob.bin'} is not the published blob.bin" in message
    assert hashlib.sha256(mine).hexdigest() in message
    assert hashlib.sha256(PAYLOAD).hexdigest() in message
    assert "pass verify=False to use it" in message
    # Never replaced by a download, never used.
    assert network.calls == [] and (tmp_path / "blob.bin").read_bytes() == mine
    assert obtain(remote(size=size), tmp_path, Path.read_bytes, download=True, dataset="Blob",
                  verify=False) == mine


def test_a_damaged_file_of_the_published_size_is_still_fetched_again(tmp_path, network):
    network.serve(URL, PAYLOAD)
    (tmp_path / "blob.bin").write_bytes(b"\0" * len(PAYLOAD))  # its parser rejects it
    with pytest.warns(RuntimeWarning, match="corrupt or truncated"):
        value = obtain(remote(size=len(PAYLOAD)), tmp_path, load_checked, download=True,
                       dataset="Blob")
    assert value == PAYLOAD and (tmp_path / "blob.bin").read_bytes() == PAYLOAD
