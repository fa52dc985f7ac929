"""repeatable: writes that `mongotape replay --repeat` applies again (tests/replay_repeat.rs).

Inserts without an explicit _id (the driver gives each document an ObjectId): N acknowledged, N w:0,
M in one insert_many; K $push into an embedded array through an upsert, acknowledged then w:0; K $inc
of an upserted counter; one update_many ($inc on the acknowledged inserts); one delete_many (the
first N/4 of the w:0 inserts). N = 100, M = 50, K = 20 at scale 1.0. Results are counts only.
Mirrored in mongosh/repeatable.js and php/repeatable.php.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import W0, Workload  # noqa: E402


def main():
    wl = Workload("repeatable")
    n, m, k = wl.scaled(100, 4), wl.scaled(50), wl.scaled(20)
    docs, blogs = wl.db["docs"], wl.db["blogs"]
    docs_w0, blogs_w0 = docs.with_options(write_concern=W0), blogs.with_options(write_concern=W0)
    wl.drop_database()

    t = wl.start("insert_ack")
    for i in range(n):
        docs.insert_one({"kind": "ack", "i": i})
    wl.emit("insert_ack", n, wl.since(t), {"count": wl.count("docs", {"kind": "ack"})})

    t = wl.start("insert_w0")
    for i in range(n):
        docs_w0.insert_one({"kind": "w0", "i": i})
    count = wl.count("docs", {"kind": "w0"})
    wl.emit("insert_w0", n + 1, wl.since(t), {"count": count})

    t = wl.start("insert_many")
    docs.insert_many([{"kind": "many", "i": i} for i in range(m)])
    wl.emit("insert_many", 1, wl.since(t), {"count": wl.count("docs", {"kind": "many"})})

    t = wl.start("push_ack")
    for j in range(k):
        blogs.update_one({"_id": "blog"}, {"$push": {"comments": {"who": "user-%d" % j}}}, upsert=True)
    seconds = wl.since(t)
    wl.emit("push_ack", k, seconds, {"comments": len(blogs.find_one({"_id": "blog"})["comments"])})

    t = wl.start("push_w0")
    for j in range(k):
        blogs_w0.update_one({"_id": "blog"}, {"$push": {"comments": {"who": "user-%d" % j}}}, upsert=True)
    comments = len(blogs.find_one({"_id": "blog"})["comments"])
    wl.emit("push_w0", k + 1, wl.since(t), {"comments": comments})

    t = wl.start("inc")
    for j in range(k):
        blogs.update_one({"_id": "counter"}, {"$inc": {"n": 1}}, upsert=True)
    seconds = wl.since(t)
    wl.emit("inc", k, seconds, {"n": blogs.find_one({"_id": "counter"})["n"]})

    t = wl.start("update_many")
    r = docs.update_many({"kind": "ack"}, {"$inc": {"touched": 1}})
    wl.emit("update_many", 1, wl.since(t), {"matched": r.matched_count, "modified": r.modified_count})

    t = wl.start("delete_many")
    r = docs.delete_many({"kind": "w0", "i": {"$lt": n // 4}})
    wl.emit("delete_many", 1, wl.since(t), {"deleted": r.deleted_count})
    wl.close()


if __name__ == "__main__":
    main()
