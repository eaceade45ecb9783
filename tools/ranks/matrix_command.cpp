// `ranks matrix [--backend B]`: the support matrix of one backend or all, as markdown, and which
// real backends this build has.

#include <cstdio>
#include <string>

#include "commands.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/config.hpp"

namespace ranks::cli {

Command add_matrix_command(CLI::App& app) {
  auto backend = std::make_shared<std::string>();
  CLI::App* matrix = app.add_subcommand("matrix", "print what each backend supports (markdown)");
  matrix->add_option("--backend", *backend, "one backend (default: all)")
      ->check(CLI::IsMember(backend_choices()));
  return [backend] {
    std::string out = "## ranks backend support matrix\n\n";
    out +=
        "✓: supported; ✓ (staged): through a copy to the backend's device and back; ✘: an "
        "Unsupported error (also under `ranks sim --backend B`).\n\n";
    for (std::string_view name : backend_names()) {
      if (!backend->empty() && *backend != name) continue;
      out += capabilities(name).to_markdown() + "\n";
    }
    out += "built real backends:";
    out += RANKS_HAS_GLOO ? " gloo" : "";
    out += RANKS_HAS_MPI ? " mpi" : "";
    out += RANKS_HAS_NCCL ? " nccl" : "";
    out += RANKS_HAS_GLOO || RANKS_HAS_MPI || RANKS_HAS_NCCL ? "\n" : " none (simulator only)\n";
    out += "nccl: " RANKS_NCCL_STATUS "\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  };
}

}  // namespace ranks::cli
