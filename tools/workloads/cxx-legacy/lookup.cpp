// lookup (seed 004): blog posts with string _ids looked up at random by a non-_id field (author),
// then everything removed. N = 10000 * scale posts, M = 2000 * scale lookups of author
// str(x) + "Mike" with x = 1 + rand(N) (Park-Miller, seed 5000000); mirrors pymongo/lookup.py. Under
// MONGOTAPE_WORKLOAD_TALLY=1 a failed insert, lookup or counter update is counted, not fatal
// (Workload::attempt), and the `views` step runs (pymongo/lookup.py).
#include "common.hpp"

using namespace wl;

static const long long SEED = 5000000;
static const long long EPOCH_S = 1356998400;  // 2013-01-01T00:00:00Z

static void lookups(Workload& w, const std::string& step, long n, long m) {
    Lcg rng(SEED);
    long found = 0;
    std::string last = "null";
    Started t = w.start(step);
    for (long k = 0; k < m; k++) {
        long long x = 1 + rng.below(n);
        std::vector<BSONObj> doc;
        w.attempt([&] {
            doc = w.find("userinfo", BSON("author" << (std::to_string(x) + "Mike")), BSONObj(), BSON("date" << 0), 1);
        });
        if (!doc.empty()) {
            found++;
            last = json(doc[0]);
        }
    }
    double seconds = w.since(t);
    w.emit(step, m, seconds,
           "{\"lookups\":" + std::to_string(m) + ",\"found\":" + std::to_string(found) + ",\"last\":" + last + "}");
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("lookup", argc, argv);
        long n = w.scaled(10000, 2);
        long m = w.scaled(2000, 10);
        w.drop_database();
        Started t = w.start("insert");
        for (long x = 0; x < n; x++) {
            std::string id = std::to_string(x);
            BSONObj post = BSON("_id" << id << "author" << (id + "Mike") << "text" << "My first blog post!"
                                      << "tags" << BSON_ARRAY("mongodb" << "python" << "pymongo") << "date"
                                      << mongo::Date_t((EPOCH_S + x) * 1000));
            w.attempt([&] { w.insert("userinfo", post); });
        }
        double seconds = w.since(t);
        w.emit("insert", n, seconds, "{\"count\":" + std::to_string(w.count("userinfo")) + "}");
        lookups(w, "lookup_noindex", n, m / 10);
        t = w.start("create_index");
        std::string name = w.create_index("userinfo", BSON("author" << 1));
        w.emit("create_index", 1, w.since(t), json_str(name));
        lookups(w, "lookup_index", n, m);
        if (w.tallying()) {
            long v = w.scaled(1000, 10);
            t = w.start("views");
            for (long k = 0; k < v; k++) {
                w.attempt([&] { w.update("counters", BSON("_id" << "views"), BSON("$inc" << BSON("n" << 1)), false, true); });
            }
            seconds = w.since(t);
            std::vector<BSONObj> counter = w.find("counters", BSON("_id" << "views"));
            long views = counter.empty() ? 0 : counter[0]["n"].numberLong();
            w.emit("views", v, seconds, "{\"n\":" + std::to_string(views) + "}");
        }
        t = w.start("remove_all");
        long before = w.count("userinfo");
        mongo::WriteResult r = w.remove("userinfo", BSONObj(), false);
        long after = w.count("userinfo");
        w.emit("remove_all", 3, w.since(t),
               "{\"before\":" + std::to_string(before) + ",\"deleted\":" + std::to_string(r.nRemoved()) +
                   ",\"after\":" + std::to_string(after) + "}");
        w.close();
    });
}
