#!/usr/bin/env python3
"""Writes a mongod/mongos traffic recording from a mongotape capture, independently of mongotape's
Rust code: the capture is read with tools/read_capture.py (which follows docs/capture-format.md);
the recording is laid out as the server's recorder writes it (mongodb/mongo,
src/mongo/db/traffic_recorder.cpp and traffic_recorder_event.h; read back by traffic_reader.cpp),
one layout per run:

  addresses-ms  one file; per packet: u32 length (itself included), u64 session id, the local and
                the remote address (NUL-terminated), u64 wall-clock milliseconds, u64 order, the
                whole message (the first recorder, `startRecordingTraffic {filename}`).
  session-ms    one file; as addresses-ms, but one NUL-terminated session text
                `{ id: N, remote: "HOST:PORT", local: "HOST:PORT" }` (Session::toBSON) in place
                of the two addresses.
  events3-us    a directory of `<wall-clock ms>.bin` files and checksum.txt; per packet: u32
                length, u8 event (0 message, 1 session start, 2 session end), u64 session id,
                the session text, u64 microseconds since the recording started, u64 order, the
                message (none for a session event).
  events4-us    as events3-us with the events 0 request, 1 reply, 2 session start, 3 session end.

All integers little-endian. In a directory, a file is closed when the next packet would take it
past --max-file-size (a packet larger than that alone still goes in a fresh file), and its line
`<absolute path>\\t<CRC-32C of its bytes, hex>` is appended to checksum.txt. A capture's `open`
is the session's start and its `close` the session's end (events layouts only: the others have
no events). Times: the capture's own, cut to the layout's unit; a recording starts at the
capture's first record.

  --internal   also writes two sessions of a replica set member's traffic (a handshake with
               `internalClient` and the `MongoDB Internal Client` driver, then a
               `replSetHeartbeat`; and on a second session a `find` and a `getMore` on
               local.oplog.rs), each request with its reply, built with pymongo's bson.

Usage: python3 tools/write_mongod_recording.py CAPTURE.mtape OUT --layout LAYOUT
           [--max-file-size BYTES] [--internal]
       python3 tools/write_mongod_recording.py --self-test
"""

import argparse
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_capture  # noqa: E402

LAYOUTS = ("addresses-ms", "session-ms", "events3-us", "events4-us")
OPEN, CLOSE, REQUEST, REPLY = 1, 2, 3, 4
# Event codes: (message or request, reply, session start, session end).
CODES = {"events3-us": (0, 0, 1, 2), "events4-us": (0, 1, 2, 3)}


def session_text(sid, remote, local):
    return '{ id: %d, remote: "%s", local: "%s" }' % (sid, remote, local)


def packet(layout, code, sid, remote, local, time, order, message):
    """One packet's bytes: the header fields, the length patched in front, then the message."""
    fields = b""
    if layout.startswith("events"):
        fields += struct.pack("<B", code)
    fields += struct.pack("<Q", sid)
    if layout == "addresses-ms":
        fields += local.encode() + b"\0" + remote.encode() + b"\0"
    else:
        fields += session_text(sid, remote, local).encode() + b"\0"
    fields += struct.pack("<QQ", time, order)
    return struct.pack("<I", 4 + len(fields) + len(message)) + fields + bytes(message)


