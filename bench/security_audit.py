"""The security audit's resource cases (issue 22) against a live `blockrepo serve --demo`, one after another.

    .venv/bin/python bench/security_audit.py [--database postgresql://postgres@127.0.0.1:5432/postgres]
        [--timeout 120] [--trickle-seconds 30] [--only xlsx-gap shared-strings json-27mb trickle passwords]

Each case gets a fresh server (one worker) over a fresh repository with the demo landscape (a SQLite file,
or a new database on the given PostgreSQL server, dropped afterwards), so that what one case leaves running
(a parse the client gave up on) cannot weigh on the next. The attacker is the demo Reader `anna`; meanwhile
another user (`system`, with a session cookie and its CSRF token) reads one element by id and PATCHes one of
its attributes in a loop. Passwords: `BLOCKREPO_ADMIN_PASSWORD` and `BLOCKREPO_DEMO_PASSWORD` (a default for
each when unset). Each case ends when its requests are answered (at least `--min-seconds` after it began) or
at `--timeout`, whichever is first; the unanswered ones count as `timeout`. Per case it prints the status
codes, the CPU seconds and the peak resident set of the server (the serving process and its children, from
/proc; the peak is reset through `clear_refs` when the case begins, and sampled besides), and the latency of
system's GET and PATCH during the case. The table is Markdown, to paste into bench/README.md. Asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
import orjson
from harness import free_port, scratch_database, stop_process, wait_for_demo_server

ADMIN_LOGIN = "system"
READER_LOGIN = "anna"
ADMIN_PASSWORD = os.environ.get("BLOCKREPO_ADMIN_PASSWORD") or "bench-admin-password"
DEMO_PASSWORD = os.environ.get("BLOCKREPO_DEMO_PASSWORD") or "bench-demo-password"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
IMPORT = "/api/massdata/import?mode=additive"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- the server and its processes --------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str]:
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (read from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int(_stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending += parents.get(pid, [])
    return tree


def cpu_seconds(root: int) -> float:
    """User and system CPU time of the tree so far, with that of children already waited for."""
    total = 0.0
    for pid in process_tree(root):
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the command name.
        total += sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
    return total


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def resident_mb(root: int, key: str = "VmRSS") -> float:
    """The tree's resident set (or, with VmHWM, the sum of each process's peak) in MB."""
    return sum(_status_kb(pid, key) for pid in process_tree(root)) / 1024


def reset_peaks(root: int) -> None:
    """Start each process's VmHWM again from its current resident set (Linux 4.0+, own processes)."""
    for pid in process_tree(root):
        with suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


class Server:
    """`blockrepo serve --demo` with one worker in its own process."""

    def __init__(self, database: str, log_path: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
        environment.update(
            {
                "BLOCKREPO_ADMIN_PASSWORD": ADMIN_PASSWORD,
                "BLOCKREPO_DEMO_PASSWORD": DEMO_PASSWORD,
                "BLOCKREPO_LOG_LEVEL": "warning",
            }
        )
        command = [
            sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--database", database, "--workers", "1", "--demo",
        ]  # fmt: skip
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)

    def wait_until_ready(self) -> str:
        """The path of the demo business process printed at start, once the server answers."""
        return wait_for_demo_server(self.process, self.log_path, self.base_url, 180)

    def stop(self) -> None:
        stop_process(self.process, timeout=10)


