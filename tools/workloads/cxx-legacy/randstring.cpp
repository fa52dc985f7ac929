// randstring (seed 003, which measured this very driver): documents holding one random 26-letter
// string (NewsId), without and then with an index on it: insert N, find the last one by NewsId,
// delete it, delete all the rest. N = 10000 * scale; mirrors pymongo/randstring.py.
#include "common.hpp"

using namespace wl;

static const long long SEED = 20110725;

static void run_pass(Workload& w, const std::string& suffix, long n) {
    Lcg rng(SEED);
    std::string last;
    // The seed's loop: conn.insert("test.users", BSON("NewsId" << ar)), here with an explicit _id.
    Started t = w.start("insert_" + suffix);
    for (long i = 0; i < n; i++) {
        last = rng.letters(26);
        w.insert("users", BSON("_id" << static_cast<int>(i) << "NewsId" << last));
    }
    double seconds = w.since(t);
    w.emit("insert_" + suffix, n, seconds, "{\"count\":" + std::to_string(w.count("users")) + "}");

    t = w.start("find_" + suffix);
    std::vector<BSONObj> docs = w.find("users", BSON("NewsId" << last));
    w.emit("find_" + suffix, 1, w.since(t), json_docs(docs));

    t = w.start("delete_one_" + suffix);
    mongo::WriteResult r = w.remove("users", BSON("NewsId" << last), true);
    w.emit("delete_one_" + suffix, 1, w.since(t), "{\"deleted\":" + std::to_string(r.nRemoved()) + "}");

    t = w.start("delete_all_" + suffix);
    r = w.remove("users", BSONObj(), false);
    w.emit("delete_all_" + suffix, 1, w.since(t), "{\"deleted\":" + std::to_string(r.nRemoved()) + "}");
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("randstring", argc, argv);
        long n = w.scaled(10000, 2);
        w.drop_database();
        run_pass(w, "noindex", n);
        Started t = w.start("create_index");
        std::string name = w.create_index("users", BSON("NewsId" << 1));
        w.emit("create_index", 1, w.since(t), json_str(name));
        run_pass(w, "index", n);
        w.close();
    });
}
