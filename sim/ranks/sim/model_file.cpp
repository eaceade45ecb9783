// Model files: the JSON a user writes by hand or `ranks calibrate` fits. Times are in
// microseconds and bandwidths in GB/s (1e9 B/s), the units nccl-tests prints, so a model file
// reads like a benchmark table.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ranks/capabilities.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::sim {

namespace {

using Json = nlohmann::ordered_json;

double seconds_from_us(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  double us = j.at(key).get<double>();
  if (!(us >= 0)) {
    throw InvalidArgument(fmt::format("cost model {}: {} must be >= 0, got {}", where, key, us));
  }
  return us * 1e-6;
}

// A missing or null bandwidth is unlimited (the op's bytes cost nothing).
double bps_from_gbps(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return unlimited;
  double gbps = j.at(key).get<double>();
  if (!(gbps > 0)) {
    throw InvalidArgument(fmt::format("cost model {}: {} must be > 0, got {}", where, key, gbps));
  }
  return gbps * 1e9;
}

Json gbps_or_null(double bps) { return std::isinf(bps) ? Json(nullptr) : Json(bps / 1e9); }

// A misspelt key ("alpa_us", "inetr") would otherwise leave its figure at its default: a free
// link or a zero latency, and a model that predicts nonsense without a word.
void only_keys(const Json& j, std::initializer_list<std::string_view> known,
               const std::string& where) {
  if (!j.is_object()) {
    throw InvalidArgument(
        fmt::format("cost model {}: expected an object, got {}", where, j.dump()));
  }
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw InvalidArgument(fmt::format("cost model {}: unknown key \"{}\" (known: {})", where, key,
                                        fmt::join(known, ", ")));
    }
  }
}

// An algorithm the op family has (or auto), named in the error with the file and op.
Algorithm algorithm_for(const Json& j, std::string_view family, const std::string& where) {
  const Algorithm a = parse_algorithm(j.value("algorithm", "auto"));
  const auto allowed = algorithms_for(family);
  if (a != Algorithm::Auto && std::find(allowed.begin(), allowed.end(), a) == allowed.end()) {
    std::vector<std::string_view> names;
    for (Algorithm x : allowed) names.push_back(algorithm_name(x));
    throw InvalidArgument(fmt::format("cost model {}: {} has no {} algorithm (it has auto, {})",
                                      where, family, algorithm_name(a), fmt::join(names, ", ")));
  }
  return a;
}

// A world size key of intra_by_world_size: a whole number >= 2 ("4x" and "-4" are not).
int world_size_key(const std::string& key, const std::string& where) {
  int n = 0;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), n);
  if (ec != std::errc() || end != key.data() + key.size() || n < 2) {
    throw InvalidArgument(
        fmt::format("cost model {}: world size \"{}\" must be a whole number >= 2", where, key));
  }
  return n;
}

Link parse_link(const Json& j, const std::string& where) {
  return Link{seconds_from_us(j, "alpha_us", where), bps_from_gbps(j, "beta_GBps", where)};
}

std::vector<Segment> parse_segments(const Json& list, std::string_view family,
                                    const std::string& where) {
  std::vector<Segment> segments;
  double previous = -1;
  if (!list.is_array()) {
    throw InvalidArgument(fmt::format("cost model {}: expected a list of size ranges", where));
  }
  for (const Json& s : list) {
    only_keys(s, {"up_to_bytes", "algorithm", "overhead_us", "alpha_us", "beta_GBps"}, where);
    Segment segment;
    if (s.contains("up_to_bytes") && !s.at("up_to_bytes").is_null()) {
      segment.up_to_bytes = s.at("up_to_bytes").get<double>();
    }
    if (segment.up_to_bytes <= previous) {
      throw InvalidArgument(fmt::format("cost model {}: up_to_bytes must increase", where));
    }
    previous = segment.up_to_bytes;
    segment.algorithm = algorithm_for(s, family, where);
    segment.overhead_s = seconds_from_us(s, "overhead_us", where);
    segment.alpha_s = seconds_from_us(s, "alpha_us", where);
    segment.beta_Bps = bps_from_gbps(s, "beta_GBps", where);
    segments.push_back(segment);
  }
  return segments;
}

Json segments_json(const std::vector<Segment>& segments) {
  Json list = Json::array();
  for (const Segment& s : segments) {
    list.push_back(
        {{"up_to_bytes", std::isinf(s.up_to_bytes) ? Json(nullptr) : Json(s.up_to_bytes)},
         {"algorithm", algorithm_name(s.algorithm)},
         {"overhead_us", s.overhead_s * 1e6},
         {"alpha_us", s.alpha_s * 1e6},
         {"beta_GBps", gbps_or_null(s.beta_Bps)}});
  }
  return list;
}

