#!/usr/bin/env python3
"""Writes a mongoreplay playback file from a mongotape capture, independently of mongotape's Rust
code: the capture is read with tools/read_capture.py (which follows docs/capture-format.md), the
playback file is written as mongoreplay's own writer lays it out (mongo-tools, mongoreplay/
playbackfile.go, recorded_op.go, raw_op.go, util.go), with pymongo's `bson`:

  - a metadata document {playbackfileversion: 1, driveropsfiltered: false};
  - per message a RecordedOp: {rawop: {header: {messagelength, requestid, responseto, opcode},
    body: <the whole message, header included, binary>}, seen: {sec: <seconds since January 1 of
    year 1>, nsec}, srcendpoint, dstendpoint, seenconnectionnum, playedconnectionnum: 0,
    order, generation: 0}; a connection's close is a RecordedOp with eof: true and an empty rawop.
  - with --gzip, the whole stream gzipped (mongoreplay record --gzip);
  - with --shorten-replies, an OP_REPLY keeps only its header, its 20 bytes of fields and its first
    document, its length field untouched, as mongoreplay's recorder stores replies (ShortenReply);
  - with --reply-response-to-zero, every OP_REPLY's responseTo is 0 (header and body), as in a
    playback file made from a 2016 shell's session: a reply known by its opcode alone.

Usage: python3 tools/write_mongoreplay.py CAPTURE.mtape OUT.playback [--gzip] [--shorten-replies]
       [--reply-response-to-zero]
"""

import argparse
import gzip
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_capture  # noqa: E402

import bson  # noqa: E402
from bson.binary import Binary  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from collections import OrderedDict  # noqa: E402

# Seconds from January 1 of year 1 to the Unix epoch (Go's time.Time internal origin).
UNIX_TO_INTERNAL = (1969 * 365 + 1969 // 4 - 1969 // 100 + 1969 // 400) * 86400
OPEN, CLOSE, REQUEST, REPLY = 1, 2, 3, 4


def seen(ts_ns):
    sec, nsec = divmod(ts_ns, 1_000_000_000)
    return OrderedDict([("sec", Int64(sec + UNIX_TO_INTERNAL)), ("nsec", nsec)])


def zero_response_to(message):
    """An OP_REPLY with its responseTo set to 0; any other message as it is."""
    if len(message) < 16 or struct.unpack("<i", message[12:16])[0] != 1:
        return message
    return message[:8] + struct.pack("<i", 0) + message[12:]


def recorded_op(message, ts_ns, src, dst, conn, order, eof=False):
    if message:
        length, request_id, response_to, opcode = struct.unpack("<iiii", message[:16])
    else:
        length = request_id = response_to = opcode = 0
    header = OrderedDict([("messagelength", length), ("requestid", request_id),
                          ("responseto", response_to), ("opcode", opcode)])
    op = OrderedDict()
    op["rawop"] = OrderedDict([("header", header), ("body", Binary(bytes(message)))])
    op["seen"] = seen(ts_ns)
    op["srcendpoint"] = src
    op["dstendpoint"] = dst
    op["seenconnectionnum"] = Int64(conn)
    op["playedconnectionnum"] = Int64(0)
    op["order"] = Int64(order)
    op["generation"] = 0
    if eof:
        op["eof"] = True
    return bson.encode(op)


def shorten(message):
    """An OP_REPLY cut after its first document (its length field left as it was)."""
    opcode = struct.unpack("<i", message[12:16])[0]
    if opcode != 1 or len(message) <= 36:
        return message
    first = struct.unpack("<i", message[36:40])[0]
    return message[:36 + first]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("out")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--shorten-replies", action="store_true")
    ap.add_argument("--reply-response-to-zero", action="store_true")
    args = ap.parse_args()
    ends = {}
    out = gzip.open(args.out, "wb") if args.gzip else open(args.out, "wb")
    out.write(bson.encode(OrderedDict([("playbackfileversion", 1), ("driveropsfiltered", False)])))
    order = 0

    def on_record(r):
        nonlocal order
        if r.kind == OPEN:
            event = json.loads(r.payload)
            ends[r.conn_id] = (event["client"], event["upstream"])
            return
        if r.conn_id not in ends:
            return
        client, server = ends[r.conn_id]
        if r.kind in (REQUEST, REPLY):
            src, dst = (client, server) if r.kind == REQUEST else (server, client)
            message = r.payload
            if args.shorten_replies and r.kind == REPLY:
                message = shorten(message)
            if args.reply_response_to_zero and r.kind == REPLY:
                message = zero_response_to(message)
            out.write(recorded_op(message, r.ts_ns, src, dst, r.conn_id, order))
        elif r.kind == CLOSE:
            out.write(recorded_op(b"", r.ts_ns, client, server, r.conn_id, order, eof=True))
        else:
            return
        order += 1

    read_capture.read(args.capture, on_record=on_record)
    out.close()


if __name__ == "__main__":
    main()
