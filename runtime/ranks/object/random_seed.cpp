#include "ranks/capabilities.hpp"
#include "ranks/context.hpp"
#include "ranks/objects.hpp"

namespace ranks {

int64_t sync_random_seed(const Group& group, where_t where) {
  // Every rank draws, as in MMEngine, so each rank's generator advances alike whatever its rank.
  const auto draw = static_cast<int32_t>(current().rng.next() >> 33);  // [0, 2^31)
  if (object::alone_in(group, "sync_random_seed", where)) return draw;
  Tensor seed = Tensor::of<int32_t>({get_rank(group) == 0 ? draw : 0}, comm_device());
  detail::ObjectCallScope call("sync_random_seed", group, where);
  detail::CarryingObjects carrying;
  broadcast(seed, 0, group, where);
  return seed.to(Device::cpu()).item<int32_t>();
}

}  // namespace ranks
