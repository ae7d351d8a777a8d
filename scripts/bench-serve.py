#!/usr/bin/env python3
"""Idle RSS and per-message overhead of `pincer serve` (Telegram + cron).

usage: scripts/bench-serve.py [PINCER_BINARY] [MESSAGES]

Starts a minimal Bot API server on loopback (the JSON envelopes pincer
reads), runs `pincer serve` with [channels.telegram] and one cron job
against a scripted model (no model time), and reports:

- idle RSS (VmRSS and VmHWM of the daemon after it has polled idle for 5 s);
- per message, the time from the getUpdates answer that hands pincer the
  message to pincer's sendMessage with the reply: allowlist, audit entry,
  session append with fsync, prompt, gate, the scripted model's reply (a
  few microseconds), the trail's turn entries, MarkdownV2 and the HTTP
  call. Median and max over MESSAGES (default 50), sent one at a time.
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "4242:bench-token"
OWNER = 111


class State:
    def __init__(self):
        self.cv = threading.Condition()
        self.updates = []
        self.next_id = 1000
        self.handed = {}  # update text -> time handed to pincer
        self.replied = {}  # reply text -> time received
        self.msg = 0


ST = State()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def reply(self, result):
        body = json.dumps({"ok": True, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        method = self.path.rsplit("/", 1)[-1]
        if method == "getMe":
            return self.reply({"id": 4242, "is_bot": True, "first_name": "b", "username": "bench_bot"})
        if method == "getUpdates":
            offset = body.get("offset", 0)
            deadline = time.monotonic() + min(body.get("timeout", 0), 3)
            with ST.cv:
                while True:
                    ST.updates = [u for u in ST.updates if u["update_id"] >= offset]
                    if ST.updates or time.monotonic() >= deadline:
                        break
                    ST.cv.wait(max(0.0, deadline - time.monotonic()))
                out = list(ST.updates)
                now = time.perf_counter()
                for u in out:
                    ST.handed.setdefault(u["message"]["text"], now)
            return self.reply(out)
        if method == "sendMessage":
            with ST.cv:
                ST.replied.setdefault(body.get("text", ""), time.perf_counter())
                ST.msg += 1
                ST.cv.notify_all()
                mid = ST.msg
            return self.reply({"message_id": mid, "date": 0, "chat": {"id": OWNER, "type": "private"}})
        return self.reply(True)


def push(text):
    with ST.cv:
        ST.next_id += 1
        ST.updates.append({"update_id": ST.next_id, "message": {
            "message_id": ST.next_id, "date": 0, "text": text,
            "chat": {"id": OWNER, "type": "private"},
            "from": {"id": OWNER, "is_bot": False, "first_name": "u"}}})
        ST.cv.notify_all()


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def main():
    pincer = sys.argv[1] if len(sys.argv) > 1 else "target/release/pincer"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    tmp = tempfile.mkdtemp(prefix="pincer-bench-serve-")
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    turns = [{"text": f"reply {i}"} for i in range(count)]
    with open(os.path.join(home, "script.json"), "w") as f:
        json.dump({"turns": turns}, f)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(
            '[providers.s]\nkind = "scripted"\nscript = "script.json"\n\n'
            f'[channels.telegram]\ntoken_env = "TG_TOKEN"\napi_base = "{base}"\n'
            f"allow_users = [{OWNER}]\napprovers = [{OWNER}]\npoll_timeout_secs = 25\n"
        )
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PINCER_MODEL", "PINCER_WORKSPACE")}
    env.update(PINCER_HOME=home, TG_TOKEN=TOKEN)
    # A yearly job: cron is loaded and scheduling, but does not run here.
    subprocess.run([pincer, "cron", "add", "--name", "yearly", "--schedule", "0 0 1 1 *",
                    "--prompt", "happy new year"], env=env, check=True, capture_output=True)
    daemon = subprocess.Popen([pincer, "serve"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        time.sleep(5)  # idle: polling, cron waiting
        idle = rss(daemon.pid)
        lat = []
        for i in range(count):
            text = f"message {i}"
            push(text)
            with ST.cv:
                ok = ST.cv.wait_for(lambda: f"reply {i}" in ST.replied, timeout=30)
            if not ok:
                raise SystemExit(f"no reply to {text}")
            lat.append((ST.replied[f"reply {i}"] - ST.handed[text]) * 1000)
        after = rss(daemon.pid)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"idle RSS: {idle['VmRSS']} KiB (peak so far {idle['VmHWM']} KiB)")
    print(f"after {count} messages: RSS {after['VmRSS']} KiB, peak {after['VmHWM']} KiB")
    print(f"update handed to pincer -> reply sent: median {statistics.median(lat):.2f} ms, "
          f"max {max(lat):.2f} ms over {count} messages")


if __name__ == "__main__":
    main()
