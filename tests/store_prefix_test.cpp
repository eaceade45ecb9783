// PrefixStore beyond the shared contract: where its keys land, nesting, namespaces that do not
// see each other, and num_keys() over a store that cannot count by prefix.

#include <memory>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

Bytes bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A store that only has the Store interface, to show what num_keys() falls back to.
class PlainStore final : public Store {
 public:
  void set(const std::string& k, const Bytes& v) override { inner_.set(k, v); }
  Bytes get(const std::string& k) override { return inner_.get(k); }
  int64_t add(const std::string& k, int64_t d) override { return inner_.add(k, d); }
  Bytes compare_set(const std::string& k, const Bytes& e, const Bytes& d) override {
    return inner_.compare_set(k, e, d);
  }
  bool check(const std::vector<std::string>& k) override { return inner_.check(k); }
  void wait(const std::vector<std::string>& k, std::chrono::milliseconds t) override {
    inner_.wait(k, t);
  }
  bool delete_key(const std::string& k) override { return inner_.delete_key(k); }
  int64_t num_keys() override { return inner_.num_keys(); }

 private:
  HashStore inner_;
};

TEST(PrefixStore, KeysLandInTheInnerStoreUnderThePrefix) {
  auto inner = std::make_shared<HashStore>();
  PrefixStore store("group-3", inner);
  store.set("addr", bytes("10.0.0.1"));
  store.add("count", 2);
  EXPECT_EQ(inner->get("group-3/addr"), bytes("10.0.0.1"));
  EXPECT_EQ(inner->get("group-3/count"), bytes("2"));
  EXPECT_FALSE(inner->check({"addr"}));
  EXPECT_EQ(store.prefix(), "group-3");
  EXPECT_EQ(store.inner(), inner);
}

TEST(PrefixStore, NamespacesDoNotSeeEachOther) {
  auto inner = std::make_shared<HashStore>(30ms);
  PrefixStore a("a", inner);
  PrefixStore b("b", inner);
  a.set("k", bytes("from a"));
  EXPECT_FALSE(b.check({"k"}));
  EXPECT_THROW(b.get("k"), Timeout);
  EXPECT_EQ(a.num_keys(), 1);
  EXPECT_EQ(b.num_keys(), 0);
  EXPECT_FALSE(b.delete_key("k"));
  EXPECT_TRUE(a.check({"k"}));
}

TEST(PrefixStore, NestedPrefixesJoinWithSlashesAndCountTheirOwnKeys) {
  auto inner = std::make_shared<HashStore>();
  auto outer = std::make_shared<PrefixStore>("job", inner);
  PrefixStore nested("pg1", outer);
  nested.set("k", {});
  outer->set("other", {});
  EXPECT_TRUE(inner->check({"job/pg1/k"}));
  EXPECT_EQ(nested.num_keys(), 1);
  EXPECT_EQ(outer->num_keys(), 2);
}

TEST(PrefixStore, TimeoutsNameTheFullKey) {
  PrefixStore store("grp", std::make_shared<HashStore>(20ms));
  try {
    store.get("k");
    FAIL() << "get of a missing key returned";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "'grp/k'"));
  }
}

TEST(PrefixStore, OverAStoreThatCannotCountByPrefixNumKeysIsTheInnerTotal) {
  auto inner = std::make_shared<PlainStore>();
  inner->set("elsewhere", {});
  PrefixStore store("p", inner);
  store.set("mine", {});
  EXPECT_EQ(store.num_keys(), 2);
}

TEST(PrefixStore, ANullInnerStoreIsInvalid) {
  EXPECT_THROW(PrefixStore("p", nullptr), InvalidArgument);
}

}  // namespace
}  // namespace ranks::testing
