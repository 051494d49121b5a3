import os
import signal
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

from tritonrl.common.signals import SignalHandlers, StopRequest
from tritonrl.train.mirror import Mirror, MirrorThread
from tritonrl.train.preemption import PreemptionWatcher, notice_at


def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_push_then_pull_restores_a_lost_run_dir(tmp_path):
    run = tmp_path / "run"
    _write(run, "manifest.json", "{}")
    _write(run, "sft/checkpoints/checkpoint-2/COMPLETE", "ok")
    _write(run, "sft/.manifest.json.tmp", "partial")  # temp files of atomic writes stay local
    url = f"memory://mirror-{uuid.uuid4().hex}/run"
    mirror = Mirror(url, run)
    assert mirror.push() == 2
    assert mirror.push() == 0  # unchanged files are not uploaded again
    restored = tmp_path / "restored"
    assert Mirror(url, restored).pull() == 2
    assert (restored / "sft/checkpoints/checkpoint-2/COMPLETE").read_text() == "ok"
    assert not (restored / "sft/.manifest.json.tmp").exists()


def test_file_url_and_background_thread(tmp_path):
    run = tmp_path / "run"
    _write(run, "a.txt", "1")
    mirror = Mirror(f"file://{tmp_path / 'remote'}", run)
    thread = MirrorThread(mirror, interval_s=0.05).start()
    deadline = time.time() + 10
    while not (tmp_path / "remote" / "a.txt").exists() and time.time() < deadline:
        time.sleep(0.05)
    thread.stop()
    assert (tmp_path / "remote" / "a.txt").read_text() == "1"


class _Notice(BaseHTTPRequestHandler):
    preempted = False

    def do_GET(self):
        if self.path == "/action" and _Notice.preempted:
            body = b'{"action": "terminate"}'
            self.send_response(200)
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_preemption_watcher_against_fake_metadata_server():
    server = HTTPServer(("127.0.0.1", 0), _Notice)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/action"
    try:
        assert not notice_at(url, {})
        request = StopRequest()
        watcher = PreemptionWatcher(request, url=url, poll_s=0.05).start()
        time.sleep(0.2)
        assert not request.is_set()
        _Notice.preempted = True
        deadline = time.time() + 10
        while not request.is_set() and time.time() < deadline:
            time.sleep(0.05)
        watcher.stop()
        assert request.is_set() and request.reason == "preempted"
    finally:
        _Notice.preempted = False
        server.shutdown()
        server.server_close()


def test_sigterm_sets_the_stop_request_and_handlers_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    request = StopRequest()
    with SignalHandlers(request):
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.time() + 5
        while not request.is_set() and time.time() < deadline:
            time.sleep(0.01)
    assert request.reason == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) == before


def test_pull_merges_into_an_existing_run_dir_and_an_interrupted_pull_leaves_nothing(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _write(run, "manifest.json", "{}")
    _write(run, "rl/checkpoints/checkpoint-4/model.bin", "weights")
    url = f"file://{tmp_path / 'remote'}"
    assert Mirror(url, run).push() == 2
    existing = tmp_path / "existing"
    _write(existing, "local.log", "kept")
    _write(existing, "manifest.json", "stale")
    assert Mirror(url, existing).pull() == 2
    assert (existing / "manifest.json").read_text() == "{}" and (existing / "local.log").read_text() == "kept"
    assert (existing / "rl/checkpoints/checkpoint-4/model.bin").read_text() == "weights"

    mirror = Mirror(url, tmp_path / "lost")

    def fails_halfway(*args, **kwargs):
        raise OSError("connection reset")

    monkeypatch.setattr(mirror.fs, "get", fails_halfway)
    try:
        mirror.pull()
    except OSError:
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "remote", "run"]  # no half run dir, no temp


def test_periodic_thread_waits_or_starts_at_once_and_stops_when_tick_says_so():
    from tritonrl.train.periodic import PeriodicThread

    calls = []
    later = PeriodicThread(lambda: calls.append("later"), interval_s=60, name="t").start()
    now = PeriodicThread(lambda: calls.append("now") or len(calls) >= 3, interval_s=0.01, name="t",
                         immediately=True).start()
    deadline = time.time() + 10
    while now._thread.is_alive() and time.time() < deadline:
        time.sleep(0.01)
    later.stop()
    now.stop()
    assert calls == ["now"] * 3  # ``later`` stopped before its first interval ended; ``now`` ended on True
