#include "ranks/backends/registry.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <map>
#include <numeric>

#include "ranks/backends/plugin.hpp"
#include "ranks/config.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends {

namespace {

// "GLOO" for "gloo": the backend's name as its RANKS_WITH_ option spells it.
std::string upper_case(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// Where this libranks.so lies: its backends were built and installed beside it.
std::filesystem::path library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&create_world), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

// Loads libranks_<name>.so once per process and keeps it: its code runs for as long as any of its
// communicators lives. RTLD_GLOBAL because Open MPI's own components, which libmpi loads later,
// expect libmpi's symbols to be global (mpi4py loads libmpi the same way).
const PluginEntry& load_plugin(std::string_view name) {
  static std::map<std::string, const PluginEntry*, std::less<>> loaded;
  if (auto it = loaded.find(name); it != loaded.end()) return *it->second;
  const std::string file = fmt::format("libranks_{}.so", name);
  const std::filesystem::path beside = library_directory() / file;
  void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_GLOBAL);
  std::string why = handle == nullptr ? dlerror() : "";
  if (handle == nullptr) handle = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);  // library path
  if (handle == nullptr) {
    throw Unsupported(fmt::format(
        "backend '{}' was built but its library cannot be loaded: {} (and {} is not on the "
        "library path); install it beside libranks.so, or simulate the program with `ranks sim "
        "-n N --backend {}`",
        name, why, file, name));
  }
  const std::string symbol = fmt::format("ranks_backend_plugin_{}", name);
  auto entry_of = reinterpret_cast<const PluginEntry* (*)()>(dlsym(handle, symbol.c_str()));
  if (entry_of == nullptr) {
    throw Unsupported(fmt::format("{} is not a ranks backend: it has no {}", file, symbol));
  }
  const PluginEntry* entry = entry_of();
  if (std::string_view(entry->version) != RANKS_VERSION) {
    throw Unsupported(
        fmt::format("{} is from ranks {}, this libranks.so is {}: install both "
                    "from the same build",
                    file, entry->version, RANKS_VERSION));
  }
  loaded.emplace(std::string(name), entry);
  return *entry;
}

}  // namespace

std::vector<std::string> built() {
  std::vector<std::string> names;
  if (RANKS_HAS_GLOO) names.emplace_back("gloo");
  if (RANKS_HAS_MPI) names.emplace_back("mpi");
  if (RANKS_HAS_NCCL) names.emplace_back("nccl");
  return names;
}

bool is_built(std::string_view name) {
  for (const auto& b : built()) {
    if (b == name) return true;
  }
  return false;
}

std::unique_ptr<Backend> create_world(std::string_view name, const WorldSetup& setup) {
  if (is_built(name)) return std::unique_ptr<Backend>(load_plugin(name).create_world(setup));
  auto names = built();
  throw Unsupported(
      fmt::format("backend '{}' is not built into this ranks {} (built: {}); rebuild with "
                  "-DRANKS_WITH_{}=ON, or simulate the program with `ranks sim -n N --backend {}`",
                  name, RANKS_VERSION,
                  names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
                  upper_case(name),
                  name));
}

GroupSpec world_spec(std::string_view backend, const WorldSetup& setup,
                     std::string_view store_use) {
  if (setup.store == nullptr) {
    throw InvalidArgument(fmt::format(
        "{} backend: the world needs a store {} (TCPStore, FileStore, ...); none was given",
        backend, store_use));
  }
  if (setup.world_size < 1 || setup.rank < 0 || setup.rank >= setup.world_size) {
    throw InvalidArgument(fmt::format("{} backend: rank {} is out of range for world size {}",
                                      backend, setup.rank, setup.world_size));
  }
  if (setup.group) return *setup.group;
  auto members = std::make_shared<std::vector<int>>(static_cast<size_t>(setup.world_size));
  std::iota(members->begin(), members->end(), 0);
  return GroupSpec{std::move(members), setup.rank, "world"};
}

}  // namespace ranks::backends