# --- what the cases send -----------------------------------------------------------------------------

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def workbook(sheet: str, shared_strings: bytes | None = None) -> bytes:
    """A minimal xlsx whose only sheet, `_index` (the first one an import reads), is `sheet`."""
    overrides = (
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument'
    )
    overrides += '.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType='
    overrides += '"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    relations = f'<Relationship Id="rId1" Type="{_DOCUMENT}/worksheet" Target="worksheets/sheet1.xml"/>'
    if shared_strings is not None:
        overrides += '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
        overrides += 'officedocument.spreadsheetml.sharedStrings+xml"/>'
        relations += f'<Relationship Id="rId2" Type="{_DOCUMENT}/sharedStrings" Target="sharedStrings.xml"/>'
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            f'<Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>'
        ).encode(),
        "_rels/.rels": (
            f'<Relationships xmlns="{_RELATIONSHIPS}"><Relationship Id="rId1" '
            f'Type="{_DOCUMENT}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ).encode(),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_MAIN}" xmlns:r="{_DOCUMENT}"><sheets>'
            '<sheet name="_index" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ).encode(),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_RELATIONSHIPS}">{relations}</Relationships>'.encode()
        ),
        "xl/worksheets/sheet1.xml": sheet.encode(),
    }
    if shared_strings is not None:
        parts["xl/sharedStrings.xml"] = shared_strings
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def row_gap_workbook() -> bytes:
    """A header row, then nothing until row 200,000, which has one cell in the last column (XFD)."""
    return workbook(
        f'<worksheet xmlns="{_MAIN}"><dimension ref="A1:XFD200000"/><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sheet</t></is></c></row>'
        '<row r="200000"><c r="XFD200000" t="inlineStr"><is><t>x</t></is></c></row>'
        "</sheetData></worksheet>"
    )


def shared_strings_workbook(count: int = 3_000_000) -> bytes:
    """A sheet of one cell whose workbook holds `count` shared strings (they compress to almost nothing)."""
    strings = (
        f'<sst xmlns="{_MAIN}" count="{count}" uniqueCount="{count}">'.encode()
        + b"<si><t>a</t></si>" * count
        + b"</sst>"
    )
    return workbook(
        f'<worksheet xmlns="{_MAIN}"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row>'
        "</sheetData></worksheet>",
        strings,
    )


def json_import_body(size: int = 27 * 1024 * 1024) -> bytes:
    """An export document of about `size` bytes: business processes with a long description each."""
    description = "d" * 900
    record = orjson.dumps({"name": ["P"], "description": [description]})
    count = size // (len(record) + 8)
    records = b",".join(
        orjson.dumps({"name": [f"P{n:07d}"], "description": [description]}) for n in range(count)
    )
    return b'{"format":"blockrepo-export","elements":{"BusinessProcess":[' + records + b"]}}"


def basic(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()


# --- measuring a case --------------------------------------------------------------------------------


@dataclass
class Probe:
    """system's session GET by id and PATCH of one attribute, in a loop on its own connection."""

    base_url: str
    path: str
    timeout: float
    get_ms: list[float] = field(default_factory=list)
    patch_ms: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.base_url, timeout=self.timeout)
        login = self.client.get(self.path, headers={"Authorization": basic(ADMIN_LOGIN, ADMIN_PASSWORD)})
        if login.status_code != 200 or "JSESSIONID" not in self.client.cookies:
            raise RuntimeError(f"system could not start a session: {login.status_code} {login.text}")
        self.xsrf = str(self.client.cookies.get("XSRF-TOKEN", ""))

    def _timed(self, samples: list[float], label: str, call: Callable[[], httpx.Response]) -> None:
        started = time.perf_counter()
        try:
            status = call().status_code
            if status != 200:
                self.failures[f"{label} {status}"] += 1
        except httpx.HTTPError:
            self.failures[f"{label} timeout"] += 1
        samples.append((time.perf_counter() - started) * 1000)

    def _loop(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            self._timed(self.get_ms, "GET", lambda: self.client.get(self.path))
            self._timed(self.patch_ms, "PATCH", partial(self._patch, f"probe {n}"))
            self._stop.wait(0.05)

    def _patch(self, description: str) -> httpx.Response:
        headers = {"X-XSRF-TOKEN": self.xsrf}
        return self.client.patch(self.path, json={"description": [description]}, headers=headers)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 5)
        self.client.close()


