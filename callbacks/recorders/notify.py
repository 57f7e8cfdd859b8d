"""Live findings to people: each live health event posted to webhooks, from a background thread.

``live_health={"notify": [...]}`` (``TrainMonitor`` / ``LoopMonitor``): every entry is a destination, either a URL
string (``"https://hooks.slack.com/services/..."``), ``"env:VAR"`` (the URL is in the environment variable
``VAR``, read when the monitor is built), or a dict ``{"url" | "url_env", "format", "secret", "timeout",
"retries"}``. The format is the payload the receiving end expects, guessed from the URL's host when not given:

* ``"json"``: the health event as recorded (``rule``, ``severity``, ``step``, ``first_step``, ``message``,
  ``advice``, ``layers``, ``action``, ``checkpoint``) plus ``run`` (the run folder), ``host`` and ``time``;
* ``"slack"``: Slack incoming webhooks, ``{"text": ...}`` (hooks.slack.com);
* ``"feishu"``: Feishu / Lark custom bots, ``{"msg_type": "text", "content": {"text": ...}}``
  (open.feishu.cn, open.larksuite.com), signed with ``secret`` when given (``timestamp`` and ``sign``: base64 of
  HMAC-SHA256 keyed by ``"<timestamp>\\n<secret>"`` over an empty message, as Feishu documents);
* ``"dingtalk"``: DingTalk custom robots, ``{"msgtype": "text", "text": {"content": ...}}`` (oapi.dingtalk.com),
  signed with ``secret`` when given (``&timestamp=<ms>&sign=<url-quoted base64 HMAC-SHA256 of
  "<timestamp>\\n<secret>" keyed by the secret>``, as DingTalk documents);
* ``"wecom"``: WeCom (WeChat Work) group bots, ``{"msgtype": "text", "text": {"content": ...}}``
  (qyapi.weixin.qq.com).

Never in training's way: :meth:`Notifier.post` only puts the event in a bounded queue (full: the event is dropped
and counted); one daemon thread sends, with ``timeout`` seconds per request (default 5) and ``retries`` more tries
(default 3, backoff 1, 2, 4 s) on a connection error, a timeout, HTTP 429 or 5xx; a 4xx answer is not retried.
Failures are logged once per destination. :meth:`close` waits at most ``grace_s`` for what is queued, then leaves
the thread (a daemon) behind. Pure Python (``urllib``), no MindSpore.
"""

import base64
import hashlib
import hmac
import json
import os
import queue
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from ..common.util import logger

__all__ = ["FORMATS", "Destination", "Notifier", "parse_notify", "payload", "text_of"]

FORMATS = ("json", "slack", "feishu", "dingtalk", "wecom")
_HOSTS = (("hooks.slack.com", "slack"), ("open.feishu.cn", "feishu"), ("open.larksuite.com", "feishu"),
          ("oapi.dingtalk.com", "dingtalk"), ("qyapi.weixin.qq.com", "wecom"))
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYS = frozenset({"url", "url_env", "format", "secret", "timeout", "retries"})


class Destination:
    """One webhook: where, in which format, how patiently. Built by :func:`parse_notify` (validated there)."""

    def __init__(self, url, fmt, secret=None, timeout=5.0, retries=3, label=""):
        self.url, self.format, self.secret = url, fmt, secret
        self.timeout, self.retries = float(timeout), int(retries)
        self.label = label or _redact(url)
        self.sent = self.failed = 0
        self.warned = False

    def _key(self):
        return (self.url, self.format, self.secret, self.timeout, self.retries)

    def __eq__(self, other):
        return isinstance(other, Destination) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):     # never the URL's path or query: they hold the bot's token
        return "Destination(%s, %s)" % (self.label, self.format)


def _redact(url):
    """The URL without its path's secrets (tokens live in paths and query strings): scheme, host and port."""
    parts = urllib.parse.urlsplit(url)
    return "%s://%s/..." % (parts.scheme, parts.netloc)


