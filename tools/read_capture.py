#!/usr/bin/env python3
"""Independent reader for mongotape capture files (`.mtape`).

Written from docs/capture-format.md alone, without mongotape's code, so that it can check the Rust writer
from the outside. Python standard library only, plus:
  - a zstd decoder: `compression.zstd` (Python 3.14) or `backports.zstd`, else `zstandard`, else the
    `zstd` command (`zstd -d -c`);
  - pymongo's `bson`, only to print documents (optional; without it documents are summarised by hand).

Usage:
  python3 tools/read_capture.py FILE             summary: metadata, records by kind, connections, opcodes,
                                                 and the file's summary frame checked against them
  python3 tools/read_capture.py --records FILE   one line per record, then the status line
  python3 tools/read_capture.py --json FILE      the summary as one JSON object (for tests)
  python3 tools/read_capture.py --self-test      write synthetic captures per the spec and read them back

Everything readable is printed before a problem is reported. Exit status:
  0 complete (the file ends with an `end` record), 1 truncated (cut short, including a missing `end`),
  3 corrupt (bad record length or CRC), 4 not a capture (bad magic, unknown version, not zstd),
  2 usage error.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

MAGIC = b"\x89MTAPE\r\n"
FORMAT_VERSION = 1
FILE_HEADER_LEN = len(MAGIC) + 2 + 4
MAX_METADATA_LEN = 1 << 20
RECORD_HEADER_LEN = 4 + 1 + 8 + 8  # len, kind, conn_id, ts_ns
RECORD_FIXED_LEN = 17  # kind + conn_id + ts_ns, counted in `len`
MAX_RECORD_LEN = 64 << 20
CRC_LEN = 4
READ_CHUNK = 1 << 20

KIND_NAMES = {
    1: "open",
    2: "close",
    3: "request",
    4: "reply",
    5: "client_metadata",
    6: "gap",
    7: "end",
    8: "hello_rewrite",
    9: "snapshot",
    10: "state_end",
}
CONNECTION_KINDS = {1, 2, 3, 4, 5, 8}
CAPTURE_WIDE_KINDS = {6, 7, 9, 10}
JSON_KINDS = {1, 2, 6, 7, 8, 9, 10}
MESSAGE_KINDS = {3, 4}

OPCODE_NAMES = {
    1: "OP_REPLY",
    2001: "OP_UPDATE",
    2002: "OP_INSERT",
    2004: "OP_QUERY",
    2005: "OP_GET_MORE",
    2006: "OP_DELETE",
    2007: "OP_KILL_CURSORS",
    2012: "OP_COMPRESSED",
    2013: "OP_MSG",
}
OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013
MSG_HEADER_LEN = 16
COMPRESSOR_NAMES = {0: "noop", 1: "snappy", 2: "zlib", 3: "zstd"}
OP_MSG_FLAGS = [(1 << 0, "checksumPresent"), (1 << 1, "moreToCome"), (1 << 16, "exhaustAllowed")]

EXIT_OK, EXIT_TRUNCATED, EXIT_CORRUPT, EXIT_NOT_CAPTURE = 0, 1, 3, 4


def kind_name(kind):
    return KIND_NAMES.get(kind, "unknown(%d)" % kind)


def opcode_name(opcode):
    return OPCODE_NAMES.get(opcode, "opcode(%d)" % opcode)


# --------------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, table-driven, pure Python.

def _make_crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


CRC32C_TABLE = _make_crc32c_table()


def crc32c(data, crc=0):
    """CRC-32C of `data` (bytes-like), continuing from `crc`."""
    table = CRC32C_TABLE
    crc ^= 0xFFFFFFFF
    for byte in memoryview(data).cast("B"):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# --------------------------------------------------------------------------------------------------
# The zstd layer: yields uncompressed chunks; afterwards `error` says how the stream ended.

def _zstd_module():
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = __import__(name, fromlist=["ZstdDecompressor"])
            return name, module
        except ImportError:
            pass
    return None, None


def available_backends():
    backends = []
    name, _ = _zstd_module()
    if name:
        backends.append(name)
    try:
        import zstandard  # noqa: F401
        backends.append("zstandard")
    except ImportError:
        pass
    if shutil.which("zstd"):
        backends.append("zstd-command")
    return backends


class ZstdSource:
    """Uncompressed bytes of a zstd file (one or more frames), chunk by chunk.

    A stream cut short yields everything decodable and sets `error`; so does corrupt zstd data.
    """

    def __init__(self, path, backend=None):
        self.path = path
        backends = available_backends()
        if not backends:
            raise SystemExit("read_capture: no zstd decoder: install backports.zstd or zstandard, or the zstd command")
        if backend is None:
            backend = backends[0]
        elif backend not in backends:
            raise SystemExit("read_capture: zstd backend %r not available (have %s)" % (backend, ", ".join(backends)))
        self.backend = backend
        self.error = None
        self.compressed_bytes = os.path.getsize(path)

    def chunks(self):
        if self.backend == "zstd-command":
            yield from self._chunks_command()
        elif self.backend == "zstandard":
            yield from self._chunks_zstandard()
        else:
            yield from self._chunks_module()

    def _chunks_module(self):
        _, module = _zstd_module()
        yield from self._chunks_frames(module.ZstdDecompressor, module.ZstdError)

    def _chunks_zstandard(self):
        import zstandard

        context = zstandard.ZstdDecompressor()
        yield from self._chunks_frames(context.decompressobj, zstandard.ZstdError)

    def _chunks_frames(self, new_decoder, zstd_error):
        """Decompress frame after frame (a capture may hold several) with a streaming decoder."""
        with open(self.path, "rb") as fh:
            decoder, fed = new_decoder(), False
            try:
                while True:
                    data = fh.read(READ_CHUNK)
                    if not data:
                        break
                    while data:
                        if decoder.eof:  # next frame
                            decoder, fed = new_decoder(), False
                        fed = True
                        out = decoder.decompress(data)
                        if out:
                            yield out
                        data = decoder.unused_data if decoder.eof else b""
                if fed and not decoder.eof:
                    self.error = "zstd stream ends part-way through a frame"
            except zstd_error as err:
                self.error = "zstd: %s" % err

    def _chunks_command(self):
        with open(self.path, "rb") as fh, tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(["zstd", "-d", "-c", "-q"], stdin=fh, stdout=subprocess.PIPE, stderr=errors)
            try:
                while True:
                    out = proc.stdout.read(READ_CHUNK)
                    if not out:
                        break
                    yield out
            finally:
                proc.stdout.close()
                status = proc.wait()
            if status != 0:
                errors.seek(0)
                message = errors.read().decode("utf-8", "replace").strip().replace("\n", "; ")
                self.error = "zstd -d exited with status %d: %s" % (status, message)


# --------------------------------------------------------------------------------------------------
# The record layer.

class Record:
    __slots__ = ("offset", "kind", "conn_id", "ts_ns", "payload")

    def __init__(self, offset, kind, conn_id, ts_ns, payload):
        self.offset = offset
        self.kind = kind
        self.conn_id = conn_id
        self.ts_ns = ts_ns
        self.payload = payload


class Problem:
    """Why reading stopped: `kind` is "truncated", "corrupt" or "not_capture"; `offset` is uncompressed."""

    def __init__(self, kind, offset, message):
        self.kind = kind
        self.offset = offset
        self.message = message

    def __str__(self):
        label = {"truncated": "TRUNCATED", "corrupt": "CORRUPT", "not_capture": "NOT A CAPTURE"}[self.kind]
        return "%s at offset %d: %s" % (label, self.offset, self.message)

    def exit_code(self):
        return {"truncated": EXIT_TRUNCATED, "corrupt": EXIT_CORRUPT, "not_capture": EXIT_NOT_CAPTURE}[self.kind]

    def to_json(self):
        return {"kind": self.kind, "offset": self.offset, "message": self.message}


class CaptureReader:
    """Streams the records of a capture. After `records()` is exhausted, `problem` is set or None.

    Reading stops at the first corrupt record: `len` is not covered by the CRC, so nothing after a bad
    record can be trusted to be aligned.
    """

    def __init__(self, path, backend=None):
        self.source = ZstdSource(path, backend)
        self.version = None
        self.metadata = None
        self.problem = None
        self.uncompressed_bytes = 0
        self.saw_end = False

    def records(self):
        buf = bytearray()
        pos = 0  # parse position within buf
        base = 0  # uncompressed offset of buf[0]
        chunks = self.source.chunks()
        exhausted = False

        def fill(needed):
            """Make buf[pos:] hold at least `needed` bytes; False when the stream ends first."""
            nonlocal buf, pos, base, exhausted
            while len(buf) - pos < needed and not exhausted:
                if pos > READ_CHUNK:
                    del buf[:pos]
                    base += pos
                    pos = 0
                chunk = next(chunks, None)
                if chunk is None:
                    exhausted = True
                    break
                self.uncompressed_bytes += len(chunk)
                buf.extend(chunk)
            return len(buf) - pos >= needed

        # File header.
        if not fill(FILE_HEADER_LEN):
            available = bytes(buf[pos:])
            if not available and self.source.error:
                self.problem = Problem("not_capture", 0, "not a zstd stream (%s)" % self.source.error)
            elif not available:
                # What a recorder killed before its first flush leaves behind.
                self.problem = Problem("truncated", 0, "empty stream: nothing was flushed")
            elif MAGIC.startswith(available[: len(MAGIC)]):
                self.problem = Problem("truncated", 0, self._cut_message("the file header"))
            else:
                self.problem = Problem("not_capture", 0, "bad magic %s" % available[: len(MAGIC)].hex(" "))
            return
        magic, version, meta_len = struct.unpack_from("<8sHI", buf, pos)
        if magic != MAGIC:
            self.problem = Problem("not_capture", 0, "bad magic %s" % magic.hex(" "))
            return
        self.version = version
        if version != FORMAT_VERSION:
            self.problem = Problem("not_capture", 8, "unknown format version %d" % version)
            return
        if meta_len > MAX_METADATA_LEN:
            self.problem = Problem("corrupt", 10, "metadata length %d above 1 MiB" % meta_len)
            return
        if not fill(FILE_HEADER_LEN + meta_len):
            self.problem = Problem("truncated", 0, self._cut_message("the metadata"))
            return
        raw_meta = bytes(buf[pos + FILE_HEADER_LEN: pos + FILE_HEADER_LEN + meta_len])
        try:
            metadata = json.loads(raw_meta.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            self.problem = Problem("corrupt", FILE_HEADER_LEN, "metadata is not UTF-8 JSON: %s" % err)
            return
        if not isinstance(metadata, dict):
            self.problem = Problem("corrupt", FILE_HEADER_LEN, "metadata is not a JSON object")
            return
        self.metadata = metadata
        pos += FILE_HEADER_LEN + meta_len

        # Records.
        while True:
            offset = base + pos
            if not fill(4):
                if len(buf) - pos == 0 and self.source.error is None:
                    if not self.saw_end:
                        self.problem = Problem("truncated", offset, "no end record: the capture was cut short")
                elif len(buf) - pos == 0:
                    self.problem = Problem("truncated", offset, "cut at a record boundary (%s)" % self.source.error)
                else:
                    self.problem = Problem("truncated", offset, self._cut_message("a record length"))
                return
            (length,) = struct.unpack_from("<I", buf, pos)
            if length < RECORD_FIXED_LEN or length > MAX_RECORD_LEN:
                self.problem = Problem("corrupt", offset, "record length %d outside [17, 64 MiB]" % length)
                return
            if not fill(4 + length + CRC_LEN):
                have = len(buf) - pos
                self.problem = Problem(
                    "truncated", offset,
                    self._cut_message("a record (%d of %d bytes)" % (have, 4 + length + CRC_LEN)))
                return
            body = memoryview(buf)[pos + 4: pos + 4 + length]
            (stored_crc,) = struct.unpack_from("<I", buf, pos + 4 + length)
            computed = crc32c(body)
            if computed != stored_crc:
                body.release()
                self.problem = Problem(
                    "corrupt", offset, "CRC mismatch: stored %08x, computed %08x" % (stored_crc, computed))
                return
            kind, conn_id, ts_ns = struct.unpack_from("<BQQ", body, 0)
            payload = bytes(body[RECORD_FIXED_LEN:])
            body.release()
            pos += 4 + length + CRC_LEN
            if kind == 7:
                self.saw_end = True
            yield Record(offset, kind, conn_id, ts_ns, payload)

    def _cut_message(self, where):
        if self.source.error:
            return "stream ends inside %s (%s)" % (where, self.source.error)
        return "stream ends inside %s" % where


# --------------------------------------------------------------------------------------------------
# Wire messages: only what a summary needs (16-byte header, OP_MSG sections, OP_QUERY, OP_REPLY).

def parse_header(message):
    """(messageLength, requestID, responseTo, opCode) or None when shorter than a header."""
    if len(message) < MSG_HEADER_LEN:
        return None
    return struct.unpack_from("<iiii", message, 0)


def _cstring(data, start):
    end = data.index(b"\x00", start)
    return data[start:end].decode("utf-8", "replace"), end + 1


def _bson_doc_at(data, start):
    """The bytes of the BSON document at `start` (length-checked)."""
    if start + 5 > len(data):
        raise ValueError("document header past the end")
    (size,) = struct.unpack_from("<i", data, start)
    if size < 5 or start + size > len(data):
        raise ValueError("document length %d out of bounds" % size)
    return data[start: start + size]


def _first_key(doc):
    if len(doc) < 6 or doc[4] == 0:
        return None
    name, _ = _cstring(doc, 5)
    return name


def decode_bson(doc):
    """A dict for the document, or None when pymongo's bson is missing or the bytes do not decode."""
    try:
        import bson
    except ImportError:
        return None
    try:
        return bson.decode(doc)
    except Exception:  # noqa: BLE001 - any decode failure is reported the same way
        return None


