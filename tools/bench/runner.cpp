#include "runner.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "ranks/capabilities.hpp"
#include "ranks/ranks.hpp"
#include "values.hpp"

namespace ranks::bench {

namespace {

// One op's buffers, its call, and its check against values.hpp's formulas.
struct Case {
  std::function<void()> fill;
  std::function<void()> run;
  std::function<int64_t()> wrong;
};

// Untouched (empty) when no data moves, zeroed otherwise: uninitialised floats can be
// denormals or NaNs, which would slow a real reduction down.
Tensor buffer(int64_t count, const RunConfig& c, Device device) {
  return c.shapes_only ? Tensor::empty({count}, c.dtype, device)
                       : Tensor::zeros({count}, c.dtype, device);
}

// n consecutive slices of count elements each over one buffer (nccl-tests' layout for every
// list an op takes or fills); the slices borrow the buffer, so it lives as long as they do. One
// buffer, not n: with --shapes-only at 4,096 ranks, n separate pieces per rank were n^2
// allocations, each touching a page, where one large buffer stays untouched address space.
struct Slices {
  Tensor whole;
  std::vector<Tensor> parts;
};
std::shared_ptr<Slices> slices(int n, int64_t count, const RunConfig& c, Device device) {
  auto s = std::make_shared<Slices>();
  s->whole = buffer(n * count, c, device);
  auto* base = static_cast<char*>(s->whole.data_ptr());
  const size_t bytes = static_cast<size_t>(count) * dtype_size(c.dtype);
  for (int p = 0; p < n; ++p) {
    s->parts.push_back(
        Tensor::from_blob(base + static_cast<size_t>(p) * bytes, {count}, c.dtype, device));
  }
  return s;
}

// Host copies for filling and checking: comm_device() may be a GPU.
Tensor host(const Tensor& t) {
  return t.device().type == Device::Type::CPU ? t : t.to(Device::cpu());
}
void load(Tensor& t, int rank, int64_t first, ReduceOp op) {
  Tensor h = Tensor::zeros(t.shape(), t.dtype());
  fill(h, rank, first, op);
  t.copy_(t.device().type == Device::Type::CPU ? h : h.to(t.device()));
}

Case make_case(const BenchOp& op, const RunConfig& c, int64_t count) {
  const int n = get_world_size();
  const int r = get_rank();
  const Device device = comm_device();
  const ReduceOp rop = c.reduce_op;
  auto one = std::make_shared<Tensor>(buffer(count, c, device));
  auto reduced = [n, rop, dtype = c.dtype](int64_t i) { return reduced_value(n, i, rop, dtype); };
  switch (op.kind) {
    case OpKind::AllReduce:
      return {[=] { load(*one, r, 0, rop); }, [=] { all_reduce(*one, rop); },
              [=] { return count_wrong(host(*one), 0, reduced); }};
    case OpKind::Broadcast:
      return {[=] {
                if (r == 0) {
                  load(*one, 0, 0, rop);
                } else {
                  one->copy_(Tensor::zeros({count}, c.dtype, device));
                }
              },
              [=] { broadcast(*one, 0); },
              [=] {
                return count_wrong(host(*one), 0,
                                   [rop](int64_t i) { return input_value(0, i, rop); });
              }};
    case OpKind::Reduce:
      return {[=] { load(*one, r, 0, rop); }, [=] { reduce(*one, 0, rop); },
              [=] { return r == 0 ? count_wrong(host(*one), 0, reduced) : int64_t{0}; }};
    case OpKind::AllGather: {
      auto check = [n, rop](const std::vector<Tensor>& out) {
        int64_t wrong = 0;
        for (int k = 0; k < n; ++k) {
          wrong += count_wrong(host(out[static_cast<size_t>(k)]), 0,
                               [k, rop](int64_t i) { return input_value(k, i, rop); });
        }
        return wrong;
      };
      if (c.in_place) {
        // The whole output is one buffer; this rank's input is its own slice of it.
        auto out = slices(n, count, c, device);
        auto mine = std::make_shared<Tensor>(out->parts[static_cast<size_t>(r)]);
        return {[=] { load(*mine, r, 0, rop); },
                [=] { all_gather_async(out->parts, *mine).wait(); },
                [=] { return check(out->parts); }};
      }
      // Into an output list allocated once, as nccl-tests does: allocating it in every timed
      // call would time the allocator too.
      auto out = slices(n, count, c, device);
      return {[=] { load(*one, r, 0, rop); }, [=] { all_gather_async(out->parts, *one).wait(); },
              [=] { return check(out->parts); }};
    }
    case OpKind::ReduceScatter: {
      // In place, the whole input is one buffer and the output this rank's slice of it.
      auto in = slices(n, count, c, device);
      auto out = c.in_place ? std::make_shared<Tensor>(in->parts[static_cast<size_t>(r)]) : one;
      return {[=] {
                for (int p = 0; p < n; ++p)
                  load(in->parts[static_cast<size_t>(p)], r, p * count, rop);
              },
              [=] { reduce_scatter(*out, in->parts, rop); },
              [=] { return count_wrong(host(*out), r * count, reduced); }};
    }
    case OpKind::AllToAll: {
      auto in = slices(n, count, c, device);
      auto out = slices(n, count, c, device);
      return {[=] {
                for (int p = 0; p < n; ++p)
                  load(in->parts[static_cast<size_t>(p)], r, p * count, rop);
              },
              [=] { all_to_all(out->parts, in->parts); },
              [=] {
                int64_t wrong = 0;
                for (int s = 0; s < n; ++s) {
                  wrong += count_wrong(host(out->parts[static_cast<size_t>(s)]), r * count,
                                       [s, rop](int64_t i) { return input_value(s, i, rop); });
                }
                return wrong;
              }};
    }
    default: {  // sendrecv: a ring, each rank sends to the next and receives from the previous
      auto recv_buffer = std::make_shared<Tensor>(buffer(count, c, device));
      const int next = (r + 1) % n, previous = (r + n - 1) % n;
      return {[=] { load(*one, r, 0, rop); },
              [=] {
                Work sent = isend(*one, next);
                Work received = irecv(*recv_buffer, previous);
                sent.wait();
                received.wait();
              },
              [=] {
                return count_wrong(host(*recv_buffer), 0, [previous, rop](int64_t i) {
                  return input_value(previous, i, rop);
                });
              }};
    }
  }
}

double slowest(double seconds) {
  Tensor t = Tensor::of<double>({seconds});
  all_reduce(t, ReduceOp::Max);
  return t.item<double>();
}

int64_t total(int64_t wrong) {
  Tensor t = Tensor::of<int64_t>({wrong});
  all_reduce(t, ReduceOp::Sum);
  return t.item<int64_t>();
}

}  // namespace

bool runs_in_place(const BenchOp& op, const RunConfig& config) {
  switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::Broadcast:
    case OpKind::Reduce:
      return true;
    case OpKind::AllGather:
    case OpKind::ReduceScatter:
      return config.in_place;
    default:
      return false;
  }
}

std::string_view in_place_unsupported(const BenchOp& op, const RunConfig& config) {
  if (config.in_place && (op.kind == OpKind::AllToAll || op.kind == OpKind::Send)) {
    return "it has no in-place form here (an output that overlaps its input)";
  }
  return "";
}

Measurement measure(const BenchOp& op, const RunConfig& config, size_t requested_bytes) {
  Measurement m;
  m.shape = shape_for(op, requested_bytes, dtype_size(config.dtype), get_world_size());
  Case c = make_case(op, config, m.shape.piece_count);
  m.wrong = -1;
  if (config.check) {
    c.fill();
    c.run();
    m.wrong = total(c.wrong());
  }
  for (int i = 0; i < config.warmup; ++i) c.run();
  std::vector<double> blocks;
  for (int block = 0; block < std::max(1, config.repeats); ++block) {
    barrier();
    const auto start = now();
    for (int i = 0; i < config.iters; ++i) c.run();
    const auto elapsed = now() - start;
    blocks.push_back(
        slowest(std::chrono::duration<double>(elapsed).count() / std::max(1, config.iters)));
  }
  m.seconds = *std::min_element(blocks.begin(), blocks.end());
  return m;
}

}  // namespace ranks::bench
