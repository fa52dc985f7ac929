"""lookup (seed 004): insert blog posts with string _ids, look them up at random by a non-_id field
(author), then remove everything, printing the count before and after as the seed does.

N = 10000 * scale posts, M = 2000 * scale lookups of author str(x)+"Mike" with x = 1 + rand(N) from the
shared Park-Miller generator (seed 5000000); like the seed's randint(1, N), x = N is not there.
Lookups run first without an index on author (M/10 of them: each is a collection scan), then with one.
Mirrored in mongosh/lookup.js and php/lookup.php.

Under MONGOTAPE_WORKLOAD_TALLY=1 (common.py) one more step, `views`, before remove_all: V = 1000 *
scale upserts {$inc: {n: 1}} of one counter ({_id: "views"} in `counters`), writes that a resend
applies twice; its result is the counter's value, V when each was applied once.
"""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Lcg, Workload  # noqa: E402

EPOCH = datetime.datetime(2013, 1, 1, tzinfo=datetime.timezone.utc)
SEED = 5000000


def lookups(wl, step, n, m):
    posts = wl.db["userinfo"]
    rng = Lcg(SEED)
    found = 0
    last = None
    t = wl.start(step)
    for _ in range(m):
        x = 1 + rng.below(n)
        doc = wl.attempt(lambda: posts.find_one({"author": "%dMike" % x}, {"date": 0}))
        if doc is not None:
            found += 1
            last = doc
    wl.emit(step, m, wl.since(t), {"lookups": m, "found": found, "last": last})


def main():
    wl = Workload("lookup")
    n = wl.scaled(10000, minimum=2)
    m = wl.scaled(2000, minimum=10)
    wl.drop_database()
    posts = wl.db["userinfo"]

    t = wl.start("insert")
    for x in range(n):
        doc = {"_id": str(x), "author": "%dMike" % x, "text": "My first blog post!",
               "tags": ["mongodb", "python", "pymongo"], "date": EPOCH + datetime.timedelta(seconds=x)}
        wl.attempt(lambda: posts.insert_one(doc))
    wl.emit("insert", n, wl.since(t), {"count": wl.count("userinfo")})

    lookups(wl, "lookup_noindex", n, m // 10)

    t = wl.start("create_index")
    name = posts.create_index([("author", 1)])
    wl.emit("create_index", 1, wl.since(t), name)

    lookups(wl, "lookup_index", n, m)

    if wl.tallying:
        v = wl.scaled(1000, minimum=10)
        counters = wl.db["counters"]
        t = wl.start("views")
        for _ in range(v):
            wl.attempt(lambda: counters.update_one({"_id": "views"}, {"$inc": {"n": 1}}, upsert=True))
        seconds = wl.since(t)
        counter = counters.find_one({"_id": "views"})
        wl.emit("views", v, seconds, {"n": counter["n"] if counter else 0})

    t = wl.start("remove_all")
    before = wl.count("userinfo")
    r = posts.delete_many({})
    after = wl.count("userinfo")
    wl.emit("remove_all", 3, wl.since(t), {"before": before, "deleted": r.deleted_count, "after": after})
    wl.close()


if __name__ == "__main__":
    main()
