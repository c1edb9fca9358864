#pragma once
// A command run on a pseudo-terminal, as from an operator's shell (what script(1) does).
// A fresh chroot or container often has no devpts mounted at /dev/pts, and then opening
// /dev/ptmx fails with ENODEV: the kernel finds the pseudo-terminals through the devpts at
// "pts" beside it. There the test mounts a devpts instance of its own, detached (fsopen and
// fsmount: never attached to any folder, so no mount namespace is needed and nothing
// propagates to the machine), and opens both ends through file descriptors, not paths.
#include <string>

#include "tests/support/process.hpp"

namespace tidemark::testing {

// Empty when run_on_terminal works here; otherwise what is missing and how to provide it,
// for the test's skip message.
std::string pseudo_terminal_missing();

// Runs `command` (a /bin/sh command line) with a new pseudo-terminal as its controlling
// terminal, standard input, output and error; `out` is what the terminal showed (carriage
// returns and escape sequences included), `err` stays empty.
ProcessResult run_on_terminal(const std::string& command, const ProcessOptions& options = {});

}  // namespace tidemark::testing
