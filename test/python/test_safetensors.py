"""safetensors files (harp.safetensors, harp.save / harp.load of
".safetensors" paths, the C++ reader and writer under them), checked
against files written and read here independently, from the format's
specification, with NumPy and Python's json: an 8-byte little-endian header
length N, N bytes of JSON ({name: {"dtype", "shape", "data_offsets"}} and an
optional "__metadata__" of strings), then the data, every byte of it
belonging to exactly one tensor."""

import json
import struct

import numpy as np
import pytest
import torch

import harp
import harp.nn as nn
from harp import HarpError

# The format's dtypes harp holds, with NumPy's.
DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16,
    "I16": np.int16, "U32": np.uint32, "I32": np.int32, "U64": np.uint64,
    "I64": np.int64, "F32": np.float32, "F64": np.float64,
}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 17)]


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    values = (rng.standard_normal(shape) * 100).astype(dtype)
    if values.size:  # the bits of special values survive too
        values.flat[0] = -0.0
        values.flat[-1] = np.inf if values.size > 1 else np.nan
    return values


def write_reference(path, tensors, metadata=None, pad=True):
    """A safetensors file written from the specification, not by harp."""
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (code, array) in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def read_reference(path):
    """(header, {name: array}) of a safetensors file, read from the
    specification."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    arrays = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = np.dtype(DTYPES[entry["dtype"]])
        arrays[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"])
    return n, header, arrays


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def test_every_dtype_and_shape_written_elsewhere_loads_bit_for_bit(tmp_path):
    tensors = {}
    for i, (code, dtype) in enumerate(DTYPES.items()):
        for j, shape in enumerate(SHAPES):
            tensors["%s.%d" % (code.lower(), j)] = (code, sample(dtype, shape, 10 * i + j))
    path = tmp_path / "reference.safetensors"
    write_reference(path, tensors, metadata={"format": "pt", "note": "x"})
    loaded = harp.safetensors.load_file(path)
    assert list(loaded) == list(tensors)  # the file's order
    for name, (code, array) in tensors.items():
        tensor = loaded[name]
        assert isinstance(tensor, harp.Tensor)
        assert tensor.dtype.name == np.dtype(DTYPES[code]).name
        same_bits(tensor.numpy(), array)
    assert harp.safetensors.load_metadata(path) == {"format": "pt", "note": "x"}


def test_every_dtype_written_by_harp_reads_by_the_specification(tmp_path):
    tensors = {}
    for i, (code, dtype) in enumerate(DTYPES.items()):
        for j, shape in enumerate(SHAPES):
            tensors["%s.%d" % (code.lower(), j)] = sample(dtype, shape, 7 * i + j)
    path = tmp_path / "harp.safetensors"
    # Computed tensors are realized; NumPy arrays are taken as they are.
    given = {name: (harp.tensor(a) * 1 if a.dtype != np.bool_ else harp.tensor(a))
             for name, a in tensors.items()}
    given["raw"] = np.arange(5, dtype=np.int32)
    harp.safetensors.save_file(given, path, metadata={"format": "pt"})
    n, header, arrays = read_reference(path)
    assert (8 + n) % 8 == 0  # the data starts aligned
    assert header["__metadata__"] == {"format": "pt"}
    code_of = {np.dtype(v).name: k for k, v in DTYPES.items()}
    for name, array in tensors.items():
        assert header[name]["dtype"] == code_of[array.dtype.name]
        same_bits(arrays[name], array)
    same_bits(arrays["raw"], np.arange(5, dtype=np.int32))
    # The byte ranges tile the data in the order given.
    ranges = [header[name]["data_offsets"] for name in list(tensors) + ["raw"]]
    assert ranges[0][0] == 0
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert ranges[-1][1] == len(open(path, "rb").read()) - 8 - n


def test_bytes_round_trip_and_an_unpadded_header():
    values = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    data = harp.safetensors.save(values)
    assert isinstance(data, bytes)
    back = harp.safetensors.load(data)
    same_bits(back["w"].numpy(), values["w"])


def test_unpadded_header_written_elsewhere(tmp_path):
    path = tmp_path / "u.safetensors"
    write_reference(path, {"a": ("I16", np.arange(3, dtype=np.int16))}, pad=False)
    same_bits(harp.safetensors.load_file(path)["a"].numpy(), np.arange(3, dtype=np.int16))


def make_model():
    harp.manual_seed(3)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 5 * 5, 7))


def test_state_dict_through_harp_save_and_load(tmp_path):
    model = make_model()
    x = harp.tensor(np.random.default_rng(1).standard_normal((2, 3, 7, 7)).astype(np.float32))
    model(x).sum().backward()  # running statistics move
    path = tmp_path / "model.safetensors"
    harp.save(model.state_dict(), path)
    state = harp.load(path)
    assert list(state) == list(model.state_dict())
    other = make_model()
    for p in other.parameters():
        with harp.no_grad():
            p.mul_(0.0)
    other.load_state_dict(state)
    model.eval()
    other.eval()
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    for name, array in model.state_dict().items():
        same_bits(other.state_dict()[name], array)
    # The file is the format's: every tensor reads back by the specification.
    _, header, arrays = read_reference(path)
    for name, array in model.state_dict().items():
        same_bits(arrays[name], array)


def test_torch_state_dict_saved_by_harp_loads_into_harp_and_back_into_torch(tmp_path):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4))
    path = tmp_path / "torch.safetensors"
    harp.safetensors.save_file(reference.state_dict(), path)
    model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4))
    model.load_state_dict(harp.safetensors.load_file(path))
    back = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4))
    back.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                          for k, v in harp.load(path).items()})
    for name, value in reference.state_dict().items():
        same_bits(model.state_dict()[name], value.numpy())
        same_bits(back.state_dict()[name].numpy(), value.numpy())


def test_map_location_moves_loaded_tensors(tmp_path):
    path = tmp_path / "m.safetensors"
    harp.save({"a": harp.ones(2)}, path)
    seen = []
    loaded = harp.load(path, map_location=lambda t, where: seen.append(where) or t * 2)
    np.testing.assert_array_equal(loaded["a"].numpy(), [2.0, 2.0])
    assert seen == ["cpu"]


def test_loaded_tensors_keep_the_files_dtypes(tmp_path):
    path = tmp_path / "mixed.safetensors"
    harp.save({"f": harp.ones(2), "i": harp.tensor([1, 2])}, path)
    loaded = harp.load(path)
    assert loaded["f"].dtype == harp.float32 and loaded["i"].dtype == harp.int64


@pytest.mark.parametrize("code", ["F16", "BF16", "F8_E4M3"])
def test_dtypes_harp_cannot_hold_name_the_tensor(tmp_path, code):
    path = tmp_path / "h.safetensors"
    write_reference(path, {"ok": ("F32", np.ones(2, np.float32)),
                           "half": (code, np.ones(3, np.float16))})
    with pytest.raises(HarpError, match=r"h\.safetensors: tensor 'half' is %s, which harp "
                       r"tensors cannot hold" % code):
        harp.safetensors.load_file(path)


def test_writing_what_the_format_cannot_hold_names_it_and_leaves_no_file(tmp_path):
    path = tmp_path / "c.safetensors"
    with pytest.raises(HarpError, match="tensor 'z' is c64, which has no safetensors dtype"):
        harp.safetensors.save_file({"a": harp.ones(2), "z": harp.tensor(np.ones(2, np.complex64))}, path)
    assert not path.exists()
    # An existing file is kept as it was.
    harp.safetensors.save_file({"a": harp.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(HarpError, match="float16"):
        harp.safetensors.save_file({"h": np.ones(2, np.float16)}, path)
    with pytest.raises(HarpError, match="tensor 'b': .*BFloat16"):
        harp.safetensors.save_file({"b": torch.ones(2, dtype=torch.bfloat16)}, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors"]


@pytest.mark.parametrize("tensors, message", [
    ({"a": 3}, "tensor 'a' is a int, not a tensor"),
    ({1: harp.ones(1)}, "tensor names must be strings"),
    ({"__metadata__": harp.ones(1)}, "cannot be named '__metadata__'"),
])
def test_bad_arguments(tmp_path, tensors, message):
    with pytest.raises(HarpError, match=message):
        harp.safetensors.save_file(tensors, tmp_path / "x.safetensors")
    with pytest.raises(HarpError, match="metadata must be a dict of strings"):
        harp.safetensors.save_file({"a": harp.ones(1)}, tmp_path / "x.safetensors",
                                   metadata={"a": 1})
    with pytest.raises(HarpError, match="a .safetensors file holds a dict"):
        harp.save(harp.ones(2), tmp_path / "x.safetensors")
    with pytest.raises(HarpError, match="cannot write .*no-such-dir"):
        harp.safetensors.save_file({"a": harp.ones(1)}, tmp_path / "no-such-dir" / "x.safetensors")
    with pytest.raises(HarpError, match="cannot read .*absent.safetensors"):
        harp.safetensors.load_file(tmp_path / "absent.safetensors")


def valid_file(tmp_path):
    path = tmp_path / "good.safetensors"
    write_reference(path, {"a": ("F32", np.arange(6, dtype=np.float32).reshape(2, 3)),
                           "b": ("I64", np.arange(4, dtype=np.int64))})
    return path.read_bytes()


def header_of(blob):
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def with_header(header, data, raw=None):
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def edit(field_path, value):
    """A corruption: one header field replaced."""
    def corrupt(blob):
        header, data = header_of(blob)
        entry = header
        for key in field_path[:-1]:
            entry = entry[key]
        entry[field_path[-1]] = value
        return with_header(header, data)
    return corrupt


CORRUPTIONS = {
    "empty": (lambda b: b"", "fewer than the 8 of the header length"),
    "length only": (lambda b: b[:5], "fewer than the 8"),
    "header cut": (lambda b: b[:20], "runs past the end of the file"),
    "data cut": (lambda b: b[:-3], r"cover 56 data bytes, the file holds 53 \(truncated\?\)"),
    "extra data": (lambda b: b + b"\0" * 8, "cover 56 data bytes, the file holds 64"),
    "huge header length": (lambda b: struct.pack("<Q", 1 << 40) + b[8:], "exceeds the format's 100 MB"),
    "not json": (lambda b: with_header(None, header_of(b)[1], raw=b"{\"a\": [1, 2"),
                 "the header is not valid JSON"),
    "not an object": (lambda b: with_header([1, 2], b""), "must be a JSON object, got array"),
    "entry not an object": (edit(["a"], 7), "tensor 'a' must be a JSON object"),
    "no dtype": (lambda b: edit(["a"], {"shape": [2, 3], "data_offsets": [0, 24]})(b),
                 "tensor 'a' has no \"dtype\""),
    "unknown dtype": (edit(["a", "dtype"], "F33"), "tensor 'a' has dtype \"F33\", which is not"),
    "dtype not a string": (edit(["a", "dtype"], 3), "\"dtype\" must be a string"),
    "shape not an array": (edit(["a", "shape"], "2x3"), "\"shape\" must be an array"),
    "negative size": (edit(["a", "shape"], [-2, -3]), "must hold nonnegative integers"),
    "float size": (edit(["a", "shape"], [2.0, 3]), "must hold nonnegative integers"),
    "shape and bytes differ": (edit(["a", "shape"], [2, 4]),
                               r"tensor 'a': shape \[2,4\] of \"F32\" needs 32 bytes"),
    "offsets not a pair": (edit(["a", "data_offsets"], [0]), "must be \\[begin, end\\]"),
    "offsets reversed": (edit(["a", "data_offsets"], [24, 0]), "end before they begin"),
    "a hole": (edit(["b", "data_offsets"], [32, 64]), r"(hole|shape \[4\] of)"),
    "an overlap": (lambda b: edit(["b", "data_offsets"], [16, 48])(b), r"(overlap|shape \[4\])"),
    "metadata not strings": (edit(["__metadata__"], {"k": 1}), "entry \"k\" must be a string"),
    "metadata not an object": (edit(["__metadata__"], [1]), "\"__metadata__\" must be an object"),
    "named twice": (lambda b: with_header(None, header_of(b)[1], raw=(
        b'{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
        b'"a":{"dtype":"I64","shape":[4],"data_offsets":[24,56]}}')), "names \"a\" twice"),
    "a field twice": (lambda b: with_header(None, header_of(b)[1], raw=(
        b'{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24],"dtype":"I32"},'
        b'"b":{"dtype":"I64","shape":[4],"data_offsets":[24,56]}}')), "names \"dtype\" twice"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_damaged_files_raise_naming_the_file_and_the_problem(tmp_path, name):
    corrupt, message = CORRUPTIONS[name]
    path = tmp_path / "damaged.safetensors"
    path.write_bytes(corrupt(valid_file(tmp_path)))
    with pytest.raises(HarpError, match=r"safetensors: .*damaged\.safetensors: .*" + message):
        harp.safetensors.load_file(path)
    with pytest.raises(HarpError, match=message):
        harp.load(path)


def test_holes_and_overlaps_are_told_apart(tmp_path):
    blob = valid_file(tmp_path)
    header, data = header_of(blob)
    # b moved past a gap, the data grown to match: a hole.
    header["b"]["data_offsets"] = [32, 64]
    path = tmp_path / "hole.safetensors"
    path.write_bytes(with_header(header, data + b"\0" * 8))
    with pytest.raises(HarpError, match="tensor 'b' starts at data byte 32 where 24 was "
                       "expected \\(a hole\\)"):
        harp.safetensors.load_file(path)
    header["b"]["data_offsets"] = [16, 48]
    path.write_bytes(with_header(header, data[:48]))
    with pytest.raises(HarpError, match="starts at data byte 16 where 24 was expected "
                       "\\(an overlap\\)"):
        harp.safetensors.load_file(path)


def test_a_bool_byte_other_than_0_or_1_is_an_error(tmp_path):
    path = tmp_path / "b.safetensors"
    write_reference(path, {"m": ("BOOL", np.array([0, 1, 2], np.uint8))})
    with pytest.raises(HarpError, match="tensor 'm' is BOOL but holds byte 2 at element 2"):
        harp.safetensors.load_file(path)


def test_load_state_dict_takes_what_torch_load_returns(tmp_path):
    torch.manual_seed(1)
    reference = torch.nn.Sequential(torch.nn.Conv1d(3, 4, 2), torch.nn.BatchNorm1d(4))
    reference(torch.randn(2, 3, 5))  # running statistics and the batch count move
    path = tmp_path / "torch.pt"
    torch.save(reference.state_dict(), path)
    model = nn.Sequential(nn.Conv1d(3, 4, 2), nn.BatchNorm1d(4))
    model.load_state_dict(torch.load(path))  # torch tensors, as torch loaded them
    for name, value in reference.state_dict().items():
        same_bits(model.state_dict()[name], value.numpy())
