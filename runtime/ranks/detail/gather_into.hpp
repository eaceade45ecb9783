#pragma once
// Blocking all_gather and gather into outputs the caller provides. The public API has these only
// as async ops (whose Work may take a backend's slower asynchronous path); object collectives
// (object/exchange.cpp) receive into adjacent slots of one block of their own.

#include <vector>

#include "ranks/collectives.hpp"

namespace ranks::detail {

void all_gather_into(std::vector<Tensor>& out, const Tensor& in, const Group& group, where_t where);
// out is empty on every rank but dst.
void gather_into(std::vector<Tensor>& out, const Tensor& in, int dst, const Group& group,
                 where_t where);

}  // namespace ranks::detail
