// writeconcern (seed 002): the same ~300-byte document inserted with w:0, w:1 and {w:1, j:true},
// then with three secondary indexes; N = 5000 * scale per step; mirrors pymongo/writeconcern.py.
// The w:0 inserts are `insert` commands with writeConcern {w: 0} (common.hpp): the server answers
// each, so insert_w0 costs a round trip per write here, as with the Rust driver.
#include "common.hpp"

using namespace wl;

static const long long TIME_MS = 1490693705779LL;  // 2017-03-28T09:35:05.779Z

static BSONObj activity(long i) {
    BSONObjBuilder doc;
    doc.append("_id", static_cast<int>(i));
    doc.append("Aid", "56aacfd4d4307006200d0bac");
    doc.append("Cid", 111);
    doc.append("At", "56aacfd4d4307006200d0bac");
    doc.appendDate("Time", mongo::Date_t(TIME_MS));
    doc.appendNull("EvtN");
    doc.appendNull("Evt");
    doc.append("As", 0);
    doc.append("Mis", BSON("Mid" << "e3196ec3-b624-4b11-a5e7-df7c4400ba75" << "Mt" << "asdf" << "Ms" << 1 << "Filter"
                                 << BSON_ARRAY(BSON("Fs" << true << "Exp" << "Evt.Amount>0" << "Pro" << "GetInfo"))
                                 << "Rew" << BSON_ARRAY(BSON("Rid" << "123" << "Ra" << "" << "Rs" << 0))));
    return doc.obj();
}

enum Concern { W0, W1, J1 };

static void inserts(Workload& w, const std::string& step, const std::string& coll, Concern wc, long n) {
    mongo::WriteConcern w1 = mongo::WriteConcern().nodes(1);
    mongo::WriteConcern j1 = mongo::WriteConcern().nodes(1).journal(true);
    Started t = w.start(step);
    for (long i = 0; i < n; i++) {
        if (wc == W0) {
            w.insert_w0(coll, activity(i));
        } else {
            w.insert(coll, activity(i), wc == W1 ? &w1 : &j1);
        }
    }
    long ops = n;
    if (wc == W0) {
        w.count(coll);  // barrier: all w:0 inserts have been applied
        ops += 1;
    }
    double seconds = w.since(t);
    std::vector<BSONObj> last =
        w.find(coll, BSON("_id" << static_cast<int>(n - 1)), BSONObj(), BSON("Time" << 0), 1);
    w.emit(step, ops, seconds,
           "{\"count\":" + std::to_string(w.count(coll)) + ",\"last\":" + (last.empty() ? "null" : json(last[0])) +
               "}");
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("writeconcern", argc, argv);
        long n = w.scaled(5000);
        w.drop_database();
        inserts(w, "insert_w0", "wc_w0", W0, n);
        inserts(w, "insert_w1", "wc_w1", W1, n);
        inserts(w, "insert_j", "wc_j", J1, n);
        Started t = w.start("create_indexes");
        std::vector<std::string> names;
        for (const char* key : {"Aid", "Cid", "Mis.Mid"}) names.push_back(w.create_index("wc_indexed", BSON(key << 1)));
        std::sort(names.begin(), names.end());
        std::string list = "[";
        for (size_t i = 0; i < names.size(); i++) list += (i ? "," : "") + json_str(names[i]);
        w.emit("create_indexes", 3, w.since(t), list + "]");
        inserts(w, "insert_w1_indexed", "wc_indexed", W1, n);
        w.close();
    });
}
