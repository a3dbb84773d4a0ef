"""glTF buffers must hold what they declare (glTF 2.0: a buffer's `byteLength` is its length, a
GLB's BIN chunk may add up to 3 bytes of padding, a buffer view lies inside its buffer): a file
declaring 300,000,000 bytes and holding 36 is `mesh.corrupt`, never read as if it held them."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from normalize.errors import AssetError
from normalize.meshes import load_mesh

TRIANGLE = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)  # 36 bytes


def gltf(buffer: dict, view_length: int = 36) -> dict:
    return {
        "asset": {"version": "2.0"},
        "buffers": [buffer],
        "bufferViews": [{"buffer": 0, "byteLength": view_length}],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": 3,
                "type": "VEC3",
                "min": [0, 0, 0],
                "max": [1, 1, 0],
            }
        ],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "nodes": [{"mesh": 0}],
        "scenes": [{"nodes": [0]}],
    }


def data_uri(payload: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(payload).decode()


def glb(document: dict, binary: bytes) -> bytes:
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    chunks = struct.pack("<I4s", len(text), b"JSON") + text
    chunks += struct.pack("<I4s", len(binary), b"BIN\0") + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def write_gltf(tmp_path, name: str, content) -> object:
    path = tmp_path / name
    if isinstance(content, dict):
        path.write_text(json.dumps(content))
    else:
        path.write_bytes(content)
    return path


def test_buffers_that_hold_what_they_declare_load(tmp_path):
    (tmp_path / "triangle.bin").write_bytes(TRIANGLE)
    files = {
        "embedded.gltf": gltf({"uri": data_uri(TRIANGLE), "byteLength": 36}),
        "beside.gltf": gltf({"uri": "triangle.bin", "byteLength": 36}),
        "binary.glb": glb(gltf({"byteLength": 36}), TRIANGLE),
    }
    for name, content in files.items():
        mesh = load_mesh(write_gltf(tmp_path, name, content), root=tmp_path)
        assert len(mesh.faces) == 1, name


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        (
            "huge.gltf",
            gltf({"uri": data_uri(TRIANGLE), "byteLength": 300_000_000}, view_length=36),
            "declares 300000000 bytes but holds 36",
        ),
        ("short.glb", glb(gltf({"byteLength": 96}), TRIANGLE), "declares 96 bytes but holds 36"),
        (
            "view.gltf",
            gltf({"uri": data_uri(TRIANGLE), "byteLength": 36}, view_length=72),
            "buffer view 0 does not lie inside its buffer",
        ),
        ("nolength.gltf", gltf({"uri": data_uri(TRIANGLE)}), "declares no valid byteLength"),
    ],
)
def test_a_buffer_that_does_not_hold_its_declared_bytes_is_corrupt(tmp_path, name, content, why):
    with pytest.raises(AssetError) as caught:
        load_mesh(write_gltf(tmp_path, name, content), root=tmp_path)
    assert caught.value.code == "mesh.corrupt" and why in str(caught.value)


def test_a_buffer_file_shorter_than_declared_is_corrupt(tmp_path):
    (tmp_path / "triangle.bin").write_bytes(TRIANGLE)
    path = write_gltf(tmp_path, "m.gltf", gltf({"uri": "triangle.bin", "byteLength": 3_000_000}))
    with pytest.raises(AssetError, match="declares 3000000 bytes but holds 36") as caught:
        load_mesh(path, root=tmp_path)
    assert caught.value.code == "mesh.corrupt"
