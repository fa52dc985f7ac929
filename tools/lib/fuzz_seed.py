#!/usr/bin/env python3
"""Seeds the fuzz corpora (`fuzz/corpus/<target>/`) from the real frames of `captures/*.mtape`.

Reads the captures with tools/read_capture.py (the independent reader), and writes each target's
inputs in the form its check takes (fuzz/src/checks/: a mode byte, then a message, a document or a
stream). Inputs are deduplicated by content (named by their SHA-1, as libFuzzer names its own), kept
small (at most MAX_SIZE bytes) and capped at MAX_PER_TARGET per target, picked round-robin over the
kinds of message (opcode and command) so that every kind is represented.

Usage: python3 tools/lib/fuzz_seed.py [--out fuzz/corpus] [CAPTURE...]
"""

import argparse
import glob
import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import read_capture as rc  # noqa: E402

MAX_PER_TARGET = 200
MAX_SIZE = 16 * 1024
# redact_deep takes large inputs (tools/fuzz runs it with -max_len 393216).
MAX_SIZE_BY_TARGET = {"redact_deep": 384 * 1024}
OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013
KIND_REQUEST, KIND_REPLY = 3, 4


def inner_message(message):
    """The message inside an OP_COMPRESSED (header rebuilt), or the message itself."""
    header = rc.parse_header(message)
    if not header or header[3] != OP_COMPRESSED or len(message) < 25:
        return message
    original, size, compressor = struct.unpack_from("<iiB", message, 16)
    body = rc.decompress_message(compressor, message[25:])
    return struct.pack("<iiii", 16 + len(body), header[1], header[2], original) + body


def body_document(message):
    """The first document a message carries (OP_MSG body, OP_QUERY query, OP_REPLY's first)."""
    header = rc.parse_header(message)
    if not header:
        return None
    try:
        if header[3] == OP_MSG:
            at = 20
            while at < len(message):
                kind = message[at]
                if kind == 0:
                    return rc._bson_doc_at(message, at + 1)
                (size,) = struct.unpack_from("<i", message, at + 1)
                at += 1 + size
        elif header[3] == OP_QUERY:
            _, at = rc._cstring(message, 20)
            return rc._bson_doc_at(message, at + 8)
        elif header[3] == OP_REPLY:
            return rc._bson_doc_at(message, 36)
    except (ValueError, struct.error, IndexError):
        return None
    return None


def kind_of(message):
    header = rc.parse_header(inner_message(message))
    doc = body_document(inner_message(message))
    first = rc._first_key(doc) if doc else None
    return "%d/%s/%s" % (header[3] if header else -1, first, rc.parse_header(message)[3])


class Corpus:
    def __init__(self):
        self.by_target = {}

    def add(self, target, kind, data):
        if len(data) > MAX_SIZE_BY_TARGET.get(target, MAX_SIZE):
            return
        self.by_target.setdefault(target, {}).setdefault(kind, {})[hashlib.sha1(data).hexdigest()] = data

    def write(self, out):
        for target, kinds in sorted(self.by_target.items()):
            folder = os.path.join(out, target)
            os.makedirs(folder, exist_ok=True)
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            queues = [sorted(v.items()) for _, v in sorted(kinds.items())]
            chosen = {}
            while len(chosen) < MAX_PER_TARGET and any(queues):
                for q in queues:
                    if q and len(chosen) < MAX_PER_TARGET:
                        name, data = q.pop(0)
                        chosen[name] = data
            for name, data in chosen.items():
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(data)
            print("fuzz seed: %-15s %3d inputs, %6d bytes" % (
                target, len(chosen), sum(len(d) for d in chosen.values())))


def hello_reply_doc():
    """A replica-set hello reply naming members the fuzz targets' address map serves."""
    import bson

    return bson.encode({
        "isWritablePrimary": True, "setName": "rs", "hosts": ["localhost:27017", "db0.example.net:27018"],
        "passives": ["[::1]:27019"], "arbiters": ["a"], "primary": "localhost:27017",
        "me": "db0.example.net:27018", "maxWireVersion": 27, "ok": 1.0,
    })


