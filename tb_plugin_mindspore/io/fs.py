"""One small filesystem layer for every reader: local paths keep ``os`` (the fast path), URLs go through fsspec.

A path is remote when it holds ``://`` (``s3://bucket/prefix``, ``gs://``, ``hdfs://``, ... whatever fsspec has a
filesystem for; ``file://`` is local). Remote reads are byte ranges (``cat_file(path, start, end)``), so a reader
that keeps its offset fetches only the new bytes of a growing file; a whole tree is listed with one recursive
listing (``find``), whose sizes and times are kept for ``LISTING_SECS`` so that a poll does not also ask for each
file on its own.

S3 and S3-compatible stores (Huawei OBS, MinIO, Ceph): credentials as boto3 takes them (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``~/.aws``), the endpoint from ``S3_ENDPOINT`` (the variable TensorBoard's own S3 reader
uses) or ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``. Other stores take fsspec's own settings
(``FSSPEC_<PROTOCOL>_<OPTION>`` variables).

The functions mirror ``os``: :func:`stat` returns an ``os.stat_result``-like value and raises ``OSError``
(``FileNotFoundError`` for a missing file); :func:`open_regular` a binary file object that :func:`fstat` describes.
``counters`` tells how many remote requests and bytes were fetched (tests and ``bench/remote.py`` read it).
"""

import collections
import logging
import os
import stat as stat_module
import threading
import time

logger = logging.getLogger(__name__)

LISTING_SECS = 1.0
_ENDPOINT_VARS = ("S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")

# What a remote stat says: a regular file (or folder), its size and modification time; no inode (0, 0).
Stat = collections.namedtuple("Stat", "st_mode st_size st_mtime st_mtime_ns st_dev st_ino")

counters = {"requests": 0, "bytes": 0}
_lock = threading.Lock()
_filesystems = {}
_listed = {}             # url -> (monotonic time, Stat) from the last listing
_last_walk = {}          # top url -> the last listing that worked (served again while the store cannot be reached)
_failing = set()         # tops whose listing fails (warned once each)


def is_remote(path):
    """Whether ``path`` is a URL read through fsspec (``file://`` and plain paths are local)."""
    text = str(path)
    return "://" in text and not text.startswith("file://")


