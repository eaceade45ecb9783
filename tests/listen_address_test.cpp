// Where a server that other nodes must reach listens (launch/listen_address.hpp): MASTER_ADDR's
// own address, never every interface; a name that means loopback here only is replaced by an
// address of this host that other hosts can reach.

#include "ranks/launch/listen_address.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <set>
#include <string>

namespace ranks::testing {
namespace {

// This host's IPv4 addresses that are not loopback, from its interfaces.
std::set<std::string> network_addresses() {
  std::set<std::string> found;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return found;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(v4->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    found.insert(text);
  }
  ::freeifaddrs(list);
  return found;
}

TEST(ListenAddress, LoopbackGivenStaysLoopback) {
  for (const char* host : {"127.0.0.1", "127.0.0.5", "::1", "localhost"}) {
    EXPECT_EQ(launch::listen_address_for(host), host);
  }
}

TEST(ListenAddress, AnAddressOfThisHostOnItsNetworkStaysAsItIs) {
  const auto addresses = network_addresses();
  if (addresses.empty()) GTEST_SKIP() << "this host has no network interface";
  for (const std::string& address : addresses) {
    EXPECT_EQ(launch::listen_address_for(address), address);
  }
}

TEST(ListenAddress, ANameThatMeansLoopbackHereOnlyTakesAnAddressOnTheNetwork) {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  if (!launch::resolves_to_loopback_only(name)) {
    GTEST_SKIP() << "this host's name resolves to a network address here";
  }
  const auto addresses = network_addresses();
  if (addresses.empty()) GTEST_SKIP() << "this host has no network interface";
  const std::string chosen = launch::listen_address_for(name);
  EXPECT_TRUE(addresses.count(chosen) == 1) << chosen << " is not an address of this host's";
}

}  // namespace
}  // namespace ranks::testing
