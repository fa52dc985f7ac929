"""embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own collection.

For each write concern (w:0 first, then w:1, as in the seed), each layout (embedded, separate) and each
comments-per-blog size P in 1, 10, 100, 1000, 10000 (sizes above the total are skipped), a step stores
T = 10000 * scale comments in B = T // P blogs of P comments each.

A $push rewrites the whole blog document on the server, so building a blog of P comments one push at a
time costs O(P^2) (10,000 pushes into one blog take ~7 minutes on secantusd-rs). Only the last
K = min(P, 100) comments of each blog are therefore written one by one; the first P - K arrive in a
single write: embedded, inside the blog's insert; separate, as one insert_many. Both layouts thus send
B * (1 + K) writes for P >= 100 (and P >= 100 carries one write of up to 10 MB).
Mirrored in mongosh/embedded.js and php/embedded.php.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import W0, W1, Workload  # noqa: E402

PER_BLOG = (1, 10, 100, 1000, 10000)
PUSH_CAP = 100
COMMENT = "a" * 1000


def embedded(coll, blogs, per_blog, pushed):
    ops = 0
    for c in range(blogs):
        blog = {"_id": c, "title": "Mongodb Benchmark"}
        if per_blog > pushed:
            blog["comments"] = [{"comment": COMMENT} for _ in range(per_blog - pushed)]
        coll.insert_one(blog)
        for _ in range(pushed):
            coll.update_one({"_id": c}, {"$push": {"comments": {"comment": COMMENT}}})
        ops += 1 + pushed
    return ops


def separate(coll, blogs, per_blog, pushed):
    ops = 0
    for c in range(blogs):
        first = per_blog - pushed
        if first > 0:
            coll.insert_many([{"_id": c * per_blog + i, "blog": c, "comment": COMMENT} for i in range(first)])
            ops += 1
        for i in range(first, per_blog):
            coll.insert_one({"_id": c * per_blog + i, "blog": c, "comment": COMMENT})
        ops += pushed
    return ops


EMBEDDED_TOTALS = [{"$group": {"_id": None, "blogs": {"$sum": 1},
                               "comments": {"$sum": {"$size": {"$ifNull": ["$comments", []]}}}}}]
SEPARATE_TOTALS = [{"$group": {"_id": "$blog", "n": {"$sum": 1}}},
                   {"$group": {"_id": None, "blogs": {"$sum": 1}, "comments": {"$sum": "$n"}}}]


def main():
    wl = Workload("embedded")
    total = wl.scaled(10000)
    wl.drop_database()
    for ack, wc in (("w0", W0), ("w1", W1)):
        for layout in ("embedded", "separate"):
            name = "blog" if layout == "embedded" else "comments"
            for per_blog in PER_BLOG:
                if per_blog > total:
                    continue
                blogs = total // per_blog
                pushed = min(per_blog, PUSH_CAP)
                wl.db.drop_collection(name)
                coll = wl.db.get_collection(name, write_concern=wc)
                t = wl.start("%s_%d_%s" % (layout, per_blog, ack))
                write = embedded if layout == "embedded" else separate
                ops = write(coll, blogs, per_blog, pushed)
                if ack == "w0":
                    wl.count(name)  # barrier: all w:0 writes have been applied
                    ops += 1
                seconds = wl.since(t)
                res = list(wl.db[name].aggregate(EMBEDDED_TOTALS if layout == "embedded" else SEPARATE_TOTALS))
                wl.emit("%s_%d_%s" % (layout, per_blog, ack), ops, seconds,
                        {"blogs": res[0]["blogs"], "comments": res[0]["comments"]})
    wl.close()


if __name__ == "__main__":
    main()
