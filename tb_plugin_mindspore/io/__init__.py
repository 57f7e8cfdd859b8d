"""Files and records: the bottom of the server side.

Holds: ``fs.py`` (one filesystem layer for every reader and the writer's uploads: local paths through ``os``, URLs
such as ``s3://`` through fsspec, byte-range reads), ``records.py`` (the TFRecord framing with CRC32C that event
files and MindSpore's ``*_MS`` files share: the one record reader and writer; ``RecordFile`` reads one file from
where it stopped, damaged records skipped and named, replaced files read again), ``ms_proto.py`` (MindSpore's
summary messages, defined in Python), ``event_headers.py`` (cheap checks of record headers that name a file breaking
TensorBoard's loaders).

May import: the standard library, numpy, protobuf, google-crc32c, fsspec; nothing else of this project.
"""