class Peaks:
    """The largest resident set of the server's tree seen while running, sampled every 50 ms."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, resident_mb(self.root))
            self._stop.wait(0.05)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak_mb, resident_mb(self.root, "VmHWM"))


@dataclass
class Outcome:
    case: str
    statuses: Counter[str]
    seconds: float
    cpu: float
    rss_before_mb: float
    peak_mb: float
    probe: Probe


Attack = Callable[[str, str, float], list[str]]  # (base URL, element path, deadline) -> statuses


def run_case(
    name: str, attack: Attack, database: str | None, args: argparse.Namespace, logs: Path
) -> Outcome:
    with scratch_database(database, name.replace("-", "_")) as url:
        server = Server(url, logs / f"{name}.log")
        try:
            path = server.wait_until_ready()
            probe = Probe(server.base_url, path, timeout=args.timeout)
            root = server.process.pid
            time.sleep(1)  # let the start-up settle before the baseline figures
            rss_before = resident_mb(root)
            reset_peaks(root)
            peaks = Peaks(root)
            cpu_before = cpu_seconds(root)
            started = time.monotonic()
            probe.start()
            deadline = started + args.timeout
            statuses = attack(server.base_url, path, deadline)
            remaining = started + args.min_seconds - time.monotonic()
            if remaining > 0:
                time.sleep(remaining)
            probe.stop()
            seconds = time.monotonic() - started
            cpu = cpu_seconds(root) - cpu_before
            peak = peaks.stop()
        finally:
            server.stop()
    return Outcome(name, Counter(statuses), seconds, cpu, rss_before, peak, probe)


# --- the cases -----------------------------------------------------------------------------------------


def _post(base_url: str, path: str, body: bytes, content_type: str, deadline: float) -> str:
    timeout = max(1.0, deadline - time.monotonic())
    headers = {"Authorization": basic(READER_LOGIN, DEMO_PASSWORD), "Content-Type": content_type}
    try:
        return str(httpx.post(base_url + path, content=body, headers=headers, timeout=timeout).status_code)
    except httpx.TimeoutException:
        return "timeout"
    except httpx.TransportError as exc:
        return type(exc).__name__


def xlsx_gap(base_url: str, _path: str, deadline: float) -> list[str]:
    return [_post(base_url, IMPORT, row_gap_workbook(), XLSX, deadline)]


def shared_strings(base_url: str, _path: str, deadline: float) -> list[str]:
    return [_post(base_url, IMPORT, shared_strings_workbook(), XLSX, deadline)]


def json_27mb(base_url: str, _path: str, deadline: float) -> list[str]:
    return [_post(base_url, IMPORT, json_import_body(), "application/json", deadline)]


def trickle(seconds: float) -> Attack:
    """A PUT of the element and a POST of a new one, both with a query string, each sending its JSON body a
    byte a second for `seconds`, then the rest."""

    def attack(base_url: str, path: str, deadline: float) -> list[str]:
        type_path = path.rsplit("/", 1)[0]
        # A query string that names no parameter (an unknown one would be refused with 400 instead of 403).
        requests = [("PUT", f"{path}?&"), ("POST", f"{type_path}?&")]
        with ThreadPoolExecutor(len(requests)) as pool:
            return list(pool.map(lambda r: _trickled(base_url, r[0], r[1], seconds, deadline), requests))

    return attack


def _trickled(base_url: str, method: str, target: str, seconds: float, deadline: float) -> str:
    body = orjson.dumps({"name": ["Trickled"], "description": ["x" * 64]})
    port = int(base_url.rsplit(":", 1)[1])
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: {basic(READER_LOGIN, DEMO_PASSWORD)}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head)
        sent = 0
        started = time.monotonic()
        try:
            while sent < len(body) - 1 and time.monotonic() - started < seconds:
                sock.sendall(body[sent : sent + 1])
                sent += 1
                sock.settimeout(1.0)
                try:
                    answer = sock.recv(4096)  # an early answer (408, 413 ...) ends the trickle
                except TimeoutError:
                    continue
                return _status_of(answer)
            sock.sendall(body[sent:])
        except OSError as exc:
            return type(exc).__name__
        sock.settimeout(max(1.0, deadline - time.monotonic()))
        try:
            return _status_of(sock.recv(4096))
        except TimeoutError:
            return "timeout"
        except OSError as exc:
            return type(exc).__name__


def _status_of(answer: bytes) -> str:
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return match.group(1).decode() if match else "closed"


def wrong_passwords(base_url: str, path: str, deadline: float) -> list[str]:
    """20 requests at once, each with another wrong password of the Reader."""

    def attempt(n: int) -> str:
        timeout = max(1.0, deadline - time.monotonic())
        headers = {"Authorization": basic(READER_LOGIN, f"wrong-password-{n}")}
        try:
            return str(httpx.get(base_url + path, headers=headers, timeout=timeout).status_code)
        except httpx.TimeoutException:
            return "timeout"

    with ThreadPoolExecutor(20) as pool:
        return list(pool.map(attempt, range(20)))


# --- the table -----------------------------------------------------------------------------------------


def _latency(samples: list[float]) -> str:
    if not samples:
        return "-"
    return f"{statistics.median(samples):,.0f} / {max(samples):,.0f}"


def _statuses(counts: Counter[str]) -> str:
    return ", ".join(f"{status} x{n}" if n > 1 else status for status, n in sorted(counts.items()))


def print_table(outcomes: list[Outcome], label: str) -> None:
    print(
        f"\n| case ({label}) | statuses | s | server CPU s | RSS before → peak MB "
        "| system GET ms median / max (n) | system PATCH ms median / max (n) | probe failures |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for o in outcomes:
        failures = ", ".join(f"{k} x{n}" for k, n in sorted(o.probe.failures.items())) or "-"
        print(
            f"| {o.case} | {_statuses(o.statuses)} | {o.seconds:.0f} | {o.cpu:.1f} "
            f"| {o.rss_before_mb:.0f} → {o.peak_mb:.0f} "
            f"| {_latency(o.probe.get_ms)} ({len(o.probe.get_ms)}) "
            f"| {_latency(o.probe.patch_ms)} ({len(o.probe.patch_ms)}) | {failures} |"
        )


CASES: dict[str, Callable[[argparse.Namespace], Attack]] = {
    "xlsx-gap": lambda _: xlsx_gap,
    "shared-strings": lambda _: shared_strings,
    "json-27mb": lambda _: json_27mb,
    "trickle": lambda args: trickle(args.trickle_seconds),
    "passwords": lambda _: wrong_passwords,
}


@contextmanager
def log_directory(keep: bool) -> Iterator[Path]:
    if keep:
        directory = Path(tempfile.mkdtemp(prefix="blockrepo-audit-"))
        print(f"server logs in {directory}")
        yield directory
        return
    with tempfile.TemporaryDirectory(prefix="blockrepo-audit-") as name:
        yield Path(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a PostgreSQL server URL (a database is created per case)")
    parser.add_argument("--timeout", type=float, default=120, help="longest a case may take, seconds")
    parser.add_argument("--min-seconds", type=float, default=5, help="shortest a case lasts (for the probe)")
    parser.add_argument("--trickle-seconds", type=float, default=30, help="how long a trickled body takes")
    parser.add_argument("--only", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--label", default="", help="names the run in the table's header (e.g. a commit)")
    parser.add_argument("--keep-logs", action="store_true", help="keep the servers' logs")
    args = parser.parse_args()
    sizes = {
        "xlsx-gap": len(row_gap_workbook()),
        "shared-strings": len(shared_strings_workbook()),
        "json-27mb": len(json_import_body()),
    }
    backend = "PostgreSQL" if args.database else "SQLite"
    print(
        f"{backend}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; bodies: "
        + ", ".join(f"{name} {size:,} B" for name, size in sizes.items())
    )
    outcomes = []
    with log_directory(args.keep_logs) as logs:
        for name in args.only:
            print(f"running {name} …", file=sys.stderr, flush=True)
            outcomes.append(run_case(name, CASES[name](args), args.database, args, logs))
    print_table(outcomes, args.label or backend)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
