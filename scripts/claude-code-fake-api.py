#!/usr/bin/env python3
"""A scripted stand-in for the model API that the real `claude` CLI talks to,
on loopback only, for scripts/claude-code-contract.sh.

It speaks the Messages API as the client uses it (POST /v1/messages, SSE when
`stream` is true) and answers from a script of tool calls: step N is chosen by
how many tool results the conversation already holds, so each of the
client's requests gets the next call, and a final text ends the turn.
Requests without tools (titles, side questions) get a short text. Every
request body is saved as req-N.json in the output directory for the checks.

Usage: claude-code-fake-api.py SCRIPT.json OUT_DIR
SCRIPT.json: {"steps": [{"name": "Bash", "input": {...}}, ...]}
It writes the port it listens on to OUT_DIR/port and stops by itself after
120 seconds.
"""
import http.server
import json
import os
import sys
import threading

script = json.load(open(sys.argv[1]))
out = sys.argv[2]
lock = threading.Lock()
count = {"n": 0}


def blocks_for(req):
    if not req.get("tools"):
        return [{"type": "text", "text": "ok"}], "end_turn"
    done = 0
    for m in req.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            done += sum(1 for c in content if isinstance(c, dict) and c.get("type") == "tool_result")
    steps = script["steps"]
    if done >= len(steps):
        return [{"type": "text", "text": "done"}], "end_turn"
    s = steps[done]
    return [{"type": "tool_use", "id": "toolu_%02d" % (done + 1), "name": s["name"], "input": s["input"]}], "tool_use"


def sse(req, blocks, stop):
    model = req.get("model", "m")
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "text", "text": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": 1}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return "".join("event: %s\ndata: %s\n\n" % (e, json.dumps(d)) for e, d in ev).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body, ctype):
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(b"{}", "application/json")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            req = json.loads(raw)
        except ValueError:
            req = {}
        with lock:
            count["n"] += 1
            with open(os.path.join(out, "req-%d.json" % count["n"]), "wb") as f:
                f.write(raw)
        if "count_tokens" in self.path:
            self.reply(b'{"input_tokens": 10}', "application/json")
            return
        blocks, stop = blocks_for(req)
        if req.get("stream"):
            self.reply(sse(req, blocks, stop), "text/event-stream")
        else:
            body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                               "model": req.get("model", "m"), "content": blocks, "stop_reason": stop,
                               "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})
            self.reply(body.encode(), "application/json")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
threading.Timer(120, server.shutdown).start()
server.serve_forever()