def to_ext_json(value):
    try:
        from bson import json_util

        return json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS)
    except ImportError:
        return json.dumps(value, default=str)


def decompress_message(compressor_id, data):
    if compressor_id == 0:
        return data
    if compressor_id == 2:
        return zlib.decompress(data)
    if compressor_id == 3:
        name, module = _zstd_module()
        if module:
            return module.decompress(data)
        try:
            import zstandard

            return zstandard.ZstdDecompressor().decompress(data)
        except ImportError:
            pass
        return subprocess.run(["zstd", "-d", "-c", "-q"], input=data, stdout=subprocess.PIPE, check=True).stdout
    if compressor_id == 1:
        import snappy  # python-snappy

        return snappy.uncompress(data)
    raise ValueError("unknown compressor id %d" % compressor_id)


def describe_message(message, reply=False, with_docs=False):
    """One-line description of a wire message; never raises on malformed input."""
    header = parse_header(message)
    if header is None:
        return "malformed message: %d bytes, shorter than a header" % len(message)
    length, request_id, response_to, opcode = header
    parts = ["%s id=%d to=%d len=%d" % (opcode_name(opcode), request_id, response_to, length)]
    if length != len(message):
        parts.append("LENGTH-MISMATCH(record holds %d)" % len(message))
    try:
        parts.extend(_describe_body(opcode, message[MSG_HEADER_LEN:], reply, with_docs))
    except (ValueError, IndexError, struct.error, zlib.error, subprocess.CalledProcessError, ImportError) as err:
        parts.append("(undecodable: %s)" % err)
    return " ".join(parts)


