// The TCP store's wire format (ranks/store/wire.hpp) and the file store's records: exact bytes
// (big-endian, length-prefixed), round trips, and malformed input that must give DecodeError
// and never a crash or a huge allocation.

#include <random>

#include "harness.hpp"
#include "ranks/store/bytes.hpp"
#include "ranks/store/file_log.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::testing {
namespace {

namespace wire = store::wire;
using Bytes = std::vector<uint8_t>;

wire::Request request(wire::Op op) {
  wire::Request r;
  r.op = op;
  r.key = "key";
  r.keys = {"a", "bc"};
  r.value = {1, 2, 3};
  r.expected = {9};
  r.number = -5;
  r.token = "tok";
  return r;
}

TEST(StoreWire, ASetIsBigEndianAndLengthPrefixed) {
  wire::Request r;
  r.op = wire::Op::Set;
  r.key = "k";
  r.value = {0xab};
  const Bytes framed = wire::frame(wire::encode_request(r));
  const Bytes expected = {0, 0, 0, 11,  // body length
                          2,            // op
                          0, 0, 0, 1,  'k', 0, 0, 0, 1, 0xab};
  EXPECT_EQ(framed, expected);
}

TEST(StoreWire, AHelloStartsWithTheMagicAndVersion) {
  const Bytes body = wire::encode_request(request(wire::Op::Hello));
  const Bytes start(body.begin(), body.begin() + 7);
  EXPECT_EQ(start, (Bytes{1, 'R', 'N', 'K', 'S', 0, wire::kVersion}));
}

TEST(StoreWire, EveryRequestRoundTrips) {
  for (int op = 1; op <= 9; ++op) {
    const wire::Request sent = request(static_cast<wire::Op>(op));
    const wire::Request got = wire::decode_request(wire::encode_request(sent));
    EXPECT_EQ(got.op, sent.op);
    EXPECT_EQ(wire::encode_request(got), wire::encode_request(sent)) << wire::op_name(sent.op);
  }
}

TEST(StoreWire, EveryReplyRoundTrips) {
  wire::Reply ok;
  ok.value = {7, 8};
  ok.number = 1ll << 40;
  ok.flag = true;
  ok.version = 1;
  ok.max_key = 4096;
  ok.max_value = 1ull << 26;
  wire::Reply timeout;
  timeout.status = wire::Status::Timeout;
  timeout.missing = {"x", "y"};
  timeout.clients = 3;
  timeout.world_size = 4;
  wire::Reply error;
  error.status = wire::Status::Error;
  error.error = wire::ErrorKind::InvalidArgument;
  error.message = "no";
  for (int op = 1; op <= 9; ++op) {
    for (const wire::Reply& sent : {ok, timeout, error}) {
      const auto o = static_cast<wire::Op>(op);
      const Bytes body = wire::encode_reply(o, sent);
      EXPECT_EQ(wire::encode_reply(o, wire::decode_reply(o, body)), body) << wire::op_name(o);
    }
  }
}

TEST(StoreWire, EveryTruncationIsADecodeError) {
  for (int op = 1; op <= 9; ++op) {
    const Bytes body = wire::encode_request(request(static_cast<wire::Op>(op)));
    for (std::size_t n = 0; n < body.size(); ++n) {
      const Bytes cut(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_THROW(wire::decode_request(cut), store::DecodeError) << "op " << op << " cut " << n;
    }
    Bytes longer = body;
    longer.push_back(0);
    EXPECT_THROW(wire::decode_request(longer), store::DecodeError) << "op " << op;
  }
}

TEST(StoreWire, LengthsThatLieAreRejectedBeforeAllocating) {
  // A key of 4 GiB, and a key list of 4 billion entries, in a few bytes.
  EXPECT_THROW(wire::decode_request(Bytes{2, 0xff, 0xff, 0xff, 0xff}), store::DecodeError);
  EXPECT_THROW(wire::decode_request(Bytes{6, 0xff, 0xff, 0xff, 0xff, 0, 0}), store::DecodeError);
  EXPECT_THROW(wire::decode_request(Bytes{1, 0, 0, 0, 0, 0, 1}), store::DecodeError);  // magic
  EXPECT_THROW(wire::decode_request(Bytes{0}), store::DecodeError);                    // op 0
  EXPECT_THROW(wire::decode_reply(wire::Op::Check, Bytes{0, 2}), store::DecodeError);  // bool 2
}

TEST(StoreWire, RandomBytesNeverDoWorseThanADecodeError) {
  std::mt19937 random(12345);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes body(random() % 24);
    for (uint8_t& b : body) b = static_cast<uint8_t>(random() % 4 == 0 ? random() : random() % 3);
    if (!body.empty()) body[0] = static_cast<uint8_t>(random() % 11);
    try {
      wire::decode_request(body);
      ++decoded;
    } catch (const store::DecodeError&) {
    }
  }
  EXPECT_GT(decoded, 0);  // the generator does reach valid requests, so the parser is exercised
}

TEST(StoreWire, LimitViolationsNameTheKeyAndTheLimit) {
  wire::Request r;
  r.op = wire::Op::Set;
  r.key = "k";
  r.value = Bytes(11);
  EXPECT_EQ(wire::limit_violation(r, 4, 11), "");
  EXPECT_TRUE(Contains(wire::limit_violation(r, 4, 10), "limit of 10 bytes"));
  r.key = "kkkkk";
  EXPECT_TRUE(Contains(wire::limit_violation(r, 4, 11), "'kkkkk' has 5 bytes"));
  wire::Request w;
  w.op = wire::Op::Wait;
  w.keys = {"ok", "too-long"};
  EXPECT_TRUE(Contains(wire::limit_violation(w, 4, 1), "'too-long'"));
  w.keys = {};
  w.number = -1;
  EXPECT_TRUE(Contains(wire::limit_violation(w, 4, 1), "must not be negative"));
}

TEST(StoreFileLog, RecordsReplayIntoTheMapAndTombstonesDelete) {
  store::FileHeader header;
  header.world_size = 2;
  Bytes file = store::header_record(header);
  for (const Bytes& r : {store::join_record("a"), store::set_record("k", {1}),
                         store::set_record("gone", {2}), store::delete_record("gone")}) {
    file.insert(file.end(), r.begin(), r.end());
  }
  store::FileLog log;
  EXPECT_EQ(log.replay(file), file.size());
  EXPECT_EQ(log.header()->world_size, 2);
  EXPECT_EQ(log.joined(), std::vector<std::string>{"a"});
  EXPECT_EQ(*log.map().find("k"), Bytes{1});
  EXPECT_FALSE(log.map().contains("gone"));
  // A replay resumes where the last one stopped, and leaves an incomplete record for later.
  const Bytes more = store::set_record("later", {3});
  EXPECT_EQ(log.replay(Bytes(more.begin(), more.end() - 1)), 0u);
  EXPECT_EQ(log.replay(more), more.size());
  EXPECT_TRUE(log.map().contains("later"));
}

TEST(StoreFileLog, ARecordBeforeTheHeaderOrASecondHeaderIsCorrupt) {
  Bytes file = store::header_record({});
  const Bytes no_header(file.begin(), file.begin() + 8);
  Bytes join_first = no_header;
  const Bytes join = store::join_record("a");
  join_first.insert(join_first.end(), join.begin(), join.end());
  EXPECT_THROW(store::FileLog().replay(join_first), store::DecodeError);
  const Bytes header_again(file.begin() + 8, file.end());
  file.insert(file.end(), header_again.begin(), header_again.end());
  EXPECT_THROW(store::FileLog().replay(file), store::DecodeError);
}

}  // namespace
}  // namespace ranks::testing
