#include "ranks/backends/gloo/backend.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gloo/alltoall.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/context.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string_view>

#include "ranks/backends/gloo/work.hpp"
#include "ranks/backends/join.hpp"
#include "ranks/backends/plugin.hpp"
#include "ranks/real/fatal.hpp"
#include "ranks/errors.hpp"
#include "ranks/store/stores.hpp"

namespace ranks::backends::gloo {

namespace detail {
namespace {

constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);
// The tag of the exchange that completes the mesh; ops use their sequence number, which starts
// at 0 and does not reach this.
constexpr uint32_t kConnectTag = 0xffffffff;

// gloo's rendezvous speaks gloo::rendezvous::Store; this forwards it to ours, so gloo's keys live
// in the job's store (under the group's prefix) and every wait has our deadline.
class StoreAdapter final : public ::gloo::rendezvous::Store {
 public:
  // What every rank of the job puts before each value it writes for gloo: a value without it is
  // not the job's (the store's data was tampered with), which gloo itself would decode as an
  // address and fail on with a message that does not say so.
  static constexpr std::string_view kMark = "ranks/gloo 1\n";

  StoreAdapter(std::shared_ptr<ranks::Store> store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    std::vector<uint8_t> value(kMark.size() + data.size());
    std::memcpy(value.data(), kMark.data(), kMark.size());
    if (!data.empty()) std::memcpy(value.data() + kMark.size(), data.data(), data.size());
    store_->set(key, value);
    seen_[key] = data;
  }
  std::vector<char> get(const std::string& key) override {
    store_->wait({key}, timeout_);  // our deadline rather than the store's own
    std::vector<uint8_t> value = store_->get(key);
    if (value.size() < kMark.size() || !std::equal(kMark.begin(), kMark.end(), value.begin())) {
      throw RendezvousError(fmt::format(
          "the rendezvous data under key '{}' was not the job's: every rank of the job writes "
          "its keys with a mark this value lacks, so another program wrote it to the job's store "
          "(a store without a secret lets anyone who reaches it write; ranks run gives it one, "
          "or set RANKS_STORE_TOKEN or RANKS_STORE_TOKEN_FILE)",
          key));
    }
    return seen_[key] = std::vector<char>(value.begin() + static_cast<std::ptrdiff_t>(kMark.size()),
                                          value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

  // A value gloo set or got, or null.
  const std::vector<char>* seen(const std::string& key) const {
    auto it = seen_.find(key);
    return it == seen_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, std::vector<char>> seen_;
  std::shared_ptr<ranks::Store> store_;
  std::chrono::milliseconds timeout_;
};

// gloo writes to its sockets with writev, so a write to a peer that has died raises SIGPIPE,
// whose default action kills this rank before gloo can report the broken connection. Ignore it
// unless the program has its own handler.
void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
}

// gloo checks what arrives on its own network thread, where nothing of ours can catch what it
// throws: a message longer than the buffer posted for it (a recv into a smaller tensor than the
// sender's, or ranks passing different sizes to a collective) ends the process in
// std::terminate with gloo's assertion text. This handler says what that means, and leaves as
// an uncaught error of a rank leaves (detail::exit_on: the message, the job's first failure,
// exit status 1) instead of SIGABRT. Anything else goes to the handler it replaced.
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void leave_for_gloo(const std::string& text) {
  size_t got = 0, room = 0;
  const std::string_view check = "op.preamble.length <= op.nbytes. ";
  const size_t at = text.find(check);
  std::string meaning = "gloo's network thread failed";
  if (at != std::string::npos &&
      std::sscanf(text.c_str() + at + check.size(), "%zu vs %zu", &got, &room) == 2) {
    meaning = fmt::format(
        "a message of {} bytes arrived for a receive of {} bytes: the sender's tensor is larger "
        "than this rank's (a recv into a smaller tensor, or ranks passing different sizes to one "
        "collective; RANKS_DEBUG=detail checks every collective's sizes first)",
        got, room);
  }
  ranks::detail::exit_on(BackendError(fmt::format("{} (gloo: {})", meaning, text)));
}

[[noreturn]] void on_terminate() {
  if (std::exception_ptr thrown = std::current_exception()) {
    try {
      std::rethrow_exception(thrown);
    } catch (const ::gloo::EnforceNotMet& e) {
      leave_for_gloo(e.what());
    } catch (const ::gloo::Exception& e) {
      leave_for_gloo(e.what());
    } catch (...) {
    }
  }
  if (previous_terminate != nullptr) previous_terminate();
  std::abort();
}

void report_network_thread_failures() {
  static std::once_flag once;
  std::call_once(once, [] { previous_terminate = std::set_terminate(on_terminate); });
}

// The one TCP device of this process (see backend.hpp for the choice of address).
std::shared_ptr<::gloo::transport::Device> open_device() {
  ::gloo::transport::tcp::attr attr;
  for (const char* variable : {"RANKS_GLOO_IFACE", "GLOO_SOCKET_IFNAME"}) {
    const char* iface = std::getenv(variable);
    if (iface == nullptr || *iface == '\0') continue;
    attr.iface = iface;
    try {
      return ::gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception& e) {
      throw InvalidArgument(
          fmt::format("gloo backend: cannot open a TCP device on interface '{}' (from {}): {}",
                      iface, variable, e.what()));
    }
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') {
    attr.hostname = host;
    try {
      return ::gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception&) {
      // The name does not resolve to an address of this host: fall back to loopback.
    }
  }
  ::gloo::transport::tcp::attr loopback;
  loopback.hostname = "127.0.0.1";
  return ::gloo::transport::tcp::CreateDevice(loopback);
}

// How gloo prints an address: "[ip]:port". Debian's gloo prints the port field as stored (in
// network byte order); raw_port=false gives the converted number, as a fixed gloo would.
std::string gloo_address(const sockaddr_storage& ss, bool raw_port) {
  char ip[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    port = in->sin_port;
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    port = in6->sin6_port;
  }
  if (!raw_port) port = ntohs(port);
  return fmt::format("[{}]:{}", ip, port);
}

// gloo names a broken connection by the far end's address as it knows it ("Connection closed by
// peer [ip]:port"): the address the peer's pair listened on before connecting, which the peer
// published in gloo's rendezvous (key "<rank>": one address per other rank, in rank order), or,
// in gloos that refresh it once connected, the peer's current pair address, which each rank
// publishes here. Both become aliases of the peer, so an IoException can be traced to a rank.
std::vector<std::pair<int, std::string>> exchange_endpoints(
    StoreAdapter& adapter, const std::shared_ptr<::gloo::Context>& context, const GroupSpec& spec,
    std::chrono::milliseconds timeout) {
  const int n = spec.size();
  // gloo finishes connecting in the background: one byte to and from every peer first, so that
  // every pair address is final (which also proves the mesh before the first op).
  std::vector<uint8_t> out(static_cast<size_t>(n));
  std::vector<uint8_t> in(out.size());
  ::gloo::AlltoallOptions options(context);
  options.setInput(out.data(), out.size());
  options.setOutput(in.data(), in.size());
  options.setTag(kConnectTag);
  options.setTimeout(timeout);
  ::gloo::alltoall(options);

  std::string mine;
  for (int j = 0; j < n; ++j) {
    if (j != spec.rank) mine += context->getPair(j)->address().str();
    mine += '\n';
  }
  adapter.set(fmt::format("endpoints/{}", spec.rank), std::vector<char>(mine.begin(), mine.end()));
  std::vector<std::pair<int, std::string>> aliases;
  for (int j = 0; j < n; ++j) {
    if (j == spec.rank) continue;
    std::vector<char> theirs = adapter.get(fmt::format("endpoints/{}", j));
    std::istringstream lines(std::string(theirs.begin(), theirs.end()));
    std::string line;
    for (int k = 0; std::getline(lines, line); ++k) {
      if (k == spec.rank && !line.empty()) aliases.emplace_back(j, line);
    }
    const std::vector<char>* listened = adapter.seen(std::to_string(j));
    if (listened == nullptr || listened->size() % static_cast<size_t>(n - 1) != 0) continue;
    const size_t chunk = listened->size() / static_cast<size_t>(n - 1);
    const size_t index = static_cast<size_t>(spec.rank < j ? spec.rank : spec.rank - 1);
    sockaddr_storage ss{};
    std::memcpy(&ss, listened->data() + index * chunk, std::min(chunk, sizeof(ss)));
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) continue;
    aliases.emplace_back(j, gloo_address(ss, true));
    aliases.emplace_back(j, gloo_address(ss, false));
  }
  return aliases;
}

// One gloo context over the shared device, connected as a full mesh through store, plus the
// aliases its error messages may name each peer by.
struct Mesh {
  std::shared_ptr<::gloo::Context> context;
  std::vector<std::pair<int, std::string>> endpoints;
};

Mesh connect_mesh(const std::shared_ptr<PrefixStore>& store, const GroupSpec& spec,
                  std::shared_ptr<::gloo::transport::Device> device,
                  std::chrono::milliseconds timeout) {
  auto context = std::make_shared<::gloo::rendezvous::Context>(spec.rank, spec.size());
  context->setTimeout(timeout);
  StoreAdapter adapter(store, timeout);
  context->connectFullMesh(adapter, device);
  auto endpoints = exchange_endpoints(adapter, context, spec, timeout);
  return {std::move(context), std::move(endpoints)};
}

// Connects this member of spec to the others: a gloo context over the shared device, its
// rendezvous keys under "gloo/<group name>" so that no two groups' keys clash. A group of two
// gets a second context, the reverse lane (see Communicator::reverse_lane).
std::shared_ptr<Communicator> connect(const GroupSpec& spec,
                                      const std::shared_ptr<ranks::Store>& root_store,
                                      std::shared_ptr<::gloo::transport::Device> device,
                                      std::chrono::milliseconds timeout) {
  auto store = std::make_shared<PrefixStore>("gloo/" + spec.name, root_store);
  const std::string who = fmt::format("gloo rendezvous of group '{}' (rank {} of {})", spec.name,
                                      spec.rank, spec.size());
  join_members(*store, spec, timeout, who);
  try {
    Mesh mesh = connect_mesh(store, spec, device, timeout);
    std::shared_ptr<::gloo::Context> reverse;
    if (spec.size() == 2) {
      Mesh lane =
          connect_mesh(std::make_shared<PrefixStore>("reverse", store), spec, device, timeout);
      reverse = std::move(lane.context);
      mesh.endpoints.insert(mesh.endpoints.end(), lane.endpoints.begin(), lane.endpoints.end());
    }
    return std::make_shared<Communicator>(spec, std::move(mesh.context), std::move(reverse),
                                          std::move(mesh.endpoints), timeout);
  } catch (const std::exception& e) {
    throw RendezvousError(fmt::format("{}: connecting the ranks failed: {}", who, e.what()));
  }
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(std::shared_ptr<Communicator> comm, std::shared_ptr<ranks::Store> store,
              std::shared_ptr<::gloo::transport::Device> device, std::chrono::milliseconds timeout)
      : comm_(std::move(comm)),
        store_(std::move(store)),
        device_(std::move(device)),
        timeout_(timeout) {}

  ~GlooBackend() override {
    // Collectives nobody waited for would otherwise hold the queue until their deadline.
    if (int pending = comm_->in_flight(); pending > 0) {
      comm_->abandon(fmt::format("group '{}' was destroyed with {} collective(s) in flight",
                                 comm_->spec().name, pending));
    }
    queue_->stop();
  }

  std::string_view name() const override { return "gloo"; }

  Work submit(OpRequest&& request) override {
    switch (request.kind) {
      case OpKind::Send:
      case OpKind::Recv:
        return Work(std::make_shared<PointToPointWork>(comm_, std::move(request)));
      default: {
        const bool blocking = request.blocking;
        auto work = std::make_shared<CollectiveWork>(comm_, queue_, std::move(request));
        comm_->add_in_flight();
        // The caller waits at once: running it here spares waking the queue's thread and then
        // being woken by it, which costs more than a small collective itself.
        if (blocking && queue_->run_now(*work)) {
          work->complete();
        } else {
          queue_->post(work);
        }
        return Work(work);
      }
    }
  }

  std::unique_ptr<Backend> create_subgroup(const GroupSpec& spec) override {
    if (spec.rank < 0) return nullptr;
    return std::make_unique<GlooBackend>(connect(spec, store_, device_, timeout_), store_, device_,
                                         timeout_);
  }

 private:
  const std::shared_ptr<Communicator> comm_;
  const std::shared_ptr<ranks::Store> store_;  // the job's store, for sub-groups' rendezvous
  const std::shared_ptr<::gloo::transport::Device> device_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<RunQueue> queue_ = std::make_shared<RunQueue>();
};

}  // namespace
}  // namespace detail

std::unique_ptr<Backend> create_world(const WorldSetup& setup) {
  GroupSpec spec = world_spec("gloo", setup, "for rendezvous");
  if (spec.rank < 0) return nullptr;  // a side group this rank is not in
  const auto timeout = setup.timeout.count() > 0 ? setup.timeout : detail::kDefaultTimeout;
  detail::ignore_sigpipe();
  detail::report_network_thread_failures();
  auto device = detail::open_device();
  auto comm = detail::connect(spec, setup.store, device, timeout);
  return std::make_unique<detail::GlooBackend>(std::move(comm), setup.store, std::move(device),
                                               timeout);
}

}  // namespace ranks::backends::gloo

RANKS_BACKEND_PLUGIN(gloo)
