// The Workload class of common.hpp: arguments, connection, step markers and the operations the
// workloads share, written with the legacy driver's API as far as a current server accepts it.
#include "common.hpp"

#include <cctype>
#include <fstream>

namespace wl {

std::string host_of(const std::string& uri, double* socket_timeout_ms) {
    const std::string scheme = "mongodb://";
    if (uri.compare(0, scheme.size(), scheme) != 0) {
        throw Failure("--uri " + uri + ": only mongodb:// URIs are understood");
    }
    std::string rest = uri.substr(scheme.size());
    size_t end = rest.find_first_of("/?");
    std::string host = rest.substr(0, end);
    if (host.empty() || host.find(',') != std::string::npos || host.find('@') != std::string::npos) {
        throw Failure("--uri " + uri + ": one host without credentials, please (the legacy client " +
                      "connects to a single server)");
    }
    size_t q = rest.find('?');
    if (q != std::string::npos) {
        std::istringstream options(rest.substr(q + 1));
        std::string option;
        while (std::getline(options, option, '&')) {
            std::string key = option.substr(0, option.find('='));
            // The connection is always direct, and the driver sends no client metadata to hold
            // an appName: both change nothing on the wire.
            // Nor does heartbeatFrequencyMS: the driver has no monitor; nor retryWrites and
            // retryReads: it has no sessions, so it never retries (false is what it does anyway).
            if (key == "socketTimeoutMS") {
                // The driver's so_timeout (seconds): a read that waits longer fails with a socket
                // exception; 0 (the default) waits forever.
                char* end = nullptr;
                std::string value = option.substr(key.size() + (option.size() > key.size() ? 1 : 0));
                double ms = std::strtod(value.c_str(), &end);
                if (value.empty() || *end != '\0' || ms < 0) {
                    throw Failure("--uri " + uri + ": socketTimeoutMS must be a number of milliseconds");
                }
                if (socket_timeout_ms != nullptr) *socket_timeout_ms = ms;
            } else if (!key.empty() && key != "directConnection" && key != "appName" &&
                       key != "heartbeatFrequencyMS" && key != "retryWrites" && key != "retryReads") {
                throw Failure("--uri " + uri + ": option " + key +
                              " is not supported by the legacy C++ client (it knows directConnection, appName, " +
                              "heartbeatFrequencyMS, retryWrites, retryReads, socketTimeoutMS)");
            }
        }
    }
    return host;
}

#ifndef MONGOTAPE_WORKLOAD_DATA
#error "build with -DMONGOTAPE_WORKLOAD_DATA=<tools/workloads/data> (tools/workloads/run does)"
#endif

std::string data_file(const std::string& name) {
    std::string path = std::string(MONGOTAPE_WORKLOAD_DATA) + "/" + name;
    std::ifstream in(path.c_str(), std::ios::binary);
    if (!in) throw Failure("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(0, 1);
    return s;
}

// autoReconnect: after a lost connection, the next operation connects again (after a short
// backoff) instead of failing like every later one; a legacy application that outlives a network
// cut asks for it. It changes nothing on the wire until a connection is lost.
Workload::Workload(const std::string& name, int argc, char** argv) : conn_(true), name_(name) {
    const char* tally = std::getenv("MONGOTAPE_WORKLOAD_TALLY");
    tally_ = tally != nullptr && std::string(tally) == "1";
    const char* retries = std::getenv("MONGOTAPE_WORKLOAD_APP_RETRY");
    if (retries != nullptr && *retries != '\0') app_retries_ = std::stol(retries);
    std::string uri;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (i + 1 >= argc) throw Failure(name + ": " + arg + " needs a value");
        std::string value = argv[++i];
        if (arg == "--uri") {
            uri = value;
        } else if (arg == "--db") {
            db_ = value;
        } else if (arg == "--scale") {
            char* end = nullptr;
            scale_ = std::strtod(value.c_str(), &end);
            if (*end != '\0' || !(scale_ > 0)) throw Failure(name + ": --scale must be > 0, not " + value);
        } else {
            throw Failure(name + ": unknown argument " + arg + " (usage: --uri URI [--db DB] [--scale S])");
        }
    }
    if (uri.empty()) throw Failure(name + ": --uri is required");
    if (!instance_.initialized()) throw Failure("libmongoclient: " + instance_.status().toString());
    std::string error;
    double socket_timeout_ms = 0;
    std::string host = host_of(uri, &socket_timeout_ms);
    if (socket_timeout_ms > 0) conn_.setSoTimeout(socket_timeout_ms / 1000.0);
    if (!conn_.connect(mongo::HostAndPort(host), error)) throw Failure("connect to " + host + ": " + error);
    if (conn_.getMaxWireVersion() < 2) {
        throw Failure("the server's maxWireVersion is below 2: the driver would send legacy write opcodes");
    }
}

BSONObj Workload::command(const BSONObj& cmd, const std::string& db) {
    BSONObj info;
    bool ok = conn_.runCommand(db.empty() ? db_ : db, cmd, info);
    if (!ok || info.hasField("writeErrors") || info.hasField("writeConcernError")) {
        throw Failure(std::string("command ") + cmd.firstElementFieldName() + " failed: " + info.toString());
    }
    return info.getOwned();
}

void Workload::mark(const std::string& step) {
    command(BSON("ping" << 1 << "comment" << (MARKER_PREFIX + step)), "admin");
    marked_ = step;
}

Started Workload::start(const std::string& step) {
    mark(step);
    return std::chrono::steady_clock::now();
}

double Workload::since(Started started) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void Workload::emit(const std::string& step, long ops, double seconds, const std::string& result) {
    if (step != marked_) {
        throw Failure("step " + step + " was not started with start() (last marker " + marked_ + ")");
    }
    std::printf("{\"step\":%s,\"ops\":%ld,\"seconds\":%.6f,\"result\":%s}\n", json_str(step).c_str(), ops,
                seconds, result.c_str());
    std::fflush(stdout);
}

void Workload::close() {
    mark("end");
    if (tally_) {
        std::printf("{\"tally\":{\"ok\":%ld,\"failed\":%ld,\"app_retried\":%ld}}\n", ok_, failed_,
                    app_retried_);
        std::fflush(stdout);
    }
}

void Workload::drop_database() {
    Started t = start("drop_database");
    if (!conn_.dropDatabase(db_)) throw Failure("dropDatabase " + db_ + " failed");
    emit("drop_database", 1, since(t), "null");
}

long Workload::count(const std::string& coll, const BSONObj& query) {
    BSONObj reply = command(BSON("count" << coll << "query" << query));
    return reply["n"].numberLong();
}

void Workload::insert(const std::string& coll, const BSONObj& doc, const mongo::WriteConcern* wc) {
    // Throws mongo::OperationException on a write error.
    conn_.insert(ns(coll), doc, 0, wc);
}

void Workload::insert_w0(const std::string& coll, const BSONObj& doc) {
    command(BSON("insert" << coll << "documents" << BSON_ARRAY(doc) << "writeConcern" << BSON("w" << 0)));
}

void Workload::update_w0(const std::string& coll, const BSONObj& q, const BSONObj& u, bool upsert) {
    BSONObj statement = BSON("q" << q << "u" << u << "multi" << false << "upsert" << upsert);
    command(BSON("update" << coll << "updates" << BSON_ARRAY(statement) << "writeConcern" << BSON("w" << 0)));
}

mongo::WriteResult Workload::update(const std::string& coll, const BSONObj& q, const BSONObj& u, bool multi,
                                    bool upsert) {
    mongo::BulkOperationBuilder bulk = conn_.initializeOrderedBulkOp(ns(coll));
    mongo::BulkUpdateBuilder op = bulk.find(q);
    if (upsert) {
        mongo::BulkUpsertBuilder up = op.upsert();
        multi ? up.update(u) : up.updateOne(u);
    } else {
        multi ? op.update(u) : op.updateOne(u);
    }
    mongo::WriteResult result;
    bulk.execute(&mongo::WriteConcern::acknowledged, &result);
    return result;
}

mongo::WriteResult Workload::remove(const std::string& coll, const BSONObj& q, bool just_one) {
    mongo::BulkOperationBuilder bulk = conn_.initializeOrderedBulkOp(ns(coll));
    mongo::BulkUpdateBuilder op = bulk.find(q);
    just_one ? op.removeOne() : op.remove();
    mongo::WriteResult result;
    bulk.execute(&mongo::WriteConcern::acknowledged, &result);
    return result;
}

// Reads are `aggregate` commands: on secantusd-rs, the reply to a `find` or `getMore` sent over
// OP_QUERY holds the cursor's id but not its batch (`firstBatch`/`nextBatch` missing), while an
// `aggregate`'s first batch arrives whole. The whole result therefore has to come in the first
// batch; a reply without its batch is an error, never an empty result.
std::vector<BSONObj> Workload::find(const std::string& coll, const BSONObj& filter, const BSONObj& sort,
                                    const BSONObj& projection, int limit) {
    BSONArrayBuilder pipeline;
    pipeline.append(BSON("$match" << filter));
    if (!sort.isEmpty()) pipeline.append(BSON("$sort" << sort));
    if (limit) pipeline.append(BSON("$limit" << limit));
    if (!projection.isEmpty()) pipeline.append(BSON("$project" << projection));
    BSONObj reply = command(BSON("aggregate" << coll << "pipeline" << pipeline.arr() << "cursor" << BSONObj()));
    BSONObj cursor = reply["cursor"].Obj();
    if (cursor["firstBatch"].type() != mongo::Array) {
        throw Failure("aggregate on " + coll + ": the reply has no firstBatch: " + reply.toString());
    }
    if (cursor["id"].numberLong() != 0) {
        throw Failure("aggregate on " + coll + ": more than one batch, and getMore over OP_QUERY " +
                      "brings no documents back from the test server");
    }
    std::vector<BSONObj> docs;
    for (BSONObjIterator it(cursor["firstBatch"].Obj()); it.more();) docs.push_back(it.next().Obj().getOwned());
    return docs;
}

std::string Workload::create_index(const std::string& coll, const BSONObj& keys) {
    conn_.createIndex(ns(coll), keys);
    // The default name, as the driver builds it: `field_direction` joined by `_`.
    std::string name;
    for (BSONObjIterator it(keys); it.more();) {
        BSONElement e = it.next();
        if (!name.empty()) name += "_";
        name += std::string(e.fieldName()) + "_" + std::to_string(e.numberInt());
    }
    return name;
}

}  // namespace wl
