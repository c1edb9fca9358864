#pragma once
// Fault injection (docs/cli.md "Failpoints"): TIDEMARK_FAILPOINTS=name[:N][,name[:N]…]
// makes the process _exit(137) — as kill -9 would, no destructors, no flushing — the Nth
// time (default the first) it reaches the named point. Inert unless the variable is set.
#include <string_view>

namespace tidemark::pipeline {

void failpoint(std::string_view name);

}  // namespace tidemark::pipeline
