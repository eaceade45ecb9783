// init_process_group for real runs: who this process is (options, else the launcher's
// environment), the rendezvous store (options.store, env://, tcp://host:port or file:///path),
// local rank and size (the launcher's, else from hostnames exchanged through the store), and the
// backend's world communicator.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <charconv>
#include <chrono>
#include <map>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "ranks/backends/registry.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/context.hpp"
#include "ranks/detail/cuda.hpp"
#include "ranks/errors.hpp"
#include "ranks/init.hpp"
#include "ranks/sim.hpp"
#include "ranks/launch/job_secret.hpp"
#include "ranks/real/frozen_peers.hpp"
#include "ranks/launch/listen_address.hpp"
#include "ranks/launch/launcher.hpp"
#include "ranks/store/stores.hpp"
#include "ranks/store/torch_store_client.hpp"

namespace ranks {

namespace {

struct Membership {
  int rank = 0;
  int world_size = 1;
  std::optional<int> local_rank;
  std::optional<int> local_size;
  std::string master_addr;
  int master_port = 0;
  std::string agent_store_prefix;  // torchrun's agent hosts the store (LaunchInfo)
};

bool needs_master(const InitOptions& options) {
  return !options.store && options.init_method.starts_with("env://");
}

// Who this process is: explicit options win, then the launcher's variables.
Membership membership(const InitOptions& options, const BackendCapabilities& rules) {
  Membership m;
  launch::Env env = launch::Env::process();
  std::string launcher = launch::launcher_for_main(env);
  const bool explicit_identity = options.rank >= 0 && options.world_size > 0;
  if (launcher != "none" && (!explicit_identity || needs_master(options))) {
    // A backend that needs no store needs no MASTER_ADDR either; the launcher's reader asks.
    if (!rules.rendezvous_through_store && !env.has("MASTER_ADDR")) {
      env.set("MASTER_ADDR", "127.0.0.1");
    }
    launch::LaunchInfo info = launch::read_launch(launcher, env);
    m = {info.rank,        info.world_size,  info.local_rank,
         info.local_size,  info.master_addr, info.master_port,
         info.agent_store_prefix};
  } else if (!explicit_identity && rules.rendezvous_through_store) {
    throw RendezvousError(
        "init_process_group: no rank and world size: pass InitOptions::rank and world_size, or "
        "start the program with a launcher (ranks run, torchrun, srun, mpirun)");
  }
  if (options.rank >= 0) m.rank = options.rank;
  if (options.world_size > 0) m.world_size = options.world_size;
  if (m.rank >= m.world_size) {
    throw InvalidArgument(
        fmt::format("init_process_group: rank {} is out of range [0, {})", m.rank, m.world_size));
  }
  return m;
}

std::pair<std::string, int> host_port(std::string_view address, std::string_view what) {
  auto colon = address.rfind(':');
  int port = 0;
  if (colon == std::string_view::npos ||
      std::from_chars(address.data() + colon + 1, address.data() + address.size(), port).ec !=
          std::errc{} ||
      port <= 0 || port > 65535) {
    throw InvalidArgument(
        fmt::format("init_process_group: {} '{}' is not host:port", what, address));
  }
  return {std::string(address.substr(0, colon)), port};
}

// The identity of each rendezvous server this process has joined, by host:port. After
// destroy_process_group() a rank may init again (tests, notebooks) on the same address while
// rank 0 is still tearing the previous server down: joined there, it would read the previous
// job's addresses (connection refused) or lose the server mid-rendezvous. Rank 0 writes a fresh
// identity into every server it starts; a rank that finds the one it saw last time has reached
// the old server, and tries again until the new one answers.
std::map<std::string, std::vector<uint8_t>>& servers_joined() {
  static std::map<std::string, std::vector<uint8_t>> joined;
  return joined;
}

// Whether every rank of the job is on this host, by the launcher's word.
bool one_node_job(const Membership& m) { return m.local_size && *m.local_size == m.world_size; }

// A note on stderr once per process (`said`: the note's own flag), however many process groups
// it makes.
void note_once(bool& said, const std::string& text) {
  if (!std::exchange(said, true)) std::fprintf(stderr, "ranks: note: %s\n", text.c_str());
}

// Where rank 0's store listens and every rank connects, and with what secret: a one-node job's
// store on loopback, where no other host reaches it; otherwise on MASTER_ADDR's address only.
struct StoreAccess {
  std::string connect_host;
  std::string listen_host;
  std::string token;
};

StoreAccess store_access(const std::string& host, const Membership& m, bool from_launcher) {
  StoreAccess access{host, host, {}};
  if (from_launcher && one_node_job(m)) {
    access.connect_host = access.listen_host = "127.0.0.1";
  } else if (m.local_size && *m.local_size < m.world_size) {
    // Other nodes reach this host under its name through their own resolver; where the name
    // means loopback here (as /etc/hosts often has it), this node's ranks use the address the
    // server listens on, which the other nodes reach.
    access.connect_host = access.listen_host = launch::listen_address_for(host);
  }
  if (auto secret = launch::job_secret(launch::Env::process())) {
    access.token = *secret;
  } else if (m.rank == 0) {
    static bool said = false;
    note_once(said, fmt::format("the rendezvous store at {}:{} has no secret: anyone who can "
                                "reach it can read and write the job's keys. Set {} or {} (a "
                                "file only you can read) for every rank; `ranks run` gives a "
                                "one-node job's ranks a fresh one, and starts several nodes "
                                "without one only when told --open-store",
                                access.listen_host, m.master_port, launch::kStoreTokenVariable,
                                launch::kStoreTokenFileVariable));
  }
  return access;
}

[[noreturn]] void world_size_mismatch(const Membership& m, const std::string& where,
                                      const std::string& rank0_world_size) {
  throw RendezvousError(fmt::format(
      "init_process_group: rank {} was started with world size {}, rank 0 ({}) with {}: every "
      "rank must be given the same WORLD_SIZE (with ranks run, the same -n and --nnodes on every "
      "node)",
      m.rank, m.world_size, where, rank0_world_size));
}

std::shared_ptr<Store> join_tcp_store(const std::string& given_host, int port,
                                      const Membership& m, std::chrono::milliseconds timeout,
                                      bool from_launcher) {
  const StoreAccess access = store_access(given_host, m, from_launcher);
  const std::string& host = access.connect_host;
  static const std::string identity_key = "ranks/server_identity";
  // Rank 0's world size, written before the identity: a rank that sees the identity can read it.
  static const std::string world_size_key = "ranks/world_size";
  std::vector<uint8_t>& seen = servers_joined()[fmt::format("{}:{}", host, port)];
  if (m.rank == 0) {
    TCPStoreOptions options;
    options.host = host;
    options.listen_host = access.listen_host;
    options.port = port;
    options.world_size = m.world_size;
    options.is_server = true;
    options.timeout = timeout;
    options.token = access.token;
    auto store = std::make_shared<TCPStore>(std::move(options));
    const std::string size = std::to_string(m.world_size);
    store->set(world_size_key, std::vector<uint8_t>(size.begin(), size.end()));
    std::random_device entropy;
    std::vector<uint8_t> identity(16);
    for (auto& byte : identity) byte = static_cast<uint8_t>(entropy());
    store->set(identity_key, identity);
    seen = identity;
    return store;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string rank0_world_size;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    try {
      auto store = std::make_shared<TCPStore>(host, port, m.world_size, false,
                                              std::max(left, std::chrono::milliseconds(1)),
                                              access.token);
      std::vector<uint8_t> identity = store->get(identity_key);
      if (identity != seen) {
        const std::vector<uint8_t> size = store->get(world_size_key);
        seen = std::move(identity);
        rank0_world_size.assign(size.begin(), size.end());
        if (rank0_world_size == std::to_string(m.world_size)) return store;
        break;
      }
    } catch (const Error&) {
      if (seen.empty()) throw;  // a first join: nothing old to wait out
      // else: the old server went away under us; the new one may not be up yet
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Timeout(
          fmt::format("init_process_group: the rendezvous server at {}:{} is still the one of this "
                      "process's previous process group after {} ms (has rank 0 called "
                      "destroy_process_group() and init again?)",
                      host, port, timeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the old server is closing
  }
  world_size_mismatch(m, fmt::format("the rendezvous server at {}:{}", host, port),
                      rank0_world_size);
}

// torchrun's agent hosts the store: every rank joins it as a client, under the prefix of this
// restart attempt and of this process group (the Nth init of the process is the Nth on every
// rank), so that keys of an earlier group in the same attempt are never read as this one's.
std::shared_ptr<Store> join_agent_store(const Membership& m, std::chrono::milliseconds timeout) {
  static int groups_joined = 0;
  auto client =
      std::make_shared<store::TorchStoreClient>(m.master_addr, m.master_port, timeout);
  auto store = std::make_shared<PrefixStore>(
      fmt::format("{}/ranks/group_{}", m.agent_store_prefix, groups_joined++), client);
  static const std::string world_size_key = "world_size";
  const std::string size = std::to_string(m.world_size);
  if (m.rank == 0) {
    static bool said = false;
    note_once(said, fmt::format("the rendezvous store is torchrun's agent store at {}:{} "
                                "(torch's TCPStore), which checks no secret: anyone who can reach "
                                "that port can read and write the job's keys. `ranks run` starts "
                                "a store that does",
                                m.master_addr, m.master_port));
    store->set(world_size_key, std::vector<uint8_t>(size.begin(), size.end()));
    return store;
  }
  const std::vector<uint8_t> rank0 = store->get(world_size_key);
  const std::string rank0_world_size(rank0.begin(), rank0.end());
  if (rank0_world_size != size) {
    world_size_mismatch(
        m, fmt::format("torchrun's agent store at {}:{}", m.master_addr, m.master_port),
        rank0_world_size);
  }
  return store;
}

std::shared_ptr<Store> make_store(const InitOptions& options, const Membership& m) {
  if (options.store) return options.store;
  const std::string& method = options.init_method;
  if (method.starts_with("env://")) {
    if (!m.agent_store_prefix.empty()) return join_agent_store(m, options.timeout);
    return join_tcp_store(m.master_addr, m.master_port, m, options.timeout, true);
  }
  if (method.starts_with("tcp://")) {
    auto [host, port] = host_port(std::string_view(method).substr(6), "init_method");
    return join_tcp_store(host, port, m, options.timeout, false);
  }
  if (method.starts_with("file://")) {
    // The job's secret, when it has one, marks the file as this job's: a file left by another
    // job (another secret) is refused by name rather than joined.
    return std::make_shared<FileStore>(method.substr(7), m.world_size, options.timeout,
                                       launch::job_secret(launch::Env::process()).value_or(""));
  }
  throw InvalidArgument(fmt::format(
      "init_process_group: init_method '{}' is not env://, tcp://host:port or file:///path",
      method));
}

// Local rank and size from hostnames, when the launcher did not say: ranks on the same host, in
// rank order. MMEngine raises here instead; every rank knows its host, so we can do better.
void exchange_hosts(Membership& m, Store& store) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string host = name;
  store.set(fmt::format("ranks/host/{}", m.rank), std::vector<uint8_t>(host.begin(), host.end()));
  int local_rank = 0, local_size = 0;
  for (int r = 0; r < m.world_size; ++r) {
    auto other = store.get(fmt::format("ranks/host/{}", r));
    if (std::string(other.begin(), other.end()) != host) continue;
    if (r < m.rank) ++local_rank;
    ++local_size;
  }
  if (!m.local_rank) m.local_rank = local_rank;
  if (!m.local_size) m.local_size = local_size;
}

// torch's rule: nccl when this process has a GPU (and nccl was built), else gloo.
std::string default_backend() {
  return backends::is_built("nccl") && detail::cuda_device_count() > 0 ? "nccl" : "gloo";
}

}  // namespace

void init_process_group(const InitOptions& options) {
  Context& context = current();
  if (context.awaiting_init) {
    // The simulated world this rank belongs to from the start counts from the script's own init.
    context.awaiting_init = false;
    context.initialized = true;
  }
  if (context.initialized) {
    // ranks::main() initialised this rank already (simulated or launched): adopt it, so that a
    // program written for torchrun or MMEngine's init_dist() runs unchanged.
    if (context.started_by_main) {
      // Under `ranks sim` without --backend the rules the program asks for are the run's.
      if (!options.backend.empty()) sim::program_asks_for_backend(options.backend);
      // The program's own timeout (torch's init_process_group(timeout=...)) is its world's:
      // ranks::main started the world with RANKS_TIMEOUT or the default, which the program did
      // not ask for.
      if (options.timeout != InitOptions{}.timeout) {
        if (options.timeout.count() <= 0) {
          throw InvalidArgument(fmt::format(
              "init_process_group: timeout must be positive, got {} ms", options.timeout.count()));
        }
        context.timeout = options.timeout;
        context.world->timeout = options.timeout;
      }
      return;
    }
    throw InvalidArgument("init_process_group: the default process group is already initialised");
  }
  if (std::getenv("RANKS_SIM_WORLD_SIZE") != nullptr && !options.store) {
    // Under `ranks sim` the ranks are fibers that ranks::main starts; a program that inits on
    // its own would look for a launcher that is not there.
    throw InvalidArgument(
        "init_process_group: this program runs under `ranks sim`, which simulates the ranks of "
        "a program built on ranks::main: `int main(int argc, char** argv) { return "
        "ranks::main(argc, argv, [] { ... }); }`, with init_process_group()/init_dist() (or "
        "nothing) inside that body");
  }
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  capabilities(backend);  // InvalidArgument for an unknown name
  if (options.timeout.count() <= 0) {
    throw InvalidArgument(fmt::format("init_process_group: timeout must be positive, got {} ms",
                                      options.timeout.count()));
  }
  const BackendCapabilities& rules = capabilities(backend);
  Membership m = membership(options, rules);
  backends::WorldSetup setup;
  setup.rank = m.rank;
  setup.world_size = m.world_size;
  setup.timeout = options.timeout;
  if (rules.rendezvous_through_store || options.store) {
    setup.store = make_store(options, m);
    if (!m.local_rank || !m.local_size) exchange_hosts(m, *setup.store);
    detail::publish_process(*setup.store, m.rank);
  }
  setup.local_rank = m.local_rank.value_or(m.rank);
  auto world_backend = backends::create_world(backend, setup);

  auto members = std::make_shared<std::vector<int>>(static_cast<size_t>(m.world_size));
  std::iota(members->begin(), members->end(), 0);
  auto world = detail::make_group_impl();
  world->spec = GroupSpec{std::move(members), m.rank, "world"};
  world->backend_name = backend;
  world->capabilities = &capabilities(backend);
  world->timeout = options.timeout;
  world->backend = std::move(world_backend);

  context.initialized = true;
  context.rank = m.rank;
  context.world_size = m.world_size;
  context.local_rank = m.local_rank.value_or(m.rank);
  context.local_size = m.local_size.value_or(m.world_size);
  context.backend_name = backend;
  context.timeout = options.timeout;
  context.store_host = options.store                             ? ""
                       : !m.agent_store_prefix.empty()             ? "torchrun's agent"
                       : options.init_method.starts_with("file://") ? ""
                                                                   : "rank 0";
  context.store = std::move(setup.store);
  context.world = std::move(world);
}

}  // namespace ranks
