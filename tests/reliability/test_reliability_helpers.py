"""The pure helpers behind the reliability promises: JSON depth limits, record-header scanning, undecodable records,
the data-server message."""

import os

import pytest

import hostile
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import event_headers, records
from tb_plugin_mindspore.answers import problems


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


def test_scanner_names_records_that_do_not_decode(tmp_path):
    """Good checksums, a tag that is not UTF-8: TensorBoard's Python loader stopped reloading on it; named with its
    offset, the records after it still scanned."""
    good = records.frame(hostile.loss_events(1)[0].SerializeToString())
    bad = records.frame(hostile.loss_events(1, tag="core/lossXX")[0].SerializeToString().replace(b"lossXX",
                                                                                              b"lo\xff\xfess"))
    path = hostile.write_events(str(tmp_path / "run" / hostile.EVENT_NAME), [], tail=good + bad + good + bad)
    start = os.path.getsize(path) - 2 * len(good) - 2 * len(bad)
    scanner = event_headers.HeaderScanner(str(tmp_path))
    found = scanner.findings([path])
    assert [f["offset"] for f in found] == [start + len(good), start + 2 * len(good) + len(bad)]
    assert all("undecodable record" in f["reason"] and "utf-8" in f["reason"].lower() for f in found)
    assert scanner.findings([path]) == found          # kept, not scanned again
    scanner.MAX_UNDECODABLE_PER_FILE = 1
    scanner._state.clear()
    (first, more) = scanner.findings([path])
    assert first == found[0] and more["reason"] == "1 more undecodable records in this file; skipped"


def test_data_server_message_names_the_file_or_says_none_was_found():
    culprit = {"run": "bad", "file": "bad/x.tfevents", "offset": 85,
               "reason": "a record claims 8 bytes; TensorBoard's loaders cannot read past it"}
    text = problems.data_server_message([{"file": "fifo/y", "offset": None, "reason": "not a regular file"}, culprit])
    assert "bad/x.tfevents at byte 85" in text and "--load_fast=false" in text
    assert "No event file with a broken record header was found" in problems.data_server_message([])
