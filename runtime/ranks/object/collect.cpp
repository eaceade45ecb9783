#include "ranks/object/collect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>

#include "ranks/capabilities.hpp"
#include "ranks/init.hpp"
#include "ranks/objects.hpp"

namespace ranks::object {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view marker_name = ".made-by-rank-0";

std::string where_text(where_t where) {
  return fmt::format("{}:{}", fs::path(where.file_name()).filename().string(), where.line());
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

fs::path part_path(const fs::path& dir, int rank) { return dir / fmt::format("part_{}.bin", rank); }

// What rank 0 tells the others: the directory, the token in its marker file, its host, or why it
// could not make one.
struct Announcement {
  std::string dir;
  std::string token;
  std::string host;
  std::string error;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(dir, token, host, error);
  }
};

// base and its missing parents. A directory this makes is the user's alone (0700, as each
// call's own under it is, from mkdtemp); one that exists is left as it is: a shared tmpdir is
// the caller's choice.
void make_private_directories(const fs::path& base) {
  fs::path made;
  for (const fs::path& part : fs::absolute(base)) {
    made /= part;
    if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST) {
      throw fs::filesystem_error("mkdir", made, std::error_code(errno, std::generic_category()));
    }
  }
}

Announcement make_directory(const std::optional<fs::path>& tmpdir) {
  Announcement a;
  a.host = hostname();
  const fs::path base = tmpdir.value_or(fs::path(".dist_test"));
  try {
    make_private_directories(base);
    std::string pattern = (fs::absolute(base) / "collect-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw fs::filesystem_error("mkdtemp", fs::path(pattern),
                                 std::error_code(errno, std::generic_category()));
    }
    a.dir = pattern;
    std::random_device entropy;
    a.token = fmt::format("{:08x}{:08x}", entropy(), entropy());
    std::ofstream marker(fs::path(a.dir) / marker_name);
    marker << a.token;
    if (!marker.flush()) throw std::runtime_error("cannot write the marker file");
  } catch (const std::exception& e) {
    a.error = fmt::format("rank 0 (host {}) could not make a directory under '{}': {}", a.host,
                          base.string(), e.what());
  }
  return a;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Empty when this rank sees rank 0's directory and wrote its part there; otherwise what went
// wrong, for every rank's message.
std::string write_part(const Announcement& a, const Bytes& mine, int rank) {
  const fs::path dir(a.dir);
  if (read_file(dir / marker_name) != a.token) {
    return fmt::format(
        "rank {} (host {}) does not see the directory {} that rank 0 (host {}) made: tmpdir must "
        "be on a filesystem every rank shares at the same path; pass such a tmpdir, or use "
        "device=\"gpu\"",
        rank, hostname(), a.dir, a.host);
  }
  // Written under a temporary name and renamed, so a part is either whole or absent.
  const fs::path final_path = part_path(dir, rank);
  const fs::path temporary = fs::path(final_path).concat(".partial");
  std::ofstream out(temporary, std::ios::binary);
  out.write(reinterpret_cast<const char*>(mine.data()), static_cast<std::streamsize>(mine.size()));
  if (!out.flush()) {
    return fmt::format("rank {} (host {}) could not write {}: {}", rank, hostname(),
                       temporary.string(), std::strerror(errno));
  }
  out.close();
  std::error_code ec;
  fs::rename(temporary, final_path, ec);
  if (ec) {
    return fmt::format("rank {} (host {}) could not rename its part to {}: {}", rank, hostname(),
                       final_path.string(), ec.message());
  }
  return {};
}

Bytes read_part(const fs::path& dir, int rank) {
  const fs::path path = part_path(dir, rank);
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    throw Error(fmt::format("collect_results: the part of rank {} is missing from {}: {}", rank,
                            dir.string(), ec.message()));
  }
  check_announced_size(size, fmt::format("rank {}'s part file", rank), "collect_results");
  Bytes bytes(size);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size) {
    throw Error(fmt::format("collect_results: could not read {} ({} of {} bytes)", path.string(),
                            in.gcount(), size));
  }
  return bytes;
}

// Rank 0's cleanup, however collect_results leaves: the call's own directory, then tmpdir (or the
// default ./.dist_test) too when nothing else is in it. MMEngine deletes tmpdir whatever it holds
// (its test checks that tmpdir is gone); removing it only when empty gives the same result for a
// tmpdir made for the call and never deletes files that are not the call's.
struct RemoveOnExit {
  fs::path dir;
  std::optional<fs::path> tmpdir;
  ~RemoveOnExit() {
    std::error_code ignored;
    if (dir.empty()) return;
    fs::remove_all(dir, ignored);
    if (tmpdir) fs::remove(*tmpdir, ignored);  // fails, harmlessly, unless tmpdir is empty
  }
};

}  // namespace

void check_collect_args(std::string_view device, const std::optional<fs::path>& tmpdir,
                        where_t where) {
  if (device != "cpu" && device != "gpu") {
    throw InvalidArgument(fmt::format(
        "collect_results at {}: device is '{}'; it must be \"cpu\" (through a shared directory) "
        "or \"gpu\" (through the network)",
        where_text(where), device));
  }
  if (device == "gpu" && tmpdir) {
    throw InvalidArgument(fmt::format(
        "collect_results at {}: device \"gpu\" collects through the network and takes no tmpdir "
        "(got '{}')",
        where_text(where), tmpdir->string()));
  }
}

void collect_through_directory(Bytes mine, const std::optional<fs::path>& tmpdir,
                               const std::function<void(int, std::span<const uint8_t>)>& consume,
                               where_t where) {
  const int rank = get_rank();
  std::vector<Announcement> announcement(1);
  if (rank == 0) announcement[0] = make_directory(tmpdir);
  broadcast_object_list(announcement, 0, Group{}, where);
  const Announcement& a = announcement[0];
  if (!a.error.empty()) {
    throw Error(fmt::format("collect_results at {}: {}", where_text(where), a.error));
  }
  RemoveOnExit cleanup{rank == 0 ? fs::path(a.dir) : fs::path(),
                       tmpdir.value_or(fs::path(".dist_test"))};

  const std::string mine_status = write_part(a, mine, rank);
  mine = Bytes{};  // the part is on disk now; rank 0 reads it back with the others
  // How many ranks failed to write their part, on every rank alike; what went wrong is gathered
  // only then (every rank's status to every rank costs N² at scale, and is nearly always empty).
  Tensor failed = Tensor::of<int64_t>({mine_status.empty() ? 0 : 1}, comm_device());
  all_reduce(failed, ReduceOp::Sum, Group{}, where);
  const Tensor failed_on_host =
      failed.device().type == Device::Type::CPU ? failed : failed.to(Device::cpu());
  if (*static_cast<const int64_t*>(failed_on_host.data_ptr()) > 0) {
    std::vector<std::string> problems;
    for (std::string& s : all_gather_object(mine_status, Group{}, where)) {
      if (!s.empty()) problems.push_back(std::move(s));
    }
    throw Error(
        fmt::format("collect_results at {}: {}", where_text(where), fmt::join(problems, "; ")));
  }
  if (rank != 0) return;
  for (int r = 0; r < get_world_size(); ++r) {
    Bytes part = read_part(a.dir, r);
    consume(r, part);
  }
}

}  // namespace ranks::object
