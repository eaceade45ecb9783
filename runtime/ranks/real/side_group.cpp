// new_group(ranks, backend) in real runs: the group's communicator is that backend's world made
// over the members alone, rendezvousing through the job's store under the group's name (gloo and
// nccl prefix their keys with both). A job whose world needed no store (mpi, wired by mpirun)
// gets one here, once: rank 0 serves it on a free port, and its address and secret reach the
// other ranks through a broadcast on the world, a channel only the job's ranks share.

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string>

#include "ranks/backends/registry.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/collectives.hpp"
#include "ranks/context.hpp"
#include "ranks/errors.hpp"
#include "ranks/launch/job_secret.hpp"
#include "ranks/launch/listen_address.hpp"
#include "ranks/real/group_setup.hpp"
#include "ranks/store/tcp_store.hpp"
#include "ranks/tensor.hpp"

namespace ranks {

namespace {

// Room for "host\nport\nsecret": a host name is at most 255 bytes, a secret 64 hex digits
// (job_secret.hpp bounds a given one).
constexpr int64_t kAddressBytes = 1024;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// The world's store, made now when the world was made without one.
std::shared_ptr<Store> job_store(Context& context, const GroupSpec& spec) {
  if (context.store) return context.store;
  const bool one_node = context.local_size == context.world_size;
  Tensor address = Tensor::zeros({kAddressBytes}, DType::UInt8);
  std::string secret;
  if (context.rank == 0) {
    TCPStoreOptions options;
    // One node: loopback, where no other host reaches it; else the address the other nodes reach
    // this host by (launch/listen_address.hpp), behind the secret.
    options.host = options.listen_host =
        one_node ? "127.0.0.1" : launch::listen_address_for(host_name());
    options.port = 0;
    options.is_server = true;
    options.world_size = context.world_size;
    options.timeout = context.timeout;
    options.token = launch::job_secret(launch::Env::process()).value_or(launch::new_job_secret());
    auto server = std::make_shared<TCPStore>(options);
    const std::string line = fmt::format("{}\n{}\n{}", options.host, server->port(), options.token);
    std::memcpy(address.data_ptr(), line.data(), line.size());
    context.store = std::move(server);
  }
  broadcast(address, 0);
  context.store_host = "rank 0";
  if (context.rank != 0) {
    const auto* bytes = static_cast<const char*>(address.data_ptr());
    const std::string text(bytes, strnlen(bytes, kAddressBytes));
    const auto first = text.find('\n');
    const auto second = first == std::string::npos ? first : text.find('\n', first + 1);
    int port = 0;
    if (second == std::string::npos ||
        std::from_chars(text.data() + first + 1, text.data() + second, port).ec != std::errc{}) {
      throw RendezvousError(fmt::format(
          "new_group '{}': rank 0's store address '{}' is not host, port and secret", spec.name,
          text.substr(0, first)));
    }
    const std::string host = text.substr(0, first);
    context.store = std::make_shared<TCPStore>(host, port, context.world_size, false,
                                               context.timeout, text.substr(second + 1));
  }
  return context.store;
}

}  // namespace

std::unique_ptr<Backend> Backend::create_side_group(const GroupSpec& spec,
                                                    std::string_view backend) {
  backends::WorldSetup setup = detail::group_setup(spec);
  if (capabilities(backend).rendezvous_through_store) setup.store = job_store(current(), spec);
  return backends::create_world(backend, setup);
}

}  // namespace ranks