def guess_format(url):
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    for suffix, fmt in _HOSTS:
        if host == suffix or host.endswith("." + suffix):
            return fmt
    return "json"


def _check_url(url, where):
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("live_health notify %s must be an http(s) URL, got %r" % (where, url))
    return url


def _from_env(name, where):
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        raise ValueError("live_health notify %s: %r is not an environment variable name" % (where, name))
    value = os.environ.get(name, "").strip()
    if not value:
        raise ValueError("live_health notify %s: the environment variable %s is not set" % (where, name))
    return _check_url(value, "%s (from $%s)" % (where, name))


def parse_notify(entries):
    """``[Destination]`` from ``live_health["notify"]`` (a list of URL strings, ``"env:VAR"`` or dicts); raises
    ValueError with a one-line message for anything else (at construction, never mid-training)."""
    if entries is None:
        return []
    if isinstance(entries, (str, dict)):
        entries = [entries]
    if not isinstance(entries, (list, tuple)):
        raise ValueError("live_health notify must be a list of webhook URLs or dicts, got %r" % (entries,))
    out = []
    for i, entry in enumerate(entries):
        where = "entry %d" % i
        if isinstance(entry, str):
            url = _from_env(entry[4:], where) if entry.startswith("env:") else _check_url(entry, where)
            out.append(Destination(url, guess_format(url)))
            continue
        if not isinstance(entry, dict):
            raise ValueError("live_health notify %s must be a URL string or a dict, got %r" % (where, entry))
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise ValueError("live_health notify %s has unknown key(s) %s; choose from %s" % (
                where, ", ".join(repr(k) for k in unknown), ", ".join(sorted(_KEYS))))
        if ("url" in entry) == ("url_env" in entry):
            raise ValueError("live_health notify %s needs exactly one of 'url' and 'url_env'" % where)
        url = _check_url(entry["url"], where) if "url" in entry else _from_env(entry["url_env"], where)
        fmt = entry.get("format") or guess_format(url)
        if fmt not in FORMATS:
            raise ValueError("live_health notify %s format must be one of %s, got %r" % (
                where, ", ".join(FORMATS), fmt))
        timeout, retries = entry.get("timeout", 5.0), entry.get("retries", 3)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 120:
            raise ValueError("live_health notify %s timeout must be a number of seconds in (0, 120], got %r" % (
                where, timeout))
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ValueError("live_health notify %s retries must be an int in [0, 10], got %r" % (where, retries))
        secret = entry.get("secret")
        if secret is not None and (not isinstance(secret, str) or not secret):
            raise ValueError("live_health notify %s secret must be a non-empty string" % where)
        out.append(Destination(url, fmt, secret, timeout, retries))
    return out


# -- payloads ---------------------------------------------------------------------------------------------------------
def text_of(event, run=""):
    """One message for chat bots: ``[tb-mindspore] ERROR nonfinite at step 120 (run ...): message. What to do:
    advice. Action: ...``."""
    parts = ["[tb-mindspore] %s %s at step %s" % (str(event.get("severity", "warning")).upper(),
                                                   event.get("rule", "?"), event.get("step", "?"))]
    if run:
        parts[0] += " (%s)" % run
    parts[0] += ": %s" % str(event.get("message") or "").rstrip(".")
    if event.get("layers"):
        parts.append("Started in: %s" % ", ".join(str(n) for n in list(event["layers"])[:4]))
    if event.get("advice"):
        parts.append("What to do: %s" % str(event["advice"]).rstrip("."))
    if event.get("action") and event.get("action") != "none":
        parts.append("Action: %s" % event["action"])
    return ". ".join(parts) + "."


