#pragma once
// Where a server that the ranks of other nodes must reach listens: on one address of this host,
// never on every interface (where any network the host is on could reach it).

#include <string>

namespace ranks::launch {

// The address to listen on for clients that reach this host as `host` (MASTER_ADDR, or the
// host's own name):
//   - host as it is when it resolves here to an address that is not loopback;
//   - a loopback address ("127.0.0.1", "::1", "localhost") as it is: whoever was given it runs
//     on this host (several launchers of one job on one machine);
//   - for a name that resolves here to loopback only (Debian's /etc/hosts gives the host's own
//     name 127.0.1.1), while other hosts resolve it to the host's network address: the address
//     of the interface this host's default route leaves by.
// RendezvousError when the last case finds no route.
std::string listen_address_for(const std::string& host);

// Whether every address host resolves to here is a loopback one.
bool resolves_to_loopback_only(const std::string& host);

}  // namespace ranks::launch
