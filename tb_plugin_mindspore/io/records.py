"""TFRecord framing, shared by TensorBoard event files and MindSpore ``_MS`` summary files.

A record is ``u64 length | u32 masked_crc32c(length) | data | u32 masked_crc32c(data)`` (little endian). Both
formats use it; only the payload proto differs. CRC32C comes from the C-backed ``google-crc32c`` package.
"""

import struct

import google_crc32c

_HEADER = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
HEADER_BYTES = 12   # length (8) + its crc (4)
FOOTER_BYTES = 4


def masked_crc32c(data):
    crc = google_crc32c.value(bytes(data))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(data):
    """The bytes of one record holding ``data``."""
    header = _HEADER.pack(len(data))
    return b"".join((header, _CRC.pack(masked_crc32c(header)), data, _CRC.pack(masked_crc32c(data))))


class RecordError(ValueError):
    """A record whose framing or checksum is wrong; ``offset`` is where it starts in the file."""

    def __init__(self, message, offset):
        super().__init__("%s at byte %d" % (message, offset))
        self.offset = offset


def read_records(buf, offset=0):
    """Yields ``(offset, next_offset, data)`` for each complete record in ``buf`` from ``offset``.

    Stops quietly at an incomplete record at the end (a file still being written): the caller resumes from the
    last ``next_offset`` it saw. Raises RecordError on a bad length checksum (nothing after it can
    be trusted to be aligned). A record whose data checksum is wrong is yielded with ``data=None`` and skipped.
    """
    view = memoryview(buf)
    end = len(buf)
    while offset + HEADER_BYTES <= end:
        header = view[offset:offset + 8]
        (length,) = _HEADER.unpack(header)
        (length_crc,) = _CRC.unpack(view[offset + 8:offset + 12])
        if masked_crc32c(header) != length_crc:
            raise RecordError("bad length checksum", offset)
        stop = offset + HEADER_BYTES + length + FOOTER_BYTES
        if stop > end:
            return
        data = view[offset + HEADER_BYTES:stop - FOOTER_BYTES]
        (data_crc,) = _CRC.unpack(view[stop - FOOTER_BYTES:stop])
        if masked_crc32c(data) != data_crc:
            yield offset, stop, None
        else:
            yield offset, stop, bytes(data)
        offset = stop