def normalize(path):
    """A local path made absolute (``~`` expanded); a URL without its trailing slash."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
    if text.startswith("file://"):
        text = text[len("file://"):]
    if is_remote(text):
        return text.rstrip("/") if not text.endswith("://") else text
    return os.path.abspath(os.path.expanduser(text))


def join(base, *parts):
    if not is_remote(base):
        return os.path.join(base, *parts)
    out = base.rstrip("/")
    for part in parts:
        out = out + "/" + str(part).strip("/")
    return out


def relpath(path, base):
    """``path`` relative to ``base`` (``"."`` for ``base`` itself), with ``/`` between remote parts."""
    if not is_remote(base):
        return os.path.relpath(path, base)
    base = base.rstrip("/")
    if path.rstrip("/") == base:
        return "."
    if path.startswith(base + "/"):
        return path[len(base) + 1:]
    return path


def dirname(path):
    return path.rsplit("/", 1)[0] if is_remote(path) else os.path.dirname(path)


def basename(path):
    return path.rstrip("/").rsplit("/", 1)[-1] if is_remote(path) else os.path.basename(path)


# -- remote filesystems ------------------------------------------------------------------------------------------
def storage_options(protocol, environ=None):
    """The fsspec options this layer adds for ``protocol``: the S3 endpoint from the environment (see module doc);
    listings are never cached by the filesystem (a poll must see new files)."""
    env = os.environ if environ is None else environ
    options = {"use_listings_cache": False}
    if protocol in ("s3", "s3a"):
        # An unreachable store fails in seconds rather than after botocore's minutes of retries.
        options["config_kwargs"] = {"connect_timeout": 5, "read_timeout": 30, "retries": {"max_attempts": 2}}
        endpoint = next((env[k] for k in _ENDPOINT_VARS if env.get(k)), None)
        if endpoint:
            if "://" not in endpoint:   # TensorBoard's S3_ENDPOINT may be a bare host
                secure = env.get("S3_USE_HTTPS", "1") not in ("0", "false", "False")
                endpoint = ("https://" if secure else "http://") + endpoint
            options["client_kwargs"] = {"endpoint_url": endpoint}
    return options


def filesystem(url):
    """``(fsspec filesystem, path without the protocol)`` for ``url``. Raises ``OSError`` with a one-line reason
    when no installed library handles the protocol."""
    protocol = url.split("://", 1)[0]
    with _lock:
        fs = _filesystems.get(protocol)
    if fs is None:
        try:
            import fsspec

            fs = fsspec.filesystem(protocol, **storage_options(protocol))
        except ImportError as e:
            raise OSError("reading %s:// needs a filesystem library: %s (pip install \"tb-plugin-mindspore[remote]\""
                          " for s3://, gcsfs for gs://, pyarrow for hdfs://)" % (protocol, e)) from None
        except ValueError as e:
            raise OSError("no filesystem for %s:// (%s)" % (protocol, e)) from None
        with _lock:
            _filesystems[protocol] = fs
    return fs, fs._strip_protocol(url)


def reset():
    """Forgets the filesystem objects and listings (a test changed the environment or restarted a server)."""
    with _lock:
        _filesystems.clear()
        _listed.clear()
        _last_walk.clear()
        _failing.clear()


def _count(nbytes=0):
    with _lock:
        counters["requests"] += 1
        counters["bytes"] += nbytes


def _url(protocol, path):
    return "%s://%s" % (protocol, path.lstrip("/"))


def _as_os_error(error, url):
    if isinstance(error, OSError):
        return error
    return OSError("%s: %s" % (url, str(error).splitlines()[0] if str(error) else type(error).__name__))


def _remote_stat(info):
    mtime = info.get("LastModified") or info.get("mtime") or info.get("updated") or info.get("last_modified")
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    try:
        mtime = float(mtime or 0.0)
    except (TypeError, ValueError):
        mtime = 0.0
    mode = stat_module.S_IFDIR if info.get("type") == "directory" else stat_module.S_IFREG
    return Stat(mode | 0o444, int(info.get("size") or 0), mtime, int(mtime * 1e9), 0, 0)


# -- the os-like functions ---------------------------------------------------------------------------------------
def stat(path):
    """``os.stat`` for local paths; for URLs a :class:`Stat` (from the last listing if it is fresh)."""
    if not is_remote(path):
        return os.stat(path)
    with _lock:
        seen = _listed.get(path)
    if seen is not None and time.monotonic() - seen[0] < LISTING_SECS:
        return seen[1]
    fs, rpath = filesystem(path)
    try:
        _count()
        info = fs.info(rpath)
    except FileNotFoundError:
        raise FileNotFoundError(2, "No such file", path) from None
    except Exception as e:
        raise _as_os_error(e, path) from None
    return _remote_stat(info)


def isdir(path):
    if not is_remote(path):
        return os.path.isdir(path)
    fs, rpath = filesystem(path)
    try:
        _count()
        return bool(fs.isdir(rpath))
    except Exception:
        return False


def exists(path):
    if not is_remote(path):
        return os.path.exists(path)
    fs, rpath = filesystem(path)
    try:
        _count()
        return bool(fs.exists(rpath))
    except Exception:
        return False


def lexists(path):
    """``os.path.lexists``; for a URL, True also when the store cannot be reached (not a reason to forget a file)."""
    if not is_remote(path):
        return os.path.lexists(path)
    fs, rpath = filesystem(path)
    try:
        _count()
        return bool(fs.exists(rpath))
    except Exception:
        return True


def islink(path):
    return os.path.islink(path) if not is_remote(path) else False


def getsize(path):
    return stat(path).st_size


def walk(top):
    """``os.walk(top)`` for local paths (folders sorted by the caller as before); for URLs one recursive listing
    turned into the same ``(root, dirs, names)`` triples, parents first, names sorted. When the store cannot be
    reached the last listing that worked is served again (one warning; nothing is forgotten during an outage), or
    nothing if there was none (like ``os.walk`` on a missing folder)."""
    if not is_remote(top):
        yield from os.walk(top)
        return
    top = top.rstrip("/")
    protocol = top.split("://", 1)[0]
    fs, rtop = filesystem(top)
    try:
        _count()
        found = fs.find(rtop, withdirs=False, detail=True)
    except Exception as e:
        with _lock:
            found = _last_walk.get(top)
            first = top not in _failing
            _failing.add(top)
        if first:
            logger.warning("tb-mindspore: cannot list %s (%s); showing what was read before, retrying", top,
                           str(e).splitlines()[0] if str(e) else type(e).__name__)
        if found is None:
            return
    else:
        with _lock:
            _last_walk[top] = found
            if top in _failing:
                _failing.discard(top)
                logger.warning("tb-mindspore: %s can be listed again", top)
    now = time.monotonic()
    tree = collections.defaultdict(lambda: (set(), []))
    tree[top]
    with _lock:
        for rpath, info in found.items():
            if info.get("type") == "directory":
                continue
            url = _url(protocol, rpath)
            if not url.startswith(top + "/"):
                continue
            _listed[url] = (now, _remote_stat(info))
            root, name = url.rsplit("/", 1)
            tree[root][1].append(name)
            while root != top:          # every folder between top and this file
                parent, child = root.rsplit("/", 1)
                tree[parent][0].add(child)
                root = parent
    for root in sorted(tree, key=lambda r: (r.count("/"), r)):
        dirs, names = tree[root]
        yield root, sorted(dirs), sorted(names)


class _RangeFile:
    """A read-only remote file: each ``read`` is one ranged request; ``stat`` is what was known when opened."""

    def __init__(self, fs, rpath, url, st):
        self._fs, self._rpath, self.name, self.stat = fs, rpath, url, st
        self._pos = 0
        self.closed = False

    def seek(self, offset, whence=0):
        self._pos = offset if whence == 0 else (self._pos + offset if whence == 1 else self.stat.st_size + offset)
        return self._pos

    def tell(self):
        return self._pos

    def read(self, n=-1):
        end = self.stat.st_size if n is None or n < 0 else min(self._pos + n, self.stat.st_size)
        if end <= self._pos:
            return b""
        try:
            data = self._fs.cat_file(self._rpath, start=self._pos, end=end)
        except FileNotFoundError:
            raise FileNotFoundError(2, "No such file", self.name) from None
        except Exception as e:
            raise _as_os_error(e, self.name) from None
        _count(len(data))
        self._pos += len(data)
        return data

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_regular(path):
    """Opens ``path`` for binary reading; locally without blocking on a FIFO (the caller checks :func:`fstat`)."""
    if not is_remote(path):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        return os.fdopen(fd, "rb")
    st = stat(path)
    fs, rpath = filesystem(path)
    return _RangeFile(fs, rpath, path, st)


def fstat(f):
    """``os.fstat`` of a file from :func:`open_regular`."""
    return f.stat if isinstance(f, _RangeFile) else os.fstat(f.fileno())


def read_bytes(path, start=0, end=None):
    """Bytes ``start:end`` of a file (the whole file by default)."""
    with open_regular(path) as f:
        f.seek(start)
        return f.read(-1 if end is None else max(0, end - start))


# -- writing (the callbacks' uploads) ----------------------------------------------------------------------------
def put_bytes(url, data):
    """Writes ``data`` as the whole object ``url`` (object stores cannot append). Raises ``OSError``."""
    fs, rpath = filesystem(url)
    try:
        _count()
        fs.pipe_file(rpath, bytes(data))
    except Exception as e:
        raise _as_os_error(e, url) from None


def remove(url):
    """Removes the object ``url``; a missing one is not an error. Raises ``OSError``."""
    fs, rpath = filesystem(url)
    try:
        _count()
        fs.rm_file(rpath)
    except FileNotFoundError:
        pass
    except Exception as e:
        raise _as_os_error(e, url) from None