def _describe_doc(doc, with_docs, reply):
    parts = []
    decoded = decode_bson(doc)
    if decoded is None:
        key = _first_key(doc)
        parts.append("cmd=%s" % key if not reply else "first=%s" % key)
    elif reply:
        if "ok" in decoded:
            parts.append("ok=%s" % decoded["ok"])
        if "errmsg" in decoded:
            parts.append("errmsg=%s" % json.dumps(str(decoded["errmsg"])))
    else:
        parts.append("cmd=%s" % (next(iter(decoded), None)))
        if "$db" in decoded:
            parts.append("db=%s" % decoded["$db"])
    if with_docs:
        parts.append(to_ext_json(decoded) if decoded is not None else "<%d bytes of BSON>" % len(doc))
    return parts


def _describe_body(opcode, body, reply, with_docs):
    parts = []
    if opcode == OP_MSG:
        (flags,) = struct.unpack_from("<I", body, 0)
        names = [name for bit, name in OP_MSG_FLAGS if flags & bit]
        parts.append("flags=%s" % ("|".join(names) if names else "0"))
        end = len(body) - (4 if flags & 1 else 0)
        at = 4
        while at < end:
            section_kind = body[at]
            at += 1
            if section_kind == 0:
                doc = _bson_doc_at(body, at)
                at += len(doc)
                parts.extend(_describe_doc(doc, with_docs, reply))
            elif section_kind == 1:
                (size,) = struct.unpack_from("<i", body, at)
                if size < 4 or at + size > end:
                    raise ValueError("document sequence length %d out of bounds" % size)
                identifier, doc_at = _cstring(body, at + 4)
                docs = []
                while doc_at < at + size:
                    docs.append(_bson_doc_at(body, doc_at))
                    doc_at += len(docs[-1])
                parts.append("seq(%s x%d)" % (identifier, len(docs)))
                if with_docs:
                    decoded = [decode_bson(doc) for doc in docs]
                    parts.append(to_ext_json(decoded) if None not in decoded else "<undecodable BSON>")
                at += size
            else:
                raise ValueError("unknown section kind %d" % section_kind)
    elif opcode == OP_QUERY:
        (flags,) = struct.unpack_from("<i", body, 0)
        collection, at = _cstring(body, 4)
        skip, limit = struct.unpack_from("<ii", body, at)
        doc = _bson_doc_at(body, at + 8)
        parts.append("flags=%d ns=%s skip=%d limit=%d" % (flags, collection, skip, limit))
        parts.extend(_describe_doc(doc, with_docs, False))
    elif opcode == OP_REPLY:
        flags, cursor_id, starting_from, returned = struct.unpack_from("<iqii", body, 0)
        parts.append("flags=%d cursor=%d from=%d returned=%d" % (flags, cursor_id, starting_from, returned))
        if returned > 0:
            parts.extend(_describe_doc(_bson_doc_at(body, 20), with_docs, True))
    elif opcode == OP_COMPRESSED:
        original, size, compressor_id = struct.unpack_from("<iiB", body, 0)
        parts.append("original=%s uncompressed=%d compressor=%s" % (
            opcode_name(original), size, COMPRESSOR_NAMES.get(compressor_id, compressor_id)))
        inner = decompress_message(compressor_id, body[9:])
        if len(inner) != size:
            parts.append("SIZE-MISMATCH(got %d)" % len(inner))
        parts.append("|")
        parts.extend(_describe_body(original, inner, reply, with_docs))
    return parts


