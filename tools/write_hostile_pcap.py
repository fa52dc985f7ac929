#!/usr/bin/env python3
"""Writes hostile pcap files for mongotape's TCP reassembly, independently of its Rust code: a
classic pcap (microsecond timestamps, link type 101 raw IP), IPv4 + TCP headers built here, client
10.0.x.y:PORT to server 10.1.0.1:27017, one millisecond between packets.

Kinds (sizes in MB of payload):

  boundary  one connection: a SYN pair, 100 bytes of garbage (the stream out of step), then
            segments of --segment bytes each beginning with a plausible OP_MSG header that
            declares a 16 MiB message (flags 0, the rest zeros), for --mb MB. The search for a
            message boundary sees a candidate in every segment.
  flows     --flows connections of one packet each: the first 100 bytes of a 1,000-byte OP_MSG,
            no SYN, no FIN.
  unfinished  --flows connections, each sending the header of a message of --mb MB and all of
            it but its last byte, interleaved in --segment-byte segments; never finished.
  hole      --flows connections, each: a SYN pair, then one byte missing, then --mb MB sent
            behind the hole (held, waiting for it), interleaved.
  forged    one connection: a SYN pair, a ping, a 6-byte segment 2^30 bytes ahead (nothing
            acknowledges it, nothing follows it), a second ping. Nothing was lost.
  tls       --flows connections speaking TLS to port 27017: a ClientHello, the server's
            answer, then --segment-byte application data records both ways, for --mb MB each.
  origlen   one connection: a SYN pair, two pings, the first one's packet record claiming an
            orig_len of 0xFFFFFFFF (its IP header says it was captured whole). Nothing was lost.
  opcommand  one connection as a 3.2-4.0 shell spoke: a SYN pair, then OP_COMMAND (2010)
            `isMaster` on admin and `find` on shop.orders ({status: "A"}), each answered by an
            OP_COMMANDREPLY (2011). Bodies as the protocol's documentation lays them out:
            database, command name, metadata, command; reply, metadata (pymongo's `bson`).

Usage: python3 tools/write_hostile_pcap.py KIND OUT.pcap [--mb N] [--flows N] [--segment N]
"""

import argparse
import struct
import sys

MIB = 1 << 20
SERVER = (bytes([10, 1, 0, 1]), 27017)
OP_MSG = 2013


def client(i):
    """The i-th client end: a distinct address and port per connection."""
    return bytes([10, 0, (i >> 8) & 0xFF, i & 0xFF]), 1024 + (i >> 16)


def tcp_packet(src, dst, seq, flags, payload, ack=0):
    total = 20 + 20 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src[0], dst[0])
    tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack, 0x50, flags, 0xFFFF, 0, 0)
    return ip + tcp + payload


SYN, ACK, PSH = 0x02, 0x10, 0x08


class Writer:
    def __init__(self, out):
        self.out = out
        self.ts_us = 1_700_000_000 * 1_000_000
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))

    def packet(self, data, orig_len=None):
        self.ts_us += 1000
        sec, usec = divmod(self.ts_us, 1_000_000)
        orig = len(data) if orig_len is None else orig_len
        self.out.write(struct.pack("<IIII", sec, usec, len(data), orig))
        self.out.write(data)


def header(length, request_id):
    return struct.pack("<iiii", length, request_id, 0, OP_MSG)


def handshake(w, c, isn=1000, server_isn=5000):
    w.packet(tcp_packet(c, SERVER, isn, SYN, b""))
    w.packet(tcp_packet(SERVER, c, server_isn, SYN | ACK, b"", ack=isn + 1))