// The "nccl" object: the system NCCL runs on (NcclSystem), every key optional (defaults: HGX H100).
NcclSystem parse_nccl_system(const Json& j, const std::string& where) {
  only_keys(j,
            {"arch", "cpu", "gpus_per_node", "nvlink_links", "nvlink_link_GBps", "nvswitch", "nvls",
             "nics_per_node", "nic_Gbps", "latency_inter_us", "nvls_chunk_KiB", "launch_us",
             "latency_scale", "fill_chunk_KiB", "p2p_nvlink_efficiency", "p2p_net_efficiency"},
            where);
  NcclSystem s;
  auto one_of = [&](const char* key, std::string& field, std::initializer_list<std::string_view> allowed) {
    if (!j.contains(key)) return;
    field = j.at(key).get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), field) == allowed.end()) {
      throw InvalidArgument(fmt::format("cost model {}: {} '{}' is not one of {}", where, key,
                                        field, fmt::join(allowed, ", ")));
    }
  };
  auto whole = [&](const char* key, int& field, int least) {
    if (!j.contains(key)) return;
    field = j.at(key).get<int>();
    if (field < least) {
      throw InvalidArgument(
          fmt::format("cost model {}: {} must be >= {}, got {}", where, key, least, field));
    }
  };
  // Positive figures (or >= 0 where zero means "none"), and efficiencies at most 1.
  auto figure = [&](const char* key, double& field, bool zero_allowed, double most = unlimited) {
    if (!j.contains(key)) return;
    field = j.at(key).get<double>();
    if (!(zero_allowed ? field >= 0 : field > 0) || !(field <= most)) {
      throw InvalidArgument(fmt::format("cost model {}: {} must be {}{}, got {}", where, key,
                                        zero_allowed ? ">= 0" : "> 0",
                                        std::isinf(most) ? "" : fmt::format(" and <= {}", most),
                                        field));
    }
  };
  one_of("arch", s.arch, {"hopper", "ampere"});
  one_of("cpu", s.cpu, {"intel", "amd"});
  whole("gpus_per_node", s.gpus_per_node, 1);
  whole("nvlink_links", s.nvlink_links, 1);
  figure("nvlink_link_GBps", s.nvlink_link_GBps, false);
  s.nvswitch = j.value("nvswitch", s.nvswitch);
  s.nvls = j.value("nvls", s.nvls);
  whole("nics_per_node", s.nics_per_node, 1);
  figure("nic_Gbps", s.nic_Gbps, false);
  figure("latency_inter_us", s.latency_inter_us, true);
  figure("nvls_chunk_KiB", s.nvls_chunk_KiB, true);
  figure("launch_us", s.launch_us, true);
  figure("latency_scale", s.latency_scale, false);
  figure("fill_chunk_KiB", s.fill_chunk_KiB, true);
  figure("p2p_nvlink_efficiency", s.p2p_nvlink_efficiency, false, 1.0);
  figure("p2p_net_efficiency", s.p2p_net_efficiency, false, 1.0);
  if (s.nvls && !s.nvswitch) {
    throw InvalidArgument(fmt::format("cost model {}: nvls needs nvswitch", where));
  }
  return s;
}

Json nccl_system_json(const NcclSystem& s) {
  return {{"arch", s.arch},
          {"cpu", s.cpu},
          {"gpus_per_node", s.gpus_per_node},
          {"nvlink_links", s.nvlink_links},
          {"nvlink_link_GBps", s.nvlink_link_GBps},
          {"nvswitch", s.nvswitch},
          {"nvls", s.nvls},
          {"nics_per_node", s.nics_per_node},
          {"nic_Gbps", s.nic_Gbps},
          {"latency_inter_us", s.latency_inter_us},
          {"nvls_chunk_KiB", s.nvls_chunk_KiB},
          {"launch_us", s.launch_us},
          {"latency_scale", s.latency_scale},
          {"fill_chunk_KiB", s.fill_chunk_KiB},
          {"p2p_nvlink_efficiency", s.p2p_nvlink_efficiency},
          {"p2p_net_efficiency", s.p2p_net_efficiency}};
}

}  // namespace