class Writer:
    """Packets into one file, or into a directory of rotated files with checksum.txt."""

    def __init__(self, layout, out, start_ns, max_file_size):
        self.layout, self.out, self.start_ns = layout, out, start_ns
        self.max_file_size = max_file_size
        self.directory = layout.startswith("events")
        self.order = 0
        self.file = None
        self.crc, self.size = 0, 0
        self.last_name_ms = 0
        if self.directory:
            os.makedirs(out, exist_ok=False)
        else:
            self.file = open(out, "wb")

    def _open_next(self, ts_ns):
        self._close()
        name_ms = max(ts_ns // 1_000_000, self.last_name_ms + 5 if self.last_name_ms else 0)
        self.last_name_ms = name_ms
        self.path = os.path.abspath(os.path.join(self.out, "%d.bin" % name_ms))
        self.file = open(self.path, "wb")
        self.crc, self.size = 0, 0

    def _close(self):
        if self.directory and self.file is not None:
            self.file.close()
            with open(os.path.join(self.out, "checksum.txt"), "a") as sums:
                sums.write("%s\t%x\n" % (self.path, self.crc))
            self.file = None

    def time(self, ts_ns):
        if self.layout.endswith("-ms"):
            return ts_ns // 1_000_000
        return (ts_ns - self.start_ns) // 1000

    def write(self, code, sid, remote, local, ts_ns, message):
        self.order += 1
        data = packet(self.layout, code, sid, remote, local, self.time(ts_ns), self.order, message)
        if self.directory:
            full = self.max_file_size and self.size and self.size + len(data) > self.max_file_size
            if self.file is None or full:
                self._open_next(ts_ns)
            self.crc = read_capture.crc32c(data, self.crc)
            self.size += len(data)
        self.file.write(data)

    def close(self):
        self._close()
        if self.file is not None:
            self.file.close()


def op_msg(request_id, response_to, body):
    import bson
    doc = bson.encode(body)
    return struct.pack("<iiiiIB", 16 + 5 + len(doc), request_id, response_to, 2013, 0, 0) + doc


def internal_traffic(w, ts_ns, first_sid):
    """A member's session and a session reading the oplog, as a replica set's members send."""
    from bson.int64 import Int64
    member, server = "10.9.9.2:40001", "10.9.9.1:27017"
    hello = {"hello": 1, "internalClient": {"minWireVersion": 0, "maxWireVersion": 25},
             "client": {"driver": {"name": "MongoDB Internal Client", "version": "8.0.0"}},
             "$db": "admin"}
    heartbeat = {"replSetHeartbeat": "rs0", "configVersion": 1, "from": member, "term": Int64(1),
                 "$db": "admin"}
    find = {"find": "oplog.rs", "filter": {"ts": {"$gte": 1}}, "tailable": True, "$db": "local"}
    more = {"getMore": Int64(77), "collection": "oplog.rs", "$db": "local"}
    sessions = [(first_sid, [hello, heartbeat]), (first_sid + 1, [find, more])]
    for sid, requests in sessions:
        codes = CODES.get(w.layout)
        if codes:
            w.write(codes[2], sid, member, server, ts_ns, b"")
        for i, body in enumerate(requests):
            rid = 1000 * sid + i
            w.write(codes[0] if codes else 0, sid, member, server, ts_ns, op_msg(rid, 0, body))
            reply = op_msg(rid + 500, rid, {"ok": 1.0})
            w.write(codes[1] if codes else 0, sid, member, server, ts_ns, reply)
        if codes:
            w.write(codes[3], sid, member, server, ts_ns, b"")


def write(capture, out, layout, max_file_size=0, internal=False):
    records = []
    read_capture.read(capture, on_record=lambda r: records.append(
        (r.kind, r.conn_id, r.ts_ns, bytes(r.payload))))
    start = min((ts for kind, _, ts, _ in records if kind in (OPEN, REQUEST, REPLY)), default=0)
    w = Writer(layout, out, start, max_file_size)
    codes = CODES.get(layout)
    ends = {}
    for kind, conn, ts, payload in records:
        if kind == OPEN:
            event = json.loads(payload)
            ends[conn] = (event["client"], event["upstream"])
            if codes:
                w.write(codes[2], conn, *ends[conn], ts, b"")
        elif kind in (REQUEST, REPLY) and conn in ends:
            code = (codes[0] if kind == REQUEST else codes[1]) if codes else 0
            w.write(code, conn, *ends[conn], ts, payload)
        elif kind == CLOSE and conn in ends and codes:
            w.write(codes[3], conn, *ends[conn], ts, b"")
    if internal:
        internal_traffic(w, max((r[2] for r in records), default=start), 1 + max(ends, default=0))
    w.close()


# ------------------------------------------------------------------------------------------------
# Self-test: a reader written from the same source, and the known CRC-32C check value.

def read_back(path, layout):
    """Packets of a file as tuples (code, id, remote, local, time, order, message)."""
    data = open(path, "rb").read()
    at, out = 0, []
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        p, i = data[at:at + n], 4
        code = None
        if layout.startswith("events"):
            code, i = p[4], 5
        (sid,) = struct.unpack_from("<Q", p, i)
        i += 8
        strings = []
        for _ in range(2 if layout == "addresses-ms" else 1):
            end = p.index(b"\0", i)
            strings.append(p[i:end].decode())
            i = end + 1
        time, order = struct.unpack_from("<QQ", p, i)
        out.append((code, sid, strings, time, order, p[i + 16:]))
        at += n
    return out


def self_test():
    assert read_capture.crc32c(b"123456789") == 0xE3069283
    assert read_capture.crc32c(b"6789", read_capture.crc32c(b"12345")) == 0xE3069283
    message = op_msg(5, 0, {"ping": 1, "$db": "admin"})
    with tempfile.TemporaryDirectory() as tmp:
        for layout in LAYOUTS:
            out = os.path.join(tmp, layout)
            w = Writer(layout, out, 1_700_000_000_000_000_000, 200)
            codes = CODES.get(layout) or (0, 0, None, None)
            for k in range(3):
                w.write(codes[0], 7, "1.2.3.4:5", "6.7.8.9:27017",
                        1_700_000_000_000_000_000 + k * 1_500_000, message)
            w.close()
            files = sorted(f for f in os.listdir(out) if f.endswith(".bin")) if w.directory else [""]
            packets = []
            for f in files:
                path = os.path.join(out, f) if f else out
                packets += read_back(path, layout)
                if f:
                    sums = open(os.path.join(out, "checksum.txt")).read()
                    crc = read_capture.crc32c(open(path, "rb").read())
                    assert "%s\t%x\n" % (os.path.abspath(path), crc) in sums, (layout, f)
            assert len(packets) == 3 and all(p[5] == message for p in packets), layout
            times = [p[3] for p in packets]
            # 0, 1.5 and 3 ms after the start: cut to milliseconds, or microseconds from it.
            want = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_003] \
                if layout.endswith("ms") else [0, 1500, 3000]
            assert times == want, (layout, times)
            if layout == "addresses-ms":
                assert packets[0][2] == ["6.7.8.9:27017", "1.2.3.4:5"]
            else:
                assert packets[0][2] == [session_text(7, "1.2.3.4:5", "6.7.8.9:27017")]
            if w.directory:
                assert len(files) == 3, (layout, files)  # 200 bytes hold one packet each
    print("self-test: %d layouts written and read back, checksum.txt verified: ok" % len(LAYOUTS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--layout", choices=LAYOUTS)
    ap.add_argument("--max-file-size", type=int, default=0)
    ap.add_argument("--internal", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not (args.capture and args.out and args.layout):
        ap.error("CAPTURE, OUT and --layout are needed")
    write(args.capture, args.out, args.layout, args.max_file_size, args.internal)


if __name__ == "__main__":
    main()