def boundary(w, args):
    c = client(1)
    handshake(w, c)
    seq = 1001
    garbage = b"\xff" * 100
    w.packet(tcp_packet(c, SERVER, seq, PSH | ACK, garbage))
    seq += len(garbage)
    body = header(16 * MIB, 0) + b"\0\0\0\0"  # flags 0
    filler = b"\0" * (args.segment - len(body))
    for i in range(int(args.mb * MIB) // args.segment):
        payload = header(16 * MIB, i + 1) + b"\0\0\0\0" + filler
        w.packet(tcp_packet(c, SERVER, seq, PSH | ACK, payload))
        seq += len(payload)


def flows(w, args):
    message = header(1000, 1) + b"\0\0\0\0" + b"\0" + struct.pack("<i", 975) + b"\x08a\0\x01" * 10
    for i in range(args.flows):
        w.packet(tcp_packet(client(i), SERVER, 1000, PSH | ACK, message[:100]))


def interleaved(w, args, first_gap):
    """Each flow sends --mb MB, in turns; `first_gap` bytes of each are never sent."""
    total = int(args.mb * MIB)
    ends = [client(i) for i in range(args.flows)]
    for c in ends:
        handshake(w, c)
    chunk = b"\0" * args.segment
    sent = first_gap
    start = header(total + first_gap + 1, 7) + b"\0\0\0\0" if first_gap == 0 else b""
    while sent < total:
        for c in ends:
            payload = start if sent == first_gap and start else chunk
            payload = payload[: total - sent]
            w.packet(tcp_packet(c, SERVER, 1001 + sent, PSH | ACK, payload))
        sent += len(payload)


def ping(request_id):
    """A whole OP_MSG `{ping: 1, $db: "admin"}`."""
    elements = b"\x10ping\0" + struct.pack("<i", 1) + b"\x02$db\0" + struct.pack("<i", 6) + b"admin\0"
    doc = struct.pack("<i", 4 + len(elements) + 1) + elements + b"\0"
    body = b"\0\0\0\0" + b"\0" + doc
    return header(16 + len(body), request_id) + body


def two_pings(w, forged):
    c = client(1)
    handshake(w, c)
    first, second = ping(1), ping(2)
    w.packet(tcp_packet(c, SERVER, 1001, PSH | ACK, first), None if forged else 0xFFFFFFFF)
    if forged:
        w.packet(tcp_packet(c, SERVER, 1001 + (1 << 30), PSH | ACK, b"forged"))
    w.packet(tcp_packet(c, SERVER, 1001 + len(first), PSH | ACK, second))


def op_command(request_id, database, name, command):
    import bson
    body = database.encode() + b"\0" + name.encode() + b"\0" + bson.encode({}) + bson.encode(command)
    return struct.pack("<iiii", 16 + len(body), request_id, 0, 2010) + body


def op_command_reply(request_id, response_to, reply):
    import bson
    body = bson.encode(reply) + bson.encode({})
    return struct.pack("<iiii", 16 + len(body), request_id, response_to, 2011) + body


def op_commands(w):
    c = client(1)
    handshake(w, c)
    seq, server_seq = 1001, 5001
    exchanges = [
        ("admin", "isMaster", {"isMaster": 1}, {"ismaster": True, "maxWireVersion": 4, "ok": 1.0}),
        ("shop", "find", {"find": "orders", "filter": {"status": "A"}},
         {"cursor": {"id": 0, "ns": "shop.orders", "firstBatch": [{"_id": 1, "status": "A"}]},
          "ok": 1.0}),
    ]
    for i, (db, name, command, reply) in enumerate(exchanges):
        request = op_command(i + 1, db, name, command)
        w.packet(tcp_packet(c, SERVER, seq, PSH | ACK, request))
        seq += len(request)
        answer = op_command_reply(100 + i, i + 1, reply)
        w.packet(tcp_packet(SERVER, c, server_seq, PSH | ACK, answer))
        server_seq += len(answer)


def tls(w, args):
    def record(kind, body):
        return struct.pack("!BHH", kind, 0x0303, len(body)) + body
    hello = record(0x16, b"\x01\x00\x01\xfc\x03\x03" + bytes(range(32)) + b"\0" * 470)
    answer = record(0x16, b"\x02\x00\x00\x76\x03\x03" + bytes(32) + b"\0" * 88)
    data = record(0x17, b"\xa5" * (args.segment - 5))
    for i in range(args.flows):
        c = client(i)
        handshake(w, c)
        seq, server_seq = 1001, 5001
        w.packet(tcp_packet(c, SERVER, seq, PSH | ACK, hello, ack=server_seq))
        seq += len(hello)
        w.packet(tcp_packet(SERVER, c, server_seq, PSH | ACK, answer, ack=seq))
        server_seq += len(answer)
        for _ in range(max(1, int(args.mb * MIB) // len(data))):
            w.packet(tcp_packet(c, SERVER, seq, PSH | ACK, data, ack=server_seq))
            seq += len(data)
            w.packet(tcp_packet(SERVER, c, server_seq, PSH | ACK, data, ack=seq))
            server_seq += len(data)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["boundary", "flows", "unfinished", "hole", "forged", "origlen", "tls",
                                      "opcommand"])
    p.add_argument("out")
    p.add_argument("--mb", type=float, default=22)
    p.add_argument("--flows", type=int, default=10)
    p.add_argument("--segment", type=int, default=1448)
    args = p.parse_args()
    if not 64 <= args.segment <= 65000:
        sys.exit("--segment must be between 64 and 65000")
    with open(args.out, "wb") as f:
        w = Writer(f)
        if args.kind == "boundary":
            boundary(w, args)
        elif args.kind == "flows":
            flows(w, args)
        elif args.kind == "unfinished":
            interleaved(w, args, 0)
        elif args.kind == "opcommand":
            op_commands(w)
        elif args.kind == "tls":
            tls(w, args)
        elif args.kind in ("forged", "origlen"):
            two_pings(w, args.kind == "forged")
        else:
            interleaved(w, args, 1)


if __name__ == "__main__":
    main()
