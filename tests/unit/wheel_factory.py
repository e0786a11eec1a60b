"""Real wheel files for the refresh tests: a zip with METADATA, RECORD (with each member's sha256)
and members taken from tests/data/fatbin (real device code), plus a loopback HTTP server that
answers range requests (or ignores them, as some servers do)."""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

DATA = Path(__file__).resolve().parents[1] / "data" / "fatbin"


def make_wheel(
    folder: Path,
    filename: str,
    *,
    requires_python: str | None = None,
    requires_dist: tuple[str, ...] = (),
    members: dict[str, bytes] | None = None,
) -> Path:
    """Write a wheel `filename` into `folder` and return its path."""
    name, version = filename.split("-")[:2]
    dist_info = f"{name}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires_dist]
    files = dict(members or {})
    files[f"{dist_info}/METADATA"] = ("\n".join(lines) + "\n").encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
    record = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / filename
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for member, data in files.items():
            z.writestr(member, data)
    return path


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    ranges = True
    recorded = "Range"  # the request header each GET appends to `requests`
    requests: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        type(self).requests.append(self.headers.get(type(self).recorded) or "")
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        rng = self.headers.get("Range")
        if rng and type(self).ranges and rng.startswith("bytes="):
            first_s, _, last_s = rng[len("bytes=") :].partition("-")
            first = int(first_s)
            last = min(int(last_s), len(data) - 1) if last_s else len(data) - 1
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
            self.send_header("Content-Length", str(last - first + 1))
            self.end_headers()
            self.wfile.write(data[first : last + 1])
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serve(folder: Path, *, ranges: bool = True, record: str = "Range") -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 serving `folder`; yields (base URL, the `record` headers seen,
    "" where a request had none)."""
    seen: list[str] = []
    handler = type("H", (_RangeHandler,), {"ranges": ranges, "requests": seen, "recorded": record})

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