def payload(dest, event, run="", host=None, now=None):
    """``(url, body dict)`` of ``event`` for ``dest`` (the URL gains DingTalk's signature when it has a secret)."""
    now = time.time() if now is None else now
    text = text_of(event, run)
    url = dest.url
    if dest.format == "slack":
        return url, {"text": text}
    if dest.format == "feishu":
        body = {"msg_type": "text", "content": {"text": text}}
        if dest.secret:
            ts = str(int(now))
            key = ("%s\n%s" % (ts, dest.secret)).encode("utf-8")
            body["timestamp"] = ts
            body["sign"] = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")
        return url, body
    if dest.format in ("dingtalk", "wecom"):
        if dest.format == "dingtalk" and dest.secret:
            ts = str(int(now * 1000))
            mac = hmac.new(dest.secret.encode("utf-8"), ("%s\n%s" % (ts, dest.secret)).encode("utf-8"),
                           hashlib.sha256).digest()
            sign = urllib.parse.quote_plus(base64.b64encode(mac).decode("ascii"))
            url += ("&" if "?" in url else "?") + "timestamp=%s&sign=%s" % (ts, sign)
        return url, {"msgtype": "text", "text": {"content": text}}
    body = {k: event.get(k) for k in ("rule", "severity", "step", "first_step", "message", "advice", "layers",
                                      "action", "checkpoint")}
    body.update(source="tb-mindspore", run=run, host=host or socket.gethostname(), time=now)
    return url, body


# -- sending ----------------------------------------------------------------------------------------------------------
def _retryable(error):
    if isinstance(error, urllib.error.HTTPError):
        return error.code == 429 or error.code >= 500
    return True        # connection refused / reset, DNS, timeouts


class Notifier:
    """Posts events to ``destinations`` from one daemon thread (started at the first event)."""

    def __init__(self, destinations, run="", max_queue=100, backoff_s=1.0):
        self.destinations = list(destinations)
        self.run = str(run)
        self.queue = queue.Queue(maxsize=int(max_queue))
        self.backoff_s = float(backoff_s)
        self.dropped = 0
        self._thread = None
        self._lock = threading.Lock()
        self._closed = False

    def post(self, event):
        """Queues ``event`` for every destination; never blocks, never raises."""
        if not self.destinations or self._closed:
            return
        try:
            self.queue.put_nowait(dict(event))
        except queue.Full:
            self.dropped += 1
            return
        except Exception:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tb-mindspore-notify", daemon=True)
                self._thread.start()

    def _run(self):
        while True:
            event = self.queue.get()
            if event is None:
                return
            for dest in self.destinations:
                try:
                    self._send(dest, event)
                except Exception:       # nothing from here may end the thread
                    dest.failed += 1
            self.queue.task_done()
            if self._closed and self.queue.empty():
                return      # closed while the queue was full: no end marker fitted in, the thread ends here

    def _send(self, dest, event):
        url, body = payload(dest, event, self.run)
        data = json.dumps(body, default=str).encode("utf-8")
        error = None
        for attempt in range(dest.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            request = urllib.request.Request(url, data=data, method="POST",
                                             headers={"Content-Type": "application/json; charset=utf-8",
                                                      "User-Agent": "tb-mindspore-notify"})
            try:
                with urllib.request.urlopen(request, timeout=dest.timeout) as response:
                    response.read(65536)
                dest.sent += 1
                return True
            except Exception as e:      # URLError, HTTPError, socket.timeout, ConnectionError, ...
                error = e
                if not _retryable(e):
                    break
        dest.failed += 1
        if not dest.warned:
            dest.warned = True
            logger.warning("tb-mindspore: could not post a live health finding to %s (%s: %s); training goes on, "
                           "later findings are still tried", dest.label, type(error).__name__, str(error)[:200])
        return False

    def close(self, grace_s=3.0):
        """Stops taking events; waits at most ``grace_s`` seconds for the queued ones to be sent."""
        self._closed = True
        thread = self._thread
        if thread is None:
            return
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass
        thread.join(max(0.0, float(grace_s)))
