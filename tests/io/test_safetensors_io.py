"""Our safetensors reader/writer: contiguous writes (safetensors 0.8.0 scrambles non-contiguous arrays), and a
header check that turns truncated or lying files into one clear line naming the file and the tensor."""

import json
import struct

import numpy as np
import pytest
from safetensors import SafetensorError

from minibert.io.safetensors_io import load_safetensors, read_safetensors_header, save_safetensors


def write_raw(path, header, data=b""):
    """A safetensors file written by hand, so the header can say anything."""
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_round_trip_of_non_contiguous_arrays(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((5, 7)).astype(np.float32)
    tensors = {
        "transposed": base.T,  # (7, 5) view, Fortran order
        "strided": base[:, ::2],  # every other column
        "fortran": np.asfortranarray(rng.standard_normal((3, 4))),  # float64
        "big_endian": np.arange(6, dtype=">i8").reshape(2, 3),
        "plain": np.arange(4, dtype=np.int64),
    }
    assert not tensors["transposed"].flags.c_contiguous
    path = tmp_path / "t.safetensors"
    save_safetensors(tensors, path, metadata={"format": "pt"})
    loaded = load_safetensors(path)
    assert set(loaded) == set(tensors)
    for name, array in tensors.items():
        assert loaded[name].shape == array.shape, name
        np.testing.assert_array_equal(loaded[name], array, err_msg=name)
    # and the file is readable by the safetensors package itself, with our metadata
    from safetensors import safe_open
    with safe_open(str(path), framework="numpy") as f:
        assert f.metadata() == {"format": "pt"}
        np.testing.assert_array_equal(f.get_tensor("transposed"), base.T)


def test_save_is_atomic_old_file_survives_a_failed_write(tmp_path):
    path = tmp_path / "w.safetensors"
    save_safetensors({"a": np.ones(3, np.float32)}, path)
    before = path.read_bytes()
    with pytest.raises(SafetensorError):
        save_safetensors({"a": np.array([object()], dtype=object)}, path)  # safetensors refuses object arrays
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.safetensors"]  # no temp file left behind


def test_bfloat16_is_read_as_float32(tmp_path):
    values = np.array([1.0, -2.5, 0.15625, 2.0**100], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2")  # these values are exact in bfloat16
    path = write_raw(tmp_path / "b.safetensors",
                     {"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                      "y": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}},
                     bf16.tobytes() + np.float32(7).tobytes())
    loaded = load_safetensors(path)
    np.testing.assert_array_equal(loaded["x"], values.reshape(2, 2))
    assert loaded["y"][0] == 7


def good_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors({"a.weight": np.ones((4, 3), np.float32), "b.bias": np.zeros(5, np.float32)}, path)
    return path


def test_truncated_file_names_file_and_tensor(tmp_path):
    path = good_file(tmp_path)
    path.write_bytes(path.read_bytes()[:-6])  # the last tensor lost its end
    with pytest.raises(ValueError, match=r"model\.safetensors: tensor '(a\.weight|b\.bias)'.*truncated"):
        read_safetensors_header(path)


def test_header_length_beyond_the_file(tmp_path):
    path = good_file(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(struct.pack("<Q", 10**7) + raw[8:])
    with pytest.raises(ValueError, match=r"model\.safetensors: header length .* 10,000,000"):
        read_safetensors_header(path)
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="shorter than the 8-byte"):
        read_safetensors_header(path)


def test_header_that_lies_about_sizes(tmp_path):
    data = np.zeros(12, np.float32).tobytes()  # 48 bytes
    path = write_raw(tmp_path / "m.safetensors",
                     {"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 48]}}, data)  # 4x4 needs 64
    with pytest.raises(ValueError, match=r"m\.safetensors: tensor 'w': header says F32 \(4, 4\) = 64 bytes.*48"):
        read_safetensors_header(path)


@pytest.mark.parametrize("header, message", [
    ({"w": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype 'F33'"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, "shape must be a list of non-negative"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, "data_offsets must be"),
    ({"w": {"dtype": "F32", "shape": [1]}}, "exactly dtype, shape and data_offsets"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "v": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, "overlaps"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, "gap"),
    ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "__metadata__": {"a": 1}}, "__metadata__"),
])
def test_inconsistent_headers(tmp_path, header, message):
    path = write_raw(tmp_path / "m.safetensors", header, b"\0" * 8)
    with pytest.raises(ValueError, match=message):
        read_safetensors_header(path)


def test_extra_bytes_and_non_json(tmp_path):
    path = write_raw(tmp_path / "m.safetensors", {"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
                     b"\0" * 12)
    with pytest.raises(ValueError, match="extra bytes"):
        read_safetensors_header(path)
    path.write_bytes(struct.pack("<Q", 4) + b"nope")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_safetensors_header(path)


def test_saved_weights_get_the_same_permissions_as_any_other_file(tmp_path):
    # safetensors 0.8 writes its files 0o600: a model in a shared runs folder would be unreadable to others
    # while its config.json beside it is readable. Written files get what open() gives (0o666 less the umask).
    import os
    import stat

    from minibert.io.safetensors_io import save_safetensors
    old = os.umask(0o022)
    try:
        save_safetensors({"w": np.zeros((2, 3), dtype=np.float32)}, tmp_path / "model.safetensors")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "model.safetensors").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == 0o644


def test_saved_weights_follow_the_folders_default_acl_like_other_files(tmp_path):
    # A shared runs folder is usually set up with a default ACL (group-writable files): the weights get what
    # open() gives there, and files whose writer did not make them private keep what they got.
    import os
    import stat

    from minibert.io.atomic import atomic_write_text
    from minibert.io.safetensors_io import save_safetensors
    folder = tmp_path / "shared"
    folder.mkdir()
    undefined = 0xFFFFFFFF  # u::rw- g::rw- o::r--, as `setfacl -d -m g::rw folder` would leave it
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, undefined)
                                         for tag, perm in ((0x01, 6), (0x04, 6), (0x20, 4)))
    try:
        os.setxattr(folder, "system.posix_acl_default", acl)
    except (OSError, AttributeError):
        pytest.skip("no POSIX ACLs on this file system")
    (folder / "plain.txt").write_text("x")
    atomic_write_text(folder / "atomic.txt", "x")
    save_safetensors({"w": np.zeros(3, dtype=np.float32)}, folder / "model.safetensors")
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()}
    assert modes == {"plain.txt": 0o664, "atomic.txt": 0o664, "model.safetensors": 0o664}  # and no probe left
