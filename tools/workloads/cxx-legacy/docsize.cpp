// docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one with
// DBClientConnection::insert; N = 10000 * scale per size; mirrors pymongo/docsize.py.
#include "common.hpp"

using namespace wl;

static BSONObj member(long i, bool large, const std::string& lorem) {
    BSONObjBuilder doc;
    doc.append("_id", static_cast<int>(i));
    doc.append("uname", "chuchuchu_" + std::to_string(i));
    doc.append("name", "\xe8\xa4\x9a\xe8\xa4\x9a\xe8\xa4\x9a");  // U+891A three times, UTF-8
    doc.append("password", "e10adc3949ba59abbe56e057f20f883e");
    doc.append("email", "[e-mail]");
    if (large) doc.append("description", lorem);
    return doc.obj();
}

static std::string sizes(Workload& w, const std::string& coll) {
    BSONObj size = BSON("$bsonSize" << "$$ROOT");
    BSONObjBuilder fields;
    fields.appendNull("_id");
    fields.append("count", BSON("$sum" << 1));
    fields.append("bytes", BSON("$sum" << size));
    fields.append("max", BSON("$max" << size));
    BSONObj group = BSON("$group" << fields.obj());
    BSONObj reply = w.command(BSON("aggregate" << coll << "pipeline" << BSON_ARRAY(group) << "cursor" << BSONObj()));
    BSONObj res = reply["cursor"]["firstBatch"].Obj()["0"].Obj();
    return "{\"count\":" + std::to_string(res["count"].numberLong()) + ",\"bytes\":" +
           std::to_string(res["bytes"].numberLong()) + ",\"max_bytes\":" + std::to_string(res["max"].numberLong()) +
           "}";
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("docsize", argc, argv);
        long n = w.scaled(10000);
        const std::string lorem = data_file("lorem.txt");
        w.drop_database();
        const char* steps[][2] = {{"insert_small", "members"}, {"insert_large", "members_large"}};
        for (int k = 0; k < 2; k++) {
            Started t = w.start(steps[k][0]);
            for (long i = 0; i < n; i++) w.insert(steps[k][1], member(i, k == 1, lorem));
            double seconds = w.since(t);
            w.emit(steps[k][0], n, seconds, sizes(w, steps[k][1]));
        }
        w.close();
    });
}
