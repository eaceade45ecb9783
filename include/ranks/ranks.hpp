#pragma once
// The whole public API of ranks. The simulator's programmatic interface is <ranks/sim.hpp>.

#include "ranks/capabilities.hpp"
#include "ranks/collectives.hpp"
#include "ranks/device.hpp"
#include "ranks/dtype.hpp"
#include "ranks/errors.hpp"
#include "ranks/group.hpp"
#include "ranks/init.hpp"
#include "ranks/main.hpp"
#include "ranks/objects.hpp"
#include "ranks/reduce_op.hpp"
#include "ranks/store.hpp"
#include "ranks/store/stores.hpp"
#include "ranks/tensor.hpp"
#include "ranks/work.hpp"
