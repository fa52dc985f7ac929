"""randstring (seed 003): documents holding one random 26-letter string (NewsId), without and then
with an index on it: insert N, find the last one by NewsId, delete it, delete all the rest.

N = 10000 * scale. Strings come from the shared Park-Miller generator (seed 20110725), re-seeded for the
indexed pass, so both passes and all three clients write the same strings.
Mirrored in mongosh/randstring.js and php/randstring.php.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Lcg, Workload  # noqa: E402

SEED = 20110725


def run_pass(wl, suffix, n):
    users = wl.db["users"]
    rng = Lcg(SEED)
    last = None
    t = wl.start("insert_" + suffix)
    for i in range(n):
        last = rng.letters(26)
        users.insert_one({"_id": i, "NewsId": last})
    wl.emit("insert_" + suffix, n, wl.since(t), {"count": wl.count("users")})

    t = wl.start("find_" + suffix)
    docs = list(users.find({"NewsId": last}))
    wl.emit("find_" + suffix, 1, wl.since(t), docs)

    t = wl.start("delete_one_" + suffix)
    r = users.delete_one({"NewsId": last})
    wl.emit("delete_one_" + suffix, 1, wl.since(t), {"deleted": r.deleted_count})

    t = wl.start("delete_all_" + suffix)
    r = users.delete_many({})
    wl.emit("delete_all_" + suffix, 1, wl.since(t), {"deleted": r.deleted_count})


def main():
    wl = Workload("randstring")
    n = wl.scaled(10000, minimum=2)
    wl.drop_database()
    run_pass(wl, "noindex", n)

    t = wl.start("create_index")
    name = wl.db["users"].create_index([("NewsId", 1)])
    wl.emit("create_index", 1, wl.since(t), name)
    run_pass(wl, "index", n)
    wl.close()


if __name__ == "__main__":
    main()
