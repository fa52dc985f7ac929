"""inserts: the replay benchmark's workload (tools/bench-replay).

N = 20000 * scale acknowledged insert_one of a 150-byte document (for five-digit i):
{_id: i, name: "item-<i>", value: (i * 7) % 13, pad: 94 times "x"}. Mirrored in mongosh/inserts.js,
php/inserts.php and examples/replay_baseline.rs (the pre-encoded client it is measured against).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Workload  # noqa: E402

PAD = "x" * 94


def main():
    wl = Workload("inserts")
    n = wl.scaled(20000)
    items = wl.db["items"]
    wl.drop_database()
    wl.extra_indexes(items)
    t = wl.start("insert")
    for i in range(n):
        items.insert_one({"_id": i, "name": "item-%d" % i, "value": (i * 7) % 13, "pad": PAD})
    seconds = wl.since(t)
    wl.emit("insert", n, seconds, {"count": wl.count("items")})
    wl.close()


if __name__ == "__main__":
    main()
