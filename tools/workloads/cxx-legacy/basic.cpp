// basic: a small mixed workload touching every common operation; mirrors pymongo/basic.py.
// --scale is ignored.
#include "common.hpp"

using namespace wl;

static BSONObj item(int i, const char* kind) {
    return BSON("_id" << i << "kind" << kind << "group" << i % 5 << "name" << ("item-" + std::to_string(i))
                      << "value" << (i * 7) % 13);
}

static BSONObj push_comment(int k) {
    return BSON("$push" << BSON("comments" << BSON("who" << ("user-" + std::to_string(k)) << "comment"
                                                         << ("comment " + std::to_string(k)))));
}

static void writes(Workload& w) {
    // Acknowledged single inserts: DBClientConnection::insert, an `insert` command.
    Started t = w.start("insert_ack");
    for (int i = 0; i < 50; i++) w.insert("items", item(i, "ack"));
    w.emit("insert_ack", 50, w.since(t), "{\"inserted\":50}");

    // Unacknowledged inserts, then one acknowledged count as a barrier.
    t = w.start("insert_w0");
    for (int i = 50; i < 100; i++) w.insert_w0("items", item(i, "w0"));
    long count = w.count("items", BSON("kind" << "w0"));
    w.emit("insert_w0", 51, w.since(t), "{\"count\":" + std::to_string(count) + "}");

    // $push comments into an embedded array, acknowledged.
    t = w.start("push_ack");
    w.insert("blogs", BSON("_id" << 1 << "title" << "No Free Lunch" << "author" << "Alex" << "comments"
                                 << BSONArrayBuilder().arr()));
    long matched = 0, modified = 0;
    for (int k = 0; k < 20; k++) {
        mongo::WriteResult r = w.update("blogs", BSON("_id" << 1), push_comment(k), false);
        matched += r.nMatched();
        modified += r.nModified();
    }
    w.emit("push_ack", 21, w.since(t),
           "{\"matched\":" + std::to_string(matched) + ",\"modified\":" + std::to_string(modified) + "}");

    // The same, unacknowledged; reading the blog back is the barrier.
    t = w.start("push_w0");
    for (int k = 20; k < 40; k++) w.update_w0("blogs", BSON("_id" << 1), push_comment(k));
    std::vector<BSONObj> blog = w.find("blogs", BSON("_id" << 1), BSONObj(), BSONObj(), 1);
    if (blog.size() != 1) throw Failure("push_w0: the blog is gone");
    std::vector<BSONElement> comments = blog[0]["comments"].Array();
    w.emit("push_w0", 21, w.since(t),
           "{\"comments\":" + std::to_string(comments.size()) + ",\"last\":" + json(comments.back().Obj()) + "}");
}

static void reads(Workload& w) {
    // Find by a non-indexed field, index it, find again.
    Started t = w.start("find_noindex");
    std::vector<BSONObj> docs = w.find("items", BSON("name" << "item-42"));
    w.emit("find_noindex", 1, w.since(t), json_docs(docs));

    t = w.start("create_index");
    std::string name = w.create_index("items", BSON("name" << 1));
    w.emit("create_index", 1, w.since(t), json_str(name));

    t = w.start("find_index");
    docs = w.find("items", BSON("name" << "item-42"));
    w.emit("find_index", 1, w.since(t), json_docs(docs));

    // The other clients read these 100 documents in batches of 10 (find + getMores); here they come
    // in one batch: getMore over OP_QUERY brings nothing back from the test server (common.cpp).
    t = w.start("find_batches");
    docs = w.find("items", BSONObj(), BSON("_id" << 1));
    std::string ids = "{\"ids\":[";
    for (size_t i = 0; i < docs.size(); i++) ids += (i ? "," : "") + std::to_string(docs[i]["_id"].numberInt());
    w.emit("find_batches", 1, w.since(t), ids + "]}");
}

static void changes(Workload& w) {
    Started t = w.start("update_many");
    mongo::WriteResult r = w.update("items", BSON("group" << 3), BSON("$set" << BSON("flag" << true)), true);
    w.emit("update_many", 1, w.since(t),
           "{\"matched\":" + std::to_string(r.nMatched()) + ",\"modified\":" + std::to_string(r.nModified()) +
               "}");

    t = w.start("delete_one");
    r = w.remove("items", BSON("_id" << 7), true);
    w.emit("delete_one", 1, w.since(t), "{\"deleted\":" + std::to_string(r.nRemoved()) + "}");

    t = w.start("delete_many");
    r = w.remove("items", BSON("kind" << "w0" << "group" << 1), false);
    w.emit("delete_many", 1, w.since(t), "{\"deleted\":" + std::to_string(r.nRemoved()) + "}");

    t = w.start("counts");
    BSONObj listed = w.command(BSON("listCollections" << 1 << "nameOnly" << true));
    std::vector<std::string> names;
    for (BSONObjIterator it(listed["cursor"]["firstBatch"].Obj()); it.more();) {
        names.push_back(it.next().Obj()["name"].String());
    }
    std::sort(names.begin(), names.end());
    std::string counts = "{";
    for (size_t i = 0; i < names.size(); i++) {
        counts += (i ? "," : "") + json_str(names[i]) + ":" + std::to_string(w.count(names[i]));
    }
    w.emit("counts", 1 + names.size(), w.since(t), counts + "}");
}

int main(int argc, char** argv) {
    return run([&] {
        Workload w("basic", argc, argv);
        w.drop_database();
        writes(w);
        reads(w);
        changes(w);
        w.close();
    });
}