def credential_docs():
    import bson

    return [
        bson.encode({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                     "payload": bson.Binary(b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"), "$db": "admin"}),
        bson.encode({"createUser": "alice", "pwd": "secret", "roles": ["root"], "$db": "admin"}),
        bson.encode({"hello": 1, "speculativeAuthenticate": {"saslStart": 1, "payload": bson.Binary(b"x")},
                     "$db": "admin"}),
        bson.encode({"insert": "c", "documents": [{"name": "bob", "blob": bson.Binary(b"\x01\x02")}],
                     "$db": "bench"}),
    ]


def nested(levels):
    """`{a: {a: ... {}}}`, `levels` deep, built by hand as `wire::depth::nested` builds it."""
    levels = max(levels, 1)
    out = bytearray()
    for k in range(levels, 1, -1):
        out += struct.pack("<i", 8 * k - 3) + b"\x03a\x00"
    out += b"\x05\x00\x00\x00\x00" + b"\x00" * (levels - 1)
    return bytes(out)


def deep_seeds(corpus):
    """redact_deep: documents at and past the depth limit (200), more levels from the mode byte,
    stored credentials, code with scope, and a 300 KB document."""
    import bson

    scram = {"iterationCount": 15000, "salt": "c2FsdA==", "storedKey": "a2V5", "serverKey": "c2s="}
    user = {"_id": "admin.alice", "user": "alice", "db": "admin",
            "credentials": {"SCRAM-SHA-1": scram, "SCRAM-SHA-256": scram}, "roles": []}
    scope = bson.decode(nested(2))
    code = bson.Code("function() { return x; }", {"x": "s", "deep": scope})
    seeds = [
        (0x00, nested(200)),
        (0x00, nested(201)),
        (0x00, nested(7000)),
        (31 << 3, bson.encode({"insert": "c", "documents": [{"s": "x"}], "$db": "d"})),
        (1 << 3, bson.encode({"createUser": "alice", "pwd": "secret", "$db": "admin"})),
        (0x04 | 0x02, bson.encode({"users": [user], "ok": 1.0})),
        (0x04, bson.encode({"cursor": {"firstBatch": [user], "id": 0, "ns": "admin.system.users"}, "ok": 1.0})),
        (0x01, bson.encode({"find": "c", "filter": {"f": code}, "$db": "d"})),
        (0x00, bson.encode({"insert": "c", "documents": [{"s": "v" * 300_000, "n": list(range(2000))}]})),
    ]
    for mode, doc in seeds:
        corpus.add("redact_deep", "synthetic", bytes([mode]) + doc)


def shape_seeds(corpus):
    """shape: one command of each kind the shape definition reads part by part, as an OP_MSG body
    (mode 1), a command over OP_QUERY (2) and a legacy find's query (3), and nesting past the
    depth limit where a shape walks (sort, $and)."""
    import bson

    deep_and = {"a": 1}
    for _ in range(250):
        deep_and = {"$and": [deep_and]}
    commands = [
        {"find": "c", "filter": {"a": {"$in": [1, "x"]}, "$or": [{"b": None}, {"c": {"$gt": 1.5}}]},
         "projection": {"a": 1, "s": {"$slice": 2}}, "sort": {"t": -1}, "hint": "i", "limit": 1,
         "collation": {"locale": "fr"}, "let": {"v": 1}, "min": {"a": 1}, "$db": "d"},
        {"aggregate": "c", "pipeline": [
            {"$match": {"a": {"$elemMatch": {"k": 1}}}},
            {"$lookup": {"from": "o", "as": "x", "pipeline": [{"$match": {"$expr": {"$eq": ["$a", 1]}}}]}},
            {"$facet": {"f": [{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$limit": 3}]}},
            {"$unionWith": {"coll": "u", "pipeline": [{"$project": {"a": 0}}]}},
            {"$graphLookup": {"from": "g", "startWith": "$s", "connectFromField": "a",
                              "connectToField": "b", "as": "r", "restrictSearchWithMatch": {"z": 1}}},
        ], "cursor": {}, "$db": "d"},
        {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"b": 2}, "$push": {"l": {"$each": [1]}}},
                                     "upsert": True, "arrayFilters": [{"e.k": 1}]}], "$db": "d"},
        {"update": "c", "updates": [{"q": {}, "u": [{"$set": {"n": {"$add": ["$n", 1]}}}]}], "$db": "d"},
        {"delete": "c", "deletes": [{"q": {"a": "x"}, "limit": 1}], "$db": "d"},
        {"findAndModify": "c", "query": {"a": 1}, "update": {"$inc": {"n": 1}}, "new": True, "$db": "d"},
        {"distinct": "c", "key": "k", "query": {"a": 1}, "$db": "d"},
        {"count": "c", "query": {"a": 1}, "skip": 1, "$db": "d"},
        {"getMore": bson.Int64(42), "collection": "c", "$db": "d"},
        {"killCursors": "c", "cursors": [bson.Int64(42)], "$db": "d"},
        {"explain": {"find": "c", "filter": {"a": 1}}, "verbosity": "executionStats", "$db": "d"},
        {"find": "c", "filter": deep_and, "$db": "d"},
    ]
    # Each seed a kind of its own, so every one is kept.
    for i, command in enumerate(commands):
        corpus.add("shape", "synthetic/%d" % i, b"\x01" + bson.encode(command))
        corpus.add("shape", "synthetic/%d/query" % i, b"\x02" + bson.encode({"$query": command}))
    legacy = bson.encode({"$query": {"a": 1}, "$orderby": {"t": 1}})
    corpus.add("shape", "synthetic/legacy", b"\x03" + legacy)
    head = bson.encode({"find": "c", "$db": "d"})[4:-1]
    elements = head + b"\x03sort\x00" + nested(300)
    deep_sort = struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"
    corpus.add("shape", "synthetic/deep-sort", b"\x01" + deep_sort)


def seed(paths, out):
    corpus = Corpus()
    for path in paths:
        reader = rc.CaptureReader(path)
        streams = {}
        for record in reader.records():
            if record.kind not in (KIND_REQUEST, KIND_REPLY):
                continue
            message = bytes(record.payload)
            request = record.kind == KIND_REQUEST
            kind = kind_of(message)
            try:
                plain = inner_message(message)
            except Exception:  # a frame that does not decompress is still a seed for the parsers
                plain = message
            corpus.add("message_parse", kind, message)
            corpus.add("redact", kind, bytes([0 if request else 4]) + message)
            if request:
                corpus.add("replay_rewrite", kind, b"\x00" + message)
                corpus.add("shape", kind, b"\x00" + message)
            else:
                corpus.add("hello_rewrite", kind, b"\x00" + message)
            if plain is not message:
                corpus.add("decompress", kind, b"\x00" + message)
                compressor = message[24]
                corpus.add("decompress", kind + "/built", bytes([1 | (compressor << 1)]) + message[20:24] + message[25:])
            if rc.parse_header(plain) and rc.parse_header(plain)[3] == OP_MSG:
                corpus.add("op_msg_view", kind, b"\x00" + plain)
            doc = body_document(plain)
            if doc:
                op = rc.parse_header(plain)[3]
                mode = {OP_MSG: 0, OP_QUERY: 1, OP_REPLY: 3}.get(op, 0)
                corpus.add("bson_inspect", kind, bytes([mode]) + doc)
            stream = streams.setdefault((record.conn_id, request), [])
            if len(stream) < 6:
                stream.append(message)
        for (conn, request), messages in sorted(streams.items()):
            data = b"".join(messages)
            corpus.add("frame_splitter", "conn", bytes([(conn * 7 + request) % 256]) + data)
        add_capture_seeds(corpus, path)
    for doc in [hello_reply_doc()]:
        corpus.add("hello_rewrite", "synthetic", b"\x01" + doc)
        corpus.add("hello_rewrite", "synthetic", b"\x03" + doc)
    for doc in credential_docs():
        corpus.add("redact", "synthetic", b"\x01" + doc)
        corpus.add("redact", "synthetic", b"\x02" + doc)
        corpus.add("replay_rewrite", "synthetic", b"\x01" + doc)
        corpus.add("bson_inspect", "synthetic", b"\x00" + doc)
    deep_seeds(corpus)
    shape_seeds(corpus)
    corpus.write(out)


def add_capture_seeds(corpus, path):
    """The capture as it is (when small), and its first records uncompressed (mode byte 1)."""
    with open(path, "rb") as f:
        raw = f.read()
    corpus.add("capture_reader", "file", raw)
    stream = b"".join(rc.ZstdSource(path).chunks())
    # Header, metadata, and whole records up to a few kilobytes.
    (meta_len,) = struct.unpack_from("<I", stream, 10)
    at = 14 + meta_len
    while at + 4 <= len(stream):
        (length,) = struct.unpack_from("<I", stream, at)
        end = at + 4 + length + 4
        if end > 4096:
            break
        at = end
    corpus.add("capture_reader", "stream", b"\x01" + stream[:at])
    corpus.add("capture_reader", "stream-cut", b"\x01" + stream[: at + 10])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "fuzz", "corpus"))
    parser.add_argument("captures", nargs="*")
    args = parser.parse_args()
    paths = args.captures or sorted(glob.glob(os.path.join(ROOT, "captures", "*.mtape")))
    if not paths:
        sys.exit("fuzz seed: no captures found")
    seed(paths, args.out)


if __name__ == "__main__":
    main()
