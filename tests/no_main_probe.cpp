// A program that initialises on its own instead of inside ranks::main: under `ranks sim` it is
// told why it cannot be simulated, instead of dying on a bare signal.
//   ranks sim -n 2 -- no_main_probe   -> "... simulates the ranks of a program built on ranks::main"

#include <ranks/ranks.hpp>

int main() {
  ranks::init_dist("pytorch", "gloo");
  auto t = ranks::Tensor::of<float>({1.0f});
  ranks::all_reduce(t);
}
