"""docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one.

Documents follow the seed's PHP test ("members": uname/name/password/email, the large one adds a
2,235-character lorem-ipsum description from data/lorem.txt). N = 10000 * scale per size, acknowledged
insert_one. Mirrored in mongosh/docsize.js and php/docsize.php.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import Workload  # noqa: E402

with open(os.path.join(HERE, "..", "data", "lorem.txt"), encoding="utf-8") as f:
    LOREM = f.read().strip()


def member(i, large):
    doc = {"_id": i, "uname": "chuchuchu_%d" % i, "name": "\u891a\u891a\u891a",
           "password": "e10adc3949ba59abbe56e057f20f883e", "email": "[e-mail]"}
    if large:
        doc["description"] = LOREM
    return doc


def sizes(wl, collection):
    res = list(wl.db[collection].aggregate([
        {"$group": {"_id": None, "count": {"$sum": 1}, "bytes": {"$sum": {"$bsonSize": "$$ROOT"}},
                    "max": {"$max": {"$bsonSize": "$$ROOT"}}}}]))
    return {"count": res[0]["count"], "bytes": res[0]["bytes"], "max_bytes": res[0]["max"]}


def main():
    wl = Workload("docsize")
    n = wl.scaled(10000)
    wl.drop_database()
    for step, collection, large in (("insert_small", "members", False), ("insert_large", "members_large", True)):
        coll = wl.db[collection]
        t = wl.start(step)
        for i in range(n):
            coll.insert_one(member(i, large))
        seconds = wl.since(t)
        wl.emit(step, n, seconds, sizes(wl, collection))
    wl.close()


if __name__ == "__main__":
    main()
