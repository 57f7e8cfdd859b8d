"""The pure helpers behind the reliability promises: JSON depth limits, record-header scanning, the safe view of a
logdir for ``check``, the data-server message."""

import os

import pytest

import hostile
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import event_headers
from tb_plugin_mindspore.answers import problems
from tb_plugin_mindspore.sources import safe_view


@pytest.mark.parametrize("text,depth", [
    ("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[[", "]]"]', 1), ('["\\"[[[", 2]', 1),
    ('{"k\\\\": [[]]}', 3),
])
def test_json_depth_ignores_brackets_in_strings(text, depth):
    assert metadata.json_depth(text) == depth


def test_loads_json_refuses_hostile_text_with_a_content_error():
    assert metadata.loads_json('{"a": [1]}') == {"a": [1]}
    assert metadata.loads_json(hostile.nested_json(64)) is not None
    for text, message in ((hostile.nested_json(65), "nests deeper than 64 levels"),
                          (hostile.nested_json(10 ** 6), "nests deeper than 64 levels"),
                          (b"\xff\xfe", "is not UTF-8"), ("{", "is not JSON"), (3, "is not text")):
        with pytest.raises(metadata.ContentError, match=message):
            metadata.loads_json(text)
    with pytest.raises(metadata.ContentError, match="plugin content nests deeper"):
        metadata.parse_content('{"version": 1, "kind": "layers", "x": %s}' % hostile.nested_json(5000))


def _event_file(tmp_path, tail=b"", steps=20):
    return hostile.write_events(str(tmp_path / "run" / hostile.EVENT_NAME), hostile.loss_events(steps), tail=tail)


def test_scan_headers_accepts_a_file_being_written(tmp_path):
    path = _event_file(tmp_path)
    size = os.path.getsize(path)
    assert event_headers.scan_headers(path) == (size, None)
    with open(path, "ab") as f:                     # a record still being written: header and part of its data
        f.write(hostile.frame_header(1000) + b"\x01" * 10)
    assert event_headers.scan_headers(path) == (size, None)
    assert event_headers.scan_headers(path, start=size) == (size, None)     # incremental


def test_scan_headers_names_impossible_lengths_and_lost_framing(tmp_path):
    path = _event_file(tmp_path, tail=hostile.frame_header(1 << 60) + b"x" * 8)
    offset, finding = event_headers.scan_headers(path)
    assert finding["offset"] == offset == os.path.getsize(path) - 20
    assert "claims 1152921504606846976 bytes (1.0 EiB)" in finding["reason"]
    path = _event_file(tmp_path / "b", tail=b"\x00" * 8 + b"\x01\x02\x03\x04" + b"x" * 30)
    assert "bad record length checksum" in event_headers.scan_headers(path)[1]["reason"]


def test_header_scanner_rescans_a_replaced_file_and_forgets_a_removed_one(tmp_path):
    path = _event_file(tmp_path, tail=hostile.frame_header(1 << 40))
    scanner = event_headers.HeaderScanner(str(tmp_path))
    assert len(scanner.findings([path])) == 1
    os.remove(path)
    path = _event_file(tmp_path)
    assert scanner.findings([path]) == []
    assert scanner.findings([]) == [] and scanner._state == {}


def test_safe_view_leaves_out_fifos_and_cuts_impossible_records(tmp_path):
    root = tmp_path / "logs"
    clean = _event_file(root / "clean")
    with safe_view.safe_view(str(root / "clean")) as view:
        assert view == str(root / "clean")          # nothing hostile: the logdir itself
    huge = _event_file(root / "huge", tail=hostile.frame_header(1 << 60) + b"x" * 8)
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / hostile.EVENT_NAME)
    found = safe_view.problems(str(root))
    assert {p["file"] for p in found} == {"fifo/" + hostile.EVENT_NAME, os.path.relpath(huge, root)}
    with safe_view.safe_view(str(root), found) as view:
        names = sorted(os.path.relpath(os.path.join(r, n), view) for r, _, ns in os.walk(view) for n in ns)
        assert names == sorted([os.path.relpath(clean, root), os.path.relpath(huge, root)])
        assert os.path.islink(os.path.join(view, os.path.relpath(clean, root)))
        assert os.path.getsize(os.path.join(view, os.path.relpath(huge, root))) == os.path.getsize(huge) - 20
    assert not os.path.exists(view)


def test_data_server_message_names_the_file_or_says_none_was_found():
    culprit = {"run": "bad", "file": "bad/x.tfevents", "offset": 85,
               "reason": "a record claims 8 bytes; TensorBoard's loaders cannot read past it"}
    text = problems.data_server_message([{"file": "fifo/y", "offset": None, "reason": "not a regular file"}, culprit])
    assert "bad/x.tfevents at byte 85" in text and "--load_fast=false" in text
    assert "No event file with a broken record header was found" in problems.data_server_message([])
