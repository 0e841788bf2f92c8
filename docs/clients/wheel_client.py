"""A wheel-server client and callback verifier, on Python's standard library only.

    c = WheelClient("http://127.0.0.1:7070", token="s3cret")
    t = c.add({"url": "https://shop.example/close", "json": {"order": 17}}, delay="30m")

Every error answer raises WheelError carrying the server's problem document.
`verify` checks a callback's Standard Webhooks signature. Run this file for a
demo against a server started with --allow-private-targets (WHEEL_URL,
WHEEL_TOKEN and WHEEL_SIGNING_SECRET set as for the server).
"""
import base64, hashlib, hmac, json, os, queue, threading, time
import urllib.error, urllib.parse, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer


class WheelError(Exception):
    """An error answer: `status` and the RFC 9457 `problem` document."""

    def __init__(self, status, problem):
        self.status, self.problem = status, problem
        super().__init__(f"{status} {problem.get('type')}: {problem.get('detail')}"
                         + (f" (field {problem['field']})" if problem.get("field") else ""))


def _when(due_at, delay):
    """delay: "250ms", "90s", "15m", "2h", "7d" or milliseconds;
    due_at: RFC 3339 text or an aware datetime."""
    if (due_at is None) == (delay is None):
        raise ValueError("give exactly one of due_at and delay")
    if due_at is None:
        return {"delay": delay}
    return {"due_at": due_at.isoformat() if hasattr(due_at, "isoformat") else due_at}


def _seg(key):  # a key is one path segment
    return urllib.parse.quote(key, safe="")


class WheelClient:
    def __init__(self, base_url, token=None, timeout=30):
        self.base, self.token, self.timeout = base_url.rstrip("/"), token, timeout

    def _call(self, method, path, body=None, **query):
        query = {k: v for k, v in query.items() if v is not None}
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, method=method)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if body is not None:
            req.data = json.dumps(body).encode()
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                text = r.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                problem = json.loads(text)
            except ValueError:  # not from the server (a proxy?)
                problem = {"detail": text}
            raise WheelError(e.code, problem) from None

    def add(self, callback, *, due_at=None, delay=None, key=None, retry=None):
        """Adds a timer; callback is {"url", "method"?, "headers"?, "json" or "body"?}."""
        timer = {"key": key, "retry": retry, "callback": callback, **_when(due_at, delay)}
        return self._call("POST", "/v1/timers", {k: v for k, v in timer.items() if v is not None})

    def get(self, key):
        return self._call("GET", f"/v1/timers/{_seg(key)}")

    def cancel(self, key):
        self._call("DELETE", f"/v1/timers/{_seg(key)}")

    def reschedule(self, key, *, due_at=None, delay=None):
        return self._call("PATCH", f"/v1/timers/{_seg(key)}", _when(due_at, delay))

    def list(self, state="pending", limit=None, cursor=None, due_before=None):
        """One page: {"timers": [...], "next_cursor": str or None}."""
        return self._call("GET", "/v1/timers", state=state, limit=limit,
                          cursor=cursor, due_before=due_before)

    def dead_letters(self, limit=None, cursor=None):
        return self._call("GET", "/v1/dead-letters", limit=limit, cursor=cursor)

    def retry_dead(self, key):
        return self._call("POST", f"/v1/dead-letters/{_seg(key)}/retry")


class SignatureError(Exception):
    """Why a callback's signature was refused."""


def verify(secret, headers, body, now=None, tolerance=300):
    """Checks a callback's Standard Webhooks signature; raises SignatureError."""
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sigs = (h.get(f"webhook-{n}") for n in ("id", "timestamp", "signature"))
    if not (msg_id and ts and sigs):
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not (ts.isascii() and ts.isdigit()):
        raise SignatureError(f"bad timestamp {ts!r}")
    if abs((time.time() if now is None else now) - int(ts)) > tolerance:
        raise SignatureError("timestamp too old or too new (a replay?)")
    key = secret.removeprefix("whsec_")
    key = base64.b64decode(key + "=" * (-len(key) % 4))  # padding may be left out
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    expected = base64.b64encode(mac)
    for entry in sigs.split():
        version, _, sig = entry.partition(",")
        if version == "v1" and hmac.compare_digest(sig.encode(), expected):
            return
    raise SignatureError("no signature matches")


def wait_for(ok, seconds=20):
    end = time.monotonic() + seconds
    while not ok():
        if time.monotonic() > end:
            raise TimeoutError("gave up waiting")
        time.sleep(0.05)


def demo():
    arrived = queue.Queue()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(500 if self.path.startswith("/fail") else 200)
            self.end_headers()
            if not self.path.startswith("/fail"):
                arrived.put((self.path, self.headers, body))

        def log_message(self, *args):  # quiet
            pass

    rx = HTTPServer(("127.0.0.1", 0), Receiver)  # port 0: a free one
    threading.Thread(target=rx.serve_forever, daemon=True).start()
    here = f"http://127.0.0.1:{rx.server_port}"
    c = WheelClient(os.environ.get("WHEEL_URL", "http://127.0.0.1:7070"), os.environ.get("WHEEL_TOKEN"))
    secret = os.environ["WHEEL_SIGNING_SECRET"].split(",")[0]

    t = c.add({"url": here + "/hello", "json": {"hello": "wheel"}}, delay="2s")
    print(f"added {t['key']}, due {t['due_at']}")

    # While it waits: the rest of the API, on timers of our own.
    later = f"demo:{os.urandom(4).hex()}"
    c.add({"url": here + "/later"}, key=later, delay="1h")
    c.reschedule(later, delay="2h")
    assert any(x["key"] == later for x in c.list(limit=1000)["timers"])
    c.cancel(later)
    try:
        c.get(later)
    except WheelError as e:
        print(f"cancelled, then: {e}")
    fail = f"demo:fail:{os.urandom(4).hex()}"
    c.add({"url": here + "/fail"}, key=fail, delay=0, retry={"max_attempts": 1})
    wait_for(lambda: c.get(fail)["state"] == "dead")
    assert any(d["key"] == fail for d in c.dead_letters()["dead_letters"])
    print(f"dead letter {fail}; retried: {c.retry_dead(fail)['state']}")
    wait_for(lambda: c.get(fail)["state"] == "dead")
    c.cancel(fail)  # removes the dead letter

    path, headers, body = arrived.get(timeout=30)
    verify(secret, headers, body)
    print(f"verified callback: {path} {headers['webhook-id']} {body.decode()}")
    for what, b, now in (("tampered body", body + b" ", None), ("stale timestamp", body, time.time() + 600)):
        try:
            verify(secret, headers, b, now)
            raise SystemExit(f"{what} accepted")
        except SignatureError as e:
            print(f"{what} rejected: {e}")


if __name__ == "__main__":
    demo()
