#pragma once
// Every store: TCPStore (and its server), FileStore, HashStore, PrefixStore. The interface they
// share is ranks/store.hpp.

#include "ranks/store.hpp"
#include "ranks/store/defaults.hpp"
#include "ranks/store/file_store.hpp"
#include "ranks/store/hash_store.hpp"
#include "ranks/store/key_count.hpp"
#include "ranks/store/prefix_store.hpp"
#include "ranks/store/tcp_store.hpp"
#include "ranks/store/tcp_store_options.hpp"
#include "ranks/store/tcp_store_server.hpp"
