"""basic: a small mixed workload touching every common operation (~400 ops).

Mirrored in mongosh/basic.js and php/basic.php; --scale is ignored.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import W0, Workload  # noqa: E402


def item(i, kind):
    return {"_id": i, "kind": kind, "group": i % 5, "name": "item-%d" % i, "value": (i * 7) % 13}


def main():
    wl = Workload("basic")
    items = wl.db["items"]
    blogs = wl.db["blogs"]
    wl.drop_database()

    # Acknowledged single inserts (retryable writes: lsid + txnNumber).
    t = wl.start("insert_ack")
    n = 0
    for i in range(50):
        if items.insert_one(item(i, "ack")).acknowledged:
            n += 1
    wl.emit("insert_ack", 50, wl.since(t), {"inserted": n})

    # Unacknowledged inserts (OP_MSG moreToCome), then one acknowledged count as a barrier.
    t = wl.start("insert_w0")
    items_w0 = items.with_options(write_concern=W0)
    for i in range(50, 100):
        items_w0.insert_one(item(i, "w0"))
    count = wl.count("items", {"kind": "w0"})
    wl.emit("insert_w0", 51, wl.since(t), {"count": count})

    # $push comments into an embedded array, acknowledged.
    t = wl.start("push_ack")
    blogs.insert_one({"_id": 1, "title": "No Free Lunch", "author": "Alex", "comments": []})
    matched = modified = 0
    for k in range(20):
        r = blogs.update_one({"_id": 1}, {"$push": {"comments": {"who": "user-%d" % k, "comment": "comment %d" % k}}})
        matched += r.matched_count
        modified += r.modified_count
    wl.emit("push_ack", 21, wl.since(t), {"matched": matched, "modified": modified})

    # The same, unacknowledged; reading the blog back is the barrier.
    t = wl.start("push_w0")
    blogs_w0 = blogs.with_options(write_concern=W0)
    for k in range(20, 40):
        blogs_w0.update_one({"_id": 1}, {"$push": {"comments": {"who": "user-%d" % k, "comment": "comment %d" % k}}})
    blog = blogs.find_one({"_id": 1})
    wl.emit("push_w0", 21, wl.since(t), {"comments": len(blog["comments"]), "last": blog["comments"][-1]})

    # Find by a non-indexed field, index it, find again.
    t = wl.start("find_noindex")
    docs = list(items.find({"name": "item-42"}))
    wl.emit("find_noindex", 1, wl.since(t), docs)

    t = wl.start("create_index")
    name = items.create_index([("name", 1)])
    wl.emit("create_index", 1, wl.since(t), name)

    t = wl.start("find_index")
    docs = list(items.find({"name": "item-42"}))
    wl.emit("find_index", 1, wl.since(t), docs)

    # A cursor over 100 documents in batches of 10 (find + getMore).
    t = wl.start("find_batches")
    ids = [d["_id"] for d in items.find({}).sort("_id", 1).batch_size(10)]
    wl.emit("find_batches", 1, wl.since(t), {"ids": ids})

    t = wl.start("update_many")
    r = items.update_many({"group": 3}, {"$set": {"flag": True}})
    wl.emit("update_many", 1, wl.since(t), {"matched": r.matched_count, "modified": r.modified_count})

    t = wl.start("delete_one")
    r = items.delete_one({"_id": 7})
    wl.emit("delete_one", 1, wl.since(t), {"deleted": r.deleted_count})

    t = wl.start("delete_many")
    r = items.delete_many({"kind": "w0", "group": 1})
    wl.emit("delete_many", 1, wl.since(t), {"deleted": r.deleted_count})

    t = wl.start("counts")
    names = sorted(wl.db.list_collection_names())
    counts = {c: wl.count(c) for c in names}
    wl.emit("counts", 1 + len(names), wl.since(t), counts)
    wl.close()


if __name__ == "__main__":
    main()
