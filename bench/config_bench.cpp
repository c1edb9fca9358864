// How long reading a config takes as one of its lists grows: a YAML list of
// 100k items took 35 s to `tidemark check` (25k: 1.5 s, 50k: 6.4 s), quadratic. Times
// check_config on a postgres cursor and on a destinations list of SMALL and LARGE items, in one
// process, and prints each time and the LARGE / SMALL ratio: about LARGE / SMALL (4 for the
// defaults) when reading is linear, its square (16) when quadratic. Exits 1 when a ratio
// exceeds twice the linear one, so that a script or a reviewer can run it as a check.
//   config_bench [SMALL LARGE]        (defaults 25000 100000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/config/config.hpp"

namespace {

std::string cursor_config(long items) {
  std::string yaml = "pipelines:\n  p:\n    source:\n      kind: postgres\n      url_env: SOURCE_URL\n"
                     "      table: public.orders\n      cursor:\n";
  for (long i = 0; i < items; ++i) yaml += "        - c" + std::to_string(i) + "\n";
  return yaml;
}

std::string destinations_config(long items) {
  std::string yaml = "pipelines:\n  p:\n    source: {path: in.csv}\n    destinations:\n";
  for (long i = 0; i < items; ++i) {
    yaml += "      - {name: d" + std::to_string(i) + ", kind: http, url: http://127.0.0.1:9/x, secret_env: S}\n";
  }
  return yaml;
}

// Seconds check_config takes on `yaml`; exits when the file does not read without errors.
double seconds_to_check(const std::string& yaml) {
  const auto start = std::chrono::steady_clock::now();
  const auto check = tidemark::app::config::check_config(yaml, "bench.yaml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!check.errors.empty()) {
    std::fprintf(stderr, "config_bench: %s\n", check.errors.front().c_str());
    std::exit(2);
  }
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const long small = argc > 2 ? std::atol(argv[1]) : 25'000;
  const long large = argc > 2 ? std::atol(argv[2]) : 100'000;
  if (small < 1 || large <= small) {
    std::fprintf(stderr, "usage: config_bench [SMALL LARGE] (1 <= SMALL < LARGE)\n");
    return 2;
  }
  const double linear = static_cast<double>(large) / static_cast<double>(small);
  bool within = true;
  for (const auto& [list, make] : {std::pair{"cursor", &cursor_config}, std::pair{"destinations", &destinations_config}}) {
    const double small_seconds = seconds_to_check(make(small));
    const double large_seconds = seconds_to_check(make(large));
    const double ratio = large_seconds / small_seconds;
    std::printf("%-12s %7ld items %8.3f s   %7ld items %8.3f s   ratio %5.1f (linear %.1f, quadratic %.1f)\n", list,
                small, small_seconds, large, large_seconds, ratio, linear, linear * linear);
    within = within && ratio <= 2 * linear;
  }
  return within ? 0 : 1;
}
