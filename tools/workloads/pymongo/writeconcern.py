"""writeconcern (seed 002): the same ~300-byte document inserted with w:0, w:1 and {w:1, j:true},
then with three secondary indexes (Aid, Cid, Mis.Mid) on top of _id.

N = 5000 * scale inserts per step, one by one. insert_w1 is the _id-only baseline for insert_w1_indexed.
Mirrored in mongosh/writeconcern.js and php/writeconcern.php.
"""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import J1, W0, W1, Workload  # noqa: E402

TIME = datetime.datetime(2017, 3, 28, 9, 35, 5, 779000, tzinfo=datetime.timezone.utc)


def activity(i):
    return {
        "_id": i,
        "Aid": "56aacfd4d4307006200d0bac",
        "Cid": 111,
        "At": "56aacfd4d4307006200d0bac",
        "Time": TIME,
        "EvtN": None,
        "Evt": None,
        "As": 0,
        "Mis": {
            "Mid": "e3196ec3-b624-4b11-a5e7-df7c4400ba75",
            "Mt": "asdf",
            "Ms": 1,
            "Filter": [{"Fs": True, "Exp": "Evt.Amount>0", "Pro": "GetInfo"}],
            "Rew": [{"Rid": "123", "Ra": "", "Rs": 0}],
        },
    }


def inserts(wl, step, collection, wc, n):
    coll = wl.db.get_collection(collection, write_concern=wc)
    t = wl.start(step)
    for i in range(n):
        coll.insert_one(activity(i))
    ops = n
    if wc is W0:
        wl.count(collection)  # barrier: all w:0 inserts have been applied
        ops += 1
    seconds = wl.since(t)
    last = wl.db[collection].find_one({"_id": n - 1}, {"Time": 0})
    wl.emit(step, ops, seconds, {"count": wl.count(collection), "last": last})


def main():
    wl = Workload("writeconcern")
    n = wl.scaled(5000)
    wl.drop_database()
    inserts(wl, "insert_w0", "wc_w0", W0, n)
    inserts(wl, "insert_w1", "wc_w1", W1, n)
    inserts(wl, "insert_j", "wc_j", J1, n)

    t = wl.start("create_indexes")
    coll = wl.db["wc_indexed"]
    names = [coll.create_index([(key, 1)]) for key in ("Aid", "Cid", "Mis.Mid")]
    wl.emit("create_indexes", 3, wl.since(t), sorted(names))
    inserts(wl, "insert_w1_indexed", "wc_indexed", W1, n)
    wl.close()


if __name__ == "__main__":
    main()