# --------------------------------------------------------------------------------------------------
# Summary.

class Summary:
    def __init__(self):
        self.records = 0
        self.by_kind = {}
        self.connections = {}  # conn_id -> dict
        self.opcodes = {"request": {}, "reply": {}}
        self.compressed_inner = {}
        self.gaps = {"records": 0, "dropped_messages": 0, "dropped_bytes": 0}
        self.end = None
        self.snapshot = None
        self.state_end = None
        self.warnings = []
        self.first_ts = None
        self.last_ts = None
        self._warned = 0
        self._open = set()
        self.peak_open = 0  # the most connections open at once ("Summary" in the spec)
        self.faults = 0

    def warn(self, record, message):
        self._warned += 1
        if len(self.warnings) < 50:
            self.warnings.append("offset %d (%s, conn %d): %s" % (record.offset, kind_name(record.kind),
                                                                  record.conn_id, message))

    def add(self, record):
        self.records += 1
        name = kind_name(record.kind)
        self.by_kind[name] = self.by_kind.get(name, 0) + 1
        if self.last_ts is not None and record.ts_ns < self.last_ts:
            self.warn(record, "timestamp goes backwards by %d ns" % (self.last_ts - record.ts_ns))
        if self.first_ts is None:
            self.first_ts = record.ts_ns
        self.last_ts = max(self.last_ts or 0, record.ts_ns)
        if record.kind in (1, 3, 4) and record.conn_id not in self._open:
            self._open.add(record.conn_id)
            self.peak_open = max(self.peak_open, len(self._open))
        elif record.kind == 2:
            self._open.discard(record.conn_id)
        elif record.kind == 11:
            self.faults += 1
        if self.end is not None:
            self.warn(record, "record after the end record")

        if record.kind in CONNECTION_KINDS:
            if record.conn_id == 0:
                self.warn(record, "connection record with conn_id 0")
            conn = self.connections.get(record.conn_id)
            if conn is None:
                conn = self.connections[record.conn_id] = {
                    "client": None, "opened_ns": None, "closed_ns": None, "close": None, "requests": 0,
                    "replies": 0, "request_bytes": 0, "reply_bytes": 0, "driver": None,
                }
                if record.kind != 1:
                    self.warn(record, "record before the connection's open record")
            elif record.kind == 1:
                self.warn(record, "second open record for the connection")
            if conn["closed_ns"] is not None:
                self.warn(record, "record after the connection's close record")
        elif record.kind in CAPTURE_WIDE_KINDS and record.conn_id != 0:
            self.warn(record, "capture-wide record with conn_id %d" % record.conn_id)

        if record.kind in JSON_KINDS:
            try:
                info = json.loads(record.payload.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                self.warn(record, "payload is not UTF-8 JSON")
                info = {}
            if not isinstance(info, dict):
                self.warn(record, "payload is not a JSON object")
                info = {}
            if record.kind == 1:
                conn["client"] = info.get("client")
                conn["opened_ns"] = record.ts_ns
            elif record.kind == 2:
                conn["closed_ns"] = record.ts_ns
                conn["close"] = info
            elif record.kind == 6:
                self.gaps["records"] += 1
                for key in ("dropped_messages", "dropped_bytes"):
                    if isinstance(info.get(key), int):
                        self.gaps[key] += info[key]
            elif record.kind == 7:
                self.end = info
            elif record.kind == 9:
                self.snapshot = info
            elif record.kind == 10:
                self.state_end = info
                if not isinstance(info.get("collections"), list):
                    self.warn(record, "state_end record without a collections list")
            elif record.kind == 8:
                conn["hello_rewrites"] = conn.get("hello_rewrites", 0) + 1
                if info.get("unserved"):
                    self.warn(record, "hello reply named addresses the proxy did not serve: %s"
                              % ", ".join(map(str, info["unserved"])))
        elif record.kind in MESSAGE_KINDS:
            side = "request" if record.kind == 3 else "reply"
            conn["requests" if record.kind == 3 else "replies"] += 1
            conn[side + "_bytes"] += len(record.payload)
            header = parse_header(record.payload)
            if header is None:
                self.warn(record, "message shorter than a 16-byte header (%d bytes)" % len(record.payload))
                return
            length, _, _, opcode = header
            if length != len(record.payload):
                self.warn(record, "messageLength %d but the record holds %d bytes" % (length, len(record.payload)))
            counts = self.opcodes[side]
            counts[opcode_name(opcode)] = counts.get(opcode_name(opcode), 0) + 1
            if opcode == OP_COMPRESSED and len(record.payload) >= MSG_HEADER_LEN + 9:
                original, _, compressor_id = struct.unpack_from("<iiB", record.payload, MSG_HEADER_LEN)
                key = "%s %s via %s" % (side, opcode_name(original), COMPRESSOR_NAMES.get(compressor_id, compressor_id))
                self.compressed_inner[key] = self.compressed_inner.get(key, 0) + 1
        elif record.kind == 5:
            doc = decode_bson(record.payload)
            if doc is None:
                try:
                    _bson_doc_at(record.payload, 0)
                    conn["driver"] = "<%d bytes of BSON>" % len(record.payload)
                except ValueError:
                    self.warn(record, "client_metadata is not a BSON document")
            else:
                driver = doc.get("driver") or {}
                application = doc.get("application") or {}
                text = "%s %s" % (driver.get("name", "?"), driver.get("version", "?"))
                if application.get("name"):
                    text += " app=%s" % application["name"]
                conn["driver"] = text

    def to_json(self):
        return {
            "records": self.records,
            "by_kind": self.by_kind,
            "connections": {str(k): v for k, v in sorted(self.connections.items())},
            "opcodes": self.opcodes,
            "compressed_inner": self.compressed_inner,
            "gaps": self.gaps,
            "end": self.end,
            "snapshot": self.snapshot,
            "state_end": self.state_end,
            "first_ts_ns": self.first_ts,
            "last_ts_ns": self.last_ts,
            "warnings": self.warnings,
            "warning_count": self._warned,
            "peak_open": self.peak_open,
            "faults": self.faults,
        }


def format_ts(ts_ns, start_ns):
    if start_ns is None:
        return "ts=%d" % ts_ns
    return "t=%+.3fms" % ((ts_ns - start_ns) / 1e6)


def describe_record(record, start_ns, with_docs=False):
    head = "@%d %s conn=%d %s len=%d" % (record.offset, kind_name(record.kind), record.conn_id,
                                         format_ts(record.ts_ns, start_ns), len(record.payload))
    if record.kind in JSON_KINDS:
        return head + " " + record.payload.decode("utf-8", "replace")
    if record.kind in MESSAGE_KINDS:
        return head + " " + describe_message(record.payload, record.kind == 4, with_docs)
    if record.kind == 5:
        doc = decode_bson(record.payload)
        return head + " " + (to_ext_json(doc) if doc is not None else "<%d bytes of BSON>" % len(record.payload))
    return head + " (unknown kind, skipped)"


def read(path, backend=None, on_record=None):
    """Reads a whole capture: (reader, summary). `on_record(record)` sees each record as it is read."""
    reader = CaptureReader(path, backend)
    summary = Summary()
    for record in reader.records():
        summary.add(record)
        if on_record:
            on_record(record)
    return reader, summary


def print_summary(path, reader, summary, out):
    source = reader.source
    w = out.write
    w("file: %s (%d bytes compressed, %d uncompressed; zstd via %s)\n" % (
        path, source.compressed_bytes, reader.uncompressed_bytes, source.backend))
    if reader.version is not None:
        w("format version: %d\n" % reader.version)
    if reader.metadata is not None:
        w("metadata:\n")
        for key, value in reader.metadata.items():
            w("  %s: %s\n" % (key, json.dumps(value) if not isinstance(value, str) else value))
    w("records: %d\n" % summary.records)
    file_summary = read_file_summary(path)
    if file_summary is None:
        w("summary frame: none (the writer did not finish, or it does not check out)\n")
    else:
        agrees = (file_summary.get("records"), file_summary.get("peak_open"),
                  file_summary.get("faults")) == (summary.records, summary.peak_open, summary.faults)
        w("summary frame: %s (%s what was read)\n" % (json.dumps(file_summary, sort_keys=True),
                                                        "agrees with" if agrees else "DIFFERS from"))
    for name, count in sorted(summary.by_kind.items(), key=lambda item: -item[1]):
        w("  %-16s %d\n" % (name, count))
    if summary.first_ts is not None and summary.last_ts is not None:
        w("time span: %.3f s\n" % ((summary.last_ts - summary.first_ts) / 1e9))
    w("connections: %d\n" % len(summary.connections))
    if summary.connections:
        w("  %5s %-22s %8s %8s %12s %12s  %-28s %s\n" % (
            "conn", "client", "requests", "replies", "req_bytes", "reply_bytes", "closed by", "driver"))
    for conn_id, conn in sorted(summary.connections.items()):
        close = conn["close"]
        closed = "-" if close is None else "%s: %s" % (close.get("side"), close.get("reason"))
        w("  %5d %-22s %8d %8d %12d %12d  %-28s %s\n" % (
            conn_id, conn["client"] or "?", conn["requests"], conn["replies"], conn["request_bytes"],
            conn["reply_bytes"], closed[:28], conn["driver"] or ""))
    for side in ("request", "reply"):
        counts = summary.opcodes[side]
        if counts:
            w("%s opcodes: %s\n" % (side, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    for key, count in sorted(summary.compressed_inner.items()):
        w("  OP_COMPRESSED %s: %d\n" % (key, count))
    if summary.gaps["records"]:
        w("gaps: %d records, %d messages and %d bytes dropped\n" % (
            summary.gaps["records"], summary.gaps["dropped_messages"], summary.gaps["dropped_bytes"]))
    if summary.end is not None:
        w("end: %s\n" % json.dumps(summary.end, sort_keys=True))
    if summary.snapshot is not None:
        w("snapshot: %s\n" % json.dumps(summary.snapshot, sort_keys=True))
    if summary.state_end is not None:
        collections = summary.state_end.get("collections") or []
        w("state_end: T1 Timestamp(%s, %s), %d collections, %d documents\n" % (
            summary.state_end.get("t"), summary.state_end.get("i"), len(collections),
            sum(c.get("documents", 0) for c in collections if isinstance(c, dict))))
    if summary.warnings:
        w("warnings: %d\n" % summary._warned)
        for text in summary.warnings:
            w("  %s\n" % text)


SKIPPABLE_MAGIC = 0x184D2A5E
SUMMARY_TAG = b"MTSUMRY1"
MAX_SUMMARY_FRAME = 1 << 20


def read_file_summary(path):
    """The summary frame a finished capture ends with ("Summary" in the spec): its JSON object, or
    None when the file has none or it does not check out."""
    size = os.path.getsize(path)
    if size < 24:
        return None
    with open(path, "rb") as fh:
        fh.seek(size - 12)
        length, tag = struct.unpack("<I8s", fh.read(12))
        if tag != SUMMARY_TAG or not 24 <= length <= min(size, MAX_SUMMARY_FRAME):
            return None
        fh.seek(size - length)
        frame = fh.read(length)
    magic, content = struct.unpack_from("<II", frame, 0)
    if magic != SKIPPABLE_MAGIC or content != length - 8:
        return None
    body = frame[8:length - 16]
    (crc,) = struct.unpack_from("<I", frame, length - 16)
    if crc != crc32c(body):
        return None
    try:
        summary = json.loads(body.decode("utf-8"))
    except ValueError:
        return None
    return summary if isinstance(summary, dict) else None


def status_line(reader):
    if reader.problem is None:
        return "status: complete"
    return "status: %s" % reader.problem


# --------------------------------------------------------------------------------------------------
# Self-test: synthetic captures written from the spec, read back whole, cut, and damaged.

def encode_record(kind, conn_id, ts_ns, payload):
    body = struct.pack("<BQQ", kind, conn_id, ts_ns) + payload
    return struct.pack("<I", len(body)) + body + struct.pack("<I", crc32c(body))


def encode_header(metadata, version=FORMAT_VERSION, magic=MAGIC):
    meta = json.dumps(metadata).encode("utf-8")
    return magic + struct.pack("<HI", version, len(meta)) + meta


def _bson_cstring_doc(pairs):
    """A tiny BSON encoder for the self-test (strings, int32, double, nested docs)."""
    out = b""
    for key, value in pairs:
        name = key.encode() + b"\x00"
        if isinstance(value, str):
            raw = value.encode() + b"\x00"
            out += b"\x02" + name + struct.pack("<i", len(raw)) + raw
        elif isinstance(value, bool):
            out += b"\x08" + name + (b"\x01" if value else b"\x00")
        elif isinstance(value, int):
            out += b"\x10" + name + struct.pack("<i", value)
        elif isinstance(value, float):
            out += b"\x01" + name + struct.pack("<d", value)
        elif isinstance(value, list):
            out += b"\x03" + name + _bson_cstring_doc(value)
        else:
            raise TypeError(value)
    return struct.pack("<i", len(out) + 5) + out + b"\x00"


def _op_msg(request_id, response_to, doc, flags=0, sequence=None):
    body = struct.pack("<I", flags) + b"\x00" + doc
    if sequence is not None:
        identifier, docs = sequence
        seq = identifier.encode() + b"\x00" + b"".join(docs)
        body += b"\x01" + struct.pack("<i", len(seq) + 4) + seq
    return struct.pack("<iiii", 16 + len(body), request_id, response_to, OP_MSG) + body


def _op_query(request_id, namespace, doc):
    body = struct.pack("<i", 0) + namespace.encode() + b"\x00" + struct.pack("<ii", 0, -1) + doc
    return struct.pack("<iiii", 16 + len(body), request_id, 0, OP_QUERY) + body


def _op_reply(request_id, response_to, doc):
    body = struct.pack("<iqii", 0, 0, 0, 1) + doc
    return struct.pack("<iiii", 16 + len(body), request_id, response_to, OP_REPLY) + body


def _op_compressed_zlib(message):
    _, request_id, response_to, original = struct.unpack_from("<iiii", message, 0)
    inner = message[16:]
    body = struct.pack("<iiB", original, len(inner), 2) + zlib.compress(inner)
    return struct.pack("<iiii", 16 + len(body), request_id, response_to, OP_COMPRESSED) + body


def synthetic_records(start_ns=1_700_000_000_000_000_000):
    """(kind, conn_id, ts_ns, payload) tuples covering every kind, several opcodes and an unknown kind."""
    ts = [start_ns]

    def tick():
        ts[0] += 1000
        return ts[0]

    j = lambda obj: json.dumps(obj).encode()  # noqa: E731
    hello = _bson_cstring_doc([("isMaster", 1), ("helloOk", True), ("client", [
        ("driver", [("name", "synthetic"), ("version", "1.0")]), ("application", [("name", "selftest")])]),
        ("$db", "admin")])
    client_doc = _bson_cstring_doc([("driver", [("name", "synthetic"), ("version", "1.0")]),
                                    ("application", [("name", "selftest")])])
    ok = _bson_cstring_doc([("ok", 1.0)])
    insert = _bson_cstring_doc([("insert", "c"), ("ordered", True), ("$db", "test")])
    docs = [_bson_cstring_doc([("_id", i), ("x", "y" * i)]) for i in range(3)]
    records = [
        (1, 1, tick(), j({"client": "127.0.0.1:50312", "upstream": "127.0.0.1:27017"})),
        (3, 1, tick(), _op_query(1, "admin.$cmd", hello)),
        (5, 1, tick(), client_doc),
        (4, 1, tick(), _op_reply(2, 1, ok)),
        (3, 1, tick(), _op_msg(3, 0, insert, sequence=("documents", docs))),
        (4, 1, tick(), _op_msg(4, 3, ok)),
        (1, 2, tick(), j({"client": "127.0.0.1:50313", "upstream": "127.0.0.1:27017"})),
        (3, 2, tick(), _op_compressed_zlib(_op_msg(5, 0, insert, flags=2))),  # moreToCome, no reply
        (99, 0, tick(), b"a record kind from the future"),
        (3, 2, tick(), struct.pack("<iiii", 20, 6, 0, 4242) + b"\x00" * 4),  # unknown opcode
        (4, 2, tick(), _op_msg(7, 6, ok)),
        (6, 0, tick(), j({"dropped_messages": 2, "dropped_bytes": 300, "reason": "synthetic"})),
        (2, 2, tick(), j({"side": "client", "reason": "eof"})),
        (2, 1, tick(), j({"side": "upstream", "reason": "reset"})),
        (7, 0, tick(), j({"connections": 2, "messages": 8, "wire_bytes": 1000, "dropped_messages": 2})),
    ]
    return start_ns, records


def _compress_frames(chunks, backend):
    """Each chunk as its own zstd frame, concatenated (a valid multi-frame stream)."""
    out = b""
    for chunk in chunks:
        if backend == "zstandard":
            import zstandard

            out += zstandard.ZstdCompressor().compress(chunk)
        elif backend == "zstd-command":
            out += subprocess.run(["zstd", "-q", "-c"], input=chunk, stdout=subprocess.PIPE, check=True).stdout
        else:
            out += _zstd_module()[1].compress(chunk)
    return out


def _compress_flushed(chunks, backend):
    """One zstd frame with a block flush after every chunk, as the writer does once a second.

    Returns (compressed, flush_points): flush_points[i] is the compressed length after chunk i."""
    flush_points = []
    out = b""
    if backend == "zstandard":
        import zstandard

        compressor = zstandard.ZstdCompressor().compressobj()
        for chunk in chunks:
            out += compressor.compress(chunk) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            flush_points.append(len(out))
        out += compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    else:
        module = _zstd_module()[1]
        compressor = module.ZstdCompressor()
        for chunk in chunks:
            out += compressor.compress(chunk, module.ZstdCompressor.FLUSH_BLOCK)
            flush_points.append(len(out))
        out += compressor.flush(module.ZstdCompressor.FLUSH_FRAME)
    return out, flush_points


def self_test(verbose=False):
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)
            print("FAIL: %s" % what)
        elif verbose:
            print("ok: %s" % what)

    # CRC-32C test vectors (RFC 3720 appendix B.4 and the usual check value).
    check(crc32c(b"") == 0, "crc32c of nothing")
    check(crc32c(b"123456789") == 0xE3069283, "crc32c check value")
    check(crc32c(b"\x00" * 32) == 0x8A9136AA, "crc32c 32 zero bytes")
    check(crc32c(b"\xff" * 32) == 0x62A8AB43, "crc32c 32 0xff bytes")
    check(crc32c(bytes(range(32))) == 0x46DD794E, "crc32c incrementing bytes")
    check(crc32c(b"56789", crc32c(b"1234")) == 0xE3069283, "crc32c continues")

    start_ns, records = synthetic_records()
    metadata = {"format_version": 1, "mongotape_version": "selftest", "start_unix_ns": start_ns,
                "start_time": "2023-11-14T22:13:20Z", "upstream": "127.0.0.1:27017",
                "listen": "127.0.0.1:27018", "host": "selftest", "a_future_key": [1, 2]}
    header = encode_header(metadata)
    encoded = [encode_record(*r) for r in records]
    raw = header + b"".join(encoded)
    offsets = []
    at = len(header)
    for blob in encoded:
        offsets.append(at)
        at += len(blob)

    backends = available_backends()
    check(bool(backends), "a zstd backend is available")
    workdir = tempfile.mkdtemp(prefix="read_capture_selftest_")
    path = os.path.join(workdir, "t.mtape")

    def write(data):
        with open(path, "wb") as fh:
            fh.write(data)

    def read_all(data, backend):
        write(data)
        got = []
        reader, summary = read(path, backend, got.append)
        return reader, summary, got

    def same_prefix(got):
        return all((g.kind, g.conn_id, g.ts_ns, g.payload) == records[i] for i, g in enumerate(got))

    try:
        for backend in backends:
            tag = "[%s] " % backend
            compress_backend = backend if backend != "zstd-command" or not _zstd_module()[0] else _zstd_module()[0]

            # The whole capture, split in several frames.
            stream = _compress_frames([raw[:100], raw[100:400], raw[400:]], compress_backend)
            reader, summary, got = read_all(stream, backend)
            check(reader.problem is None, tag + "complete capture reads cleanly (%s)" % reader.problem)
            check(reader.metadata == metadata, tag + "metadata round-trips")
            check(len(got) == len(records) and same_prefix(got), tag + "every record round-trips, unknown kind included")
            check(summary.by_kind.get("request") == 4 and summary.by_kind.get("reply") == 3, tag + "counts by kind")
            check(summary.by_kind.get("unknown(99)") == 1, tag + "unknown kind counted and skipped")
            check(summary.connections[1]["requests"] == 2 and summary.connections[2]["replies"] == 1,
                  tag + "per-connection counts")
            check(summary.opcodes["request"] == {"OP_QUERY": 1, "OP_MSG": 1, "OP_COMPRESSED": 1, "opcode(4242)": 1},
                  tag + "request opcodes %s" % summary.opcodes["request"])
            check(summary.compressed_inner == {"request OP_MSG via zlib": 1}, tag + "OP_COMPRESSED inner opcode")
            check(not summary.warnings, tag + "no warnings on a valid capture: %s" % summary.warnings)
            check(summary.end is not None and summary.gaps["dropped_messages"] == 2, tag + "end and gap records")
            lines = [describe_record(r, start_ns, True) for r in got]
            check(any("cmd=insert" in line and "seq(documents x3)" in line for line in lines),
                  tag + "OP_MSG described")
            check(any("| flags=moreToCome cmd=insert" in line for line in lines), tag + "OP_COMPRESSED described")

            # Cut the uncompressed stream everywhere; recompress; the readable prefix comes back.
            cut_points = sorted(set(range(0, len(header) + 40)) | set(range(len(header), len(raw), 7))
                                | set(offsets) | {len(raw) - 1})
            if backend == "zstd-command":
                cut_points = cut_points[::9] + offsets  # a process per cut: keep it quick
            for cut in cut_points:
                reader, _, got = read_all(_compress_frames([raw[:cut]], compress_backend), backend)
                whole = [i for i, o in enumerate(offsets) if o + len(encoded[i]) <= cut]
                ok = (reader.problem is not None and reader.problem.kind == "truncated"
                      and len(got) == len(whole) and same_prefix(got))
                if cut >= len(header):
                    expected_offset = offsets[len(whole)] if len(whole) < len(offsets) else len(raw)
                    ok = ok and reader.problem.offset == expected_offset
                check(ok, tag + "cut at uncompressed byte %d: %d records, %s" % (cut, len(got), reader.problem))

            # Cut the compressed stream everywhere (one frame, flushed after every record).
            if backend != "zstd-command" or _zstd_module()[0]:
                flushed, flush_points = _compress_flushed([header] + encoded, compress_backend)
                step = 1 if backend != "zstd-command" else 11
                for cut in range(0, len(flushed), step):
                    reader, _, got = read_all(flushed[:cut], backend)
                    flushed_records = sum(1 for p in flush_points[1:] if p <= cut)
                    ok = (reader.problem is not None and reader.problem.kind in ("truncated", "not_capture")
                          and len(got) >= flushed_records and same_prefix(got))
                    check(ok, tag + "cut at compressed byte %d: %d records (>= %d flushed), %s" % (
                        cut, len(got), flushed_records, reader.problem))

            # A flipped byte in each record: corrupt at that record, the ones before returned.
            for index, offset in enumerate(offsets):
                damaged = bytearray(raw)
                damaged[offset + len(encoded[index]) - 5] ^= 0x40  # last payload byte
                reader, _, got = read_all(_compress_frames([bytes(damaged)], compress_backend), backend)
                check(reader.problem is not None and reader.problem.kind == "corrupt"
                      and reader.problem.offset == offset and len(got) == index and same_prefix(got),
                      tag + "flipped byte in record %d: %s" % (index, reader.problem))

            # Record lengths out of bounds.
            for bad_len in (0, 16, MAX_RECORD_LEN + 1, 0xFFFFFFFF):
                damaged = bytearray(raw)
                struct.pack_into("<I", damaged, offsets[3], bad_len)
                reader, _, got = read_all(_compress_frames([bytes(damaged)], compress_backend), backend)
                check(reader.problem is not None and reader.problem.kind == "corrupt"
                      and reader.problem.offset == offsets[3] and len(got) == 3,
                      tag + "record length %d: %s" % (bad_len, reader.problem))

            # Not a capture.
            for label, data in (
                    ("bad magic", encode_header(metadata, magic=b"\x89MTAPX\r\n") + b"".join(encoded)),
                    ("version 2", encode_header(metadata, version=2) + b"".join(encoded)),
                    ("pcap", b"\xd4\xc3\xb2\xa1" + b"\x00" * 40)):
                reader, _, got = read_all(_compress_frames([data], compress_backend), backend)
                check(reader.problem is not None and reader.problem.kind == "not_capture" and not got,
                      tag + "%s is not a capture: %s" % (label, reader.problem))
            reader, _, got = read_all(raw, backend)  # uncompressed
            check(reader.problem is not None and reader.problem.kind == "not_capture",
                  tag + "an uncompressed stream is not a capture: %s" % reader.problem)
            reader, _, got = read_all(_compress_frames([encode_header({"a": 1})[:-3]], compress_backend), backend)
            check(reader.problem is not None and reader.problem.kind == "truncated", tag + "metadata cut short")

            # Damaged zstd data: reported, never a crash.
            stream = _compress_frames([raw], compress_backend)
            for position in range(4, len(stream), max(1, len(stream) // 40)):
                damaged = bytearray(stream)
                damaged[position] ^= 0xFF
                try:
                    reader, _, got = read_all(bytes(damaged), backend)
                    fine = same_prefix(got) and (reader.problem is not None or len(got) == len(records))
                    check(fine, tag + "damaged zstd byte %d: %s" % (position, reader.problem))
                except Exception as err:  # noqa: BLE001
                    check(False, tag + "damaged zstd byte %d raised %r" % (position, err))

        # The command line end to end, on the whole capture.
        write(_compress_frames([raw], backends[0]))
        for flags, code in (([], 0), (["--records"], 0), (["--json"], 0)):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__)] + flags + [path],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            check(proc.returncode == code, "cli %s exits %d (got %d: %s)" % (flags, code, proc.returncode,
                                                                            proc.stderr.decode()[-300:]))
        summary_json = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "--json", path],
                                                 stdout=subprocess.PIPE).stdout)
        check(summary_json["status"]["complete"] and summary_json["records"] == len(records), "cli --json")
        write(_compress_frames([raw[: offsets[5] + 3]], backends[0]))
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--records", path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = proc.stdout.decode()
        check(proc.returncode == EXIT_TRUNCATED and out.count("\n@") + out.startswith("@") == 5
              and ("TRUNCATED at offset %d" % offsets[5]) in out,
              "cli reports truncation after printing the readable records")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print("self-test: %d synthetic records, zstd backends %s: %s" % (
        len(records), ", ".join(backends), "FAILED (%d)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


# --------------------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Read and check a mongotape capture (.mtape).")
    parser.add_argument("file", nargs="?", help="capture file")
    parser.add_argument("--records", action="store_true", help="one line per record")
    parser.add_argument("--docs", action="store_true", help="with --records: print BSON documents as extended JSON")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--zstd-backend", choices=["compression.zstd", "backports.zstd", "zstandard", "zstd-command"],
                        help="force a zstd decoder")
    parser.add_argument("--self-test", action="store_true", help="check this reader against synthetic captures")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    if args.self_test:
        return self_test(args.verbose)
    if not args.file:
        parser.error("FILE is required")
    if not os.path.exists(args.file):
        print("read_capture: %s: no such file" % args.file, file=sys.stderr)
        return 2

    out = sys.stdout
    start_ns = [None]
    reader_holder = []

    def on_record(record):
        if args.records:
            if start_ns[0] is None:
                start_ns[0] = (reader_holder[0].metadata or {}).get("start_unix_ns")
            out.write(describe_record(record, start_ns[0], args.docs) + "\n")

    reader = CaptureReader(args.file, args.zstd_backend)
    reader_holder.append(reader)
    summary = Summary()
    try:
        for record in reader.records():
            summary.add(record)
            on_record(record)
    except BrokenPipeError:
        return 0

    if args.json:
        result = summary.to_json()
        result.update({
            "file": args.file,
            "compressed_bytes": reader.source.compressed_bytes,
            "uncompressed_bytes": reader.uncompressed_bytes,
            "zstd_backend": reader.source.backend,
            "format_version": reader.version,
            "metadata": reader.metadata,
            "file_summary": read_file_summary(args.file),
            "status": {"complete": reader.problem is None,
                       "problem": reader.problem.to_json() if reader.problem else None},
        })
        out.write(json.dumps(result, sort_keys=True) + "\n")
    elif not args.records:
        print_summary(args.file, reader, summary, out)
    if not args.json:
        out.write(status_line(reader) + "\n")
    out.flush()
    if reader.problem:
        print("read_capture: %s: %s" % (args.file, reader.problem), file=sys.stderr)
        return reader.problem.exit_code()
    return EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader of our output (`| head`) went away: not an error of the capture.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