CostModel parse_cost_model(const std::string& json_text, const std::string& origin) {
  try {
    Json j = Json::parse(json_text);
    only_keys(j, {"name", "description", "backend", "sources", "links", "ops", "nccl"}, origin);
    CostModel model;
    model.name = j.value("name", origin);
    model.description = j.value("description", "");
    model.backend = j.value("backend", "");
    const auto backends = backend_names();
    if (!model.backend.empty() &&
        std::find(backends.begin(), backends.end(), model.backend) == backends.end()) {
      throw InvalidArgument(fmt::format("cost model {}: backend '{}' is not one of {}", origin,
                                        model.backend, fmt::join(backends, ", ")));
    }
    if (j.contains("sources")) model.sources = j.at("sources").get<std::vector<std::string>>();
    const Json links = j.value("links", Json::object());
    only_keys(links, {"intra", "inter"}, origin + " links");
    if (links.contains("intra")) {
      only_keys(links.at("intra"), {"alpha_us", "beta_GBps"}, origin + " intra");
      model.intra = parse_link(links.at("intra"), origin + " intra");
    }
    if (links.contains("inter")) {
      only_keys(links.at("inter"), {"alpha_us", "beta_GBps", "rails"}, origin + " inter");
      model.inter = parse_link(links.at("inter"), origin + " inter");
      model.inter_rails = links.at("inter").value("rails", 1);
      if (model.inter_rails < 1) {
        throw InvalidArgument(fmt::format("cost model {} inter: rails must be >= 1, got {}", origin,
                                          model.inter_rails));
      }
    }
    const Json ops = j.value("ops", Json::object());
    for (const auto& [family, op] : ops.items()) {
      algorithms_for(family);  // rejects unknown families
      const std::string where = origin + " " + family;
      only_keys(op, {"algorithm", "intra", "inter", "intra_by_world_size", "inter_by_world_size"},
                where);
      OpModel m;
      m.algorithm = algorithm_for(op, family, where);
      if (op.contains("intra")) m.intra = parse_segments(op.at("intra"), family, where);
      if (op.contains("inter")) m.inter = parse_segments(op.at("inter"), family, where);
      for (auto [key, target] : {std::pair{"intra_by_world_size", &m.intra_at},
                                 std::pair{"inter_by_world_size", &m.inter_at}}) {
        if (!op.contains(key)) continue;
        for (const auto& [n, list] : op.at(key).items()) {
          (*target)[world_size_key(n, where + " " + key)] =
              parse_segments(list, family, where + " n=" + n);
        }
      }
      model.ops.emplace(family, std::move(m));
    }
    if (j.contains("nccl")) model.nccl = parse_nccl_system(j.at("nccl"), origin + " nccl");
    return model;
  } catch (const Json::exception& e) {
    throw InvalidArgument(fmt::format("cost model {}: {}", origin, e.what()));
  }
}

std::string to_json(const CostModel& model) {
  Json j;
  j["name"] = model.name;
  j["description"] = model.description;
  if (!model.backend.empty()) j["backend"] = model.backend;
  j["sources"] = model.sources;
  j["links"] = {{"intra",
                 {{"alpha_us", model.intra.alpha_s * 1e6},
                  {"beta_GBps", gbps_or_null(model.intra.beta_Bps)}}},
                {"inter",
                 {{"alpha_us", model.inter.alpha_s * 1e6},
                  {"beta_GBps", gbps_or_null(model.inter.beta_Bps)}}}};
  if (model.inter_rails > 1) j["links"]["inter"]["rails"] = model.inter_rails;
  Json ops = Json::object();
  for (const auto& [family, op] : model.ops) {
    Json o = {{"algorithm", algorithm_name(op.algorithm)}};
    if (!op.intra.empty()) o["intra"] = segments_json(op.intra);
    if (!op.inter.empty()) o["inter"] = segments_json(op.inter);
    for (auto [key, source] : {std::pair{"intra_by_world_size", &op.intra_at},
                               std::pair{"inter_by_world_size", &op.inter_at}}) {
      if (source->empty()) continue;
      Json by_n = Json::object();
      for (const auto& [n, list] : *source) by_n[std::to_string(n)] = segments_json(list);
      o[key] = by_n;
    }
    ops[family] = o;
  }
  j["ops"] = ops;
  if (model.nccl) j["nccl"] = nccl_system_json(*model.nccl);
  return j.dump(2) + "\n";
}

CostModel load_cost_model(const std::string& preset_or_path) {
  for (std::string_view preset : cost_model_presets()) {
    if (preset == preset_or_path) return cost_model_preset(preset);
  }
  if (std::filesystem::is_directory(preset_or_path)) {
    throw InvalidArgument(
        fmt::format("cost model '{}' is a directory, not a model file (JSON)", preset_or_path));
  }
  std::ifstream in(preset_or_path);
  if (!in) {
    throw InvalidArgument(
        fmt::format("cost model '{}' is neither a preset ({}) nor a readable file", preset_or_path,
                    fmt::join(cost_model_presets(), ", ")));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_cost_model(text.str(), std::filesystem::path(preset_or_path).filename().string());
}

}  // namespace ranks::sim
