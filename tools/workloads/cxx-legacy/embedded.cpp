// embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own
// collection, w:0 then w:1, P comments per blog in 1, 10, 100, 1000, 10000; the first P - 100 of a
// blog arrive in one write. Mirrors pymongo/embedded.py (see there for the why).
// w:0 writes are commands with writeConcern {w: 0} (common.hpp), answered by the server.
#include "common.hpp"

using namespace wl;

static const long PER_BLOG[] = {1, 10, 100, 1000, 10000};
static const long PUSH_CAP = 100;

struct Writer {
    Workload& w;
    std::string coll;
    bool w0;
    std::string comment = std::string(1000, 'a');

    void insert(const std::vector<BSONObj>& docs) {
        if (!w0) {
            w.conn().insert(w.ns(coll), docs);
            return;
        }
        BSONArrayBuilder array;
        for (const BSONObj& doc : docs) array.append(doc);
        w.command(BSON("insert" << coll << "documents" << array.arr() << "writeConcern" << BSON("w" << 0)));
    }
    void push(long c) {
        BSONObj q = BSON("_id" << static_cast<int>(c));
        BSONObj u = BSON("$push" << BSON("comments" << BSON("comment" << comment)));
        if (w0) {
            w.update_w0(coll, q, u);
        } else {
            w.update(coll, q, u, false);
        }
    }
    long embedded(long blogs, long per_blog, long pushed) {
        long ops = 0;
        for (long c = 0; c < blogs; c++) {
            BSONObjBuilder blog;
            blog.append("_id", static_cast<int>(c));
            blog.append("title", "Mongodb Benchmark");
            if (per_blog > pushed) {
                BSONArrayBuilder comments;
                for (long i = 0; i < per_blog - pushed; i++) comments.append(BSON("comment" << comment));
                blog.append("comments", comments.arr());
            }
            insert({blog.obj()});
            for (long i = 0; i < pushed; i++) push(c);
            ops += 1 + pushed;
        }
        return ops;
    }
    BSONObj separate_doc(long c, long per_blog, long i) {
        return BSON("_id" << static_cast<int>(c * per_blog + i) << "blog" << static_cast<int>(c) << "comment"
                          << comment);
    }
    long separate(long blogs, long per_blog, long pushed) {
        long ops = 0;
        for (long c = 0; c < blogs; c++) {
            long first = per_blog - pushed;
            if (first > 0) {
                std::vector<BSONObj> docs;
                for (long i = 0; i < first; i++) docs.push_back(separate_doc(c, per_blog, i));
                insert(docs);
                ops += 1;
            }
            for (long i = first; i < per_blog; i++) insert({separate_doc(c, per_blog, i)});
            ops += pushed;
        }
        return ops;
    }
};

static mongo::BSONArray totals(bool embedded) {
    if (embedded) {
        BSONObjBuilder group;
        group.appendNull("_id");
        group.append("blogs", BSON("$sum" << 1));
        group.append("comments",
                     BSON("$sum" << BSON("$size" << BSON("$ifNull" << BSON_ARRAY("$comments" << BSONArrayBuilder().arr())))));
        return BSON_ARRAY(BSON("$group" << group.obj()));
    }
    BSONObjBuilder second;
    second.appendNull("_id");
    second.append("blogs", BSON("$sum" << 1));
    second.append("comments", BSON("$sum" << "$n"));
    return BSON_ARRAY(BSON("$group" << BSON("_id" << "$blog" << "n" << BSON("$sum" << 1)))
                      << BSON("$group" << second.obj()));
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("embedded", argc, argv);
        long total = w.scaled(10000);
        w.drop_database();
        for (const char* ack : {"w0", "w1"}) {
            for (const char* layout : {"embedded", "separate"}) {
                bool is_embedded = std::string(layout) == "embedded";
                Writer writer{w, is_embedded ? "blog" : "comments", std::string(ack) == "w0"};
                for (long per_blog : PER_BLOG) {
                    if (per_blog > total) continue;
                    long blogs = total / per_blog, pushed = std::min(per_blog, PUSH_CAP);
                    BSONObj ignored;
                    w.conn().dropCollection(w.ns(writer.coll), &ignored);  // absent is fine
                    std::string step = std::string(layout) + "_" + std::to_string(per_blog) + "_" + ack;
                    Started t = w.start(step);
                    long ops = is_embedded ? writer.embedded(blogs, per_blog, pushed)
                                           : writer.separate(blogs, per_blog, pushed);
                    if (writer.w0) {
                        w.count(writer.coll);  // barrier: all w:0 writes have been applied
                        ops += 1;
                    }
                    double seconds = w.since(t);
                    BSONObj reply = w.command(BSON("aggregate" << writer.coll << "pipeline" << totals(is_embedded)
                                                               << "cursor" << BSONObj()));
                    BSONObj res = reply["cursor"]["firstBatch"].Obj()["0"].Obj();
                    w.emit(step, ops, seconds,
                           "{\"blogs\":" + std::to_string(res["blogs"].numberLong()) + ",\"comments\":" +
                               std::to_string(res["comments"].numberLong()) + "}");
                }
            }
        }
        w.close();
    });
}
