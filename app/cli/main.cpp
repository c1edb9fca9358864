// tidemark: loads batches of records into PostgreSQL exactly once in effect.
#include <algorithm>
#include <iostream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/exit_status.hpp"
#include "app/cli/logging.hpp"
#include "app/config/config.hpp"

namespace {

// Blocks of 128 KiB and more (a batch's record, check and plan vectors, the COPY buffers)
// are mapped from the system for themselves and given back when freed. glibc's default
// instead raises that threshold to the largest such block freed so far (up to 32 MiB), so
// from the second batch on they come from the malloc arenas, whose holes small allocations
// then fill: the arenas keep growing (the figures: docs/performance.md "A declared entity
// beside the built-in one"). Setting the threshold
// turns glibc's adjustment off for the process; the value is glibc's own starting one.
void keep_large_blocks_mapped() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

// The word naming the command: the first argument that is neither a global option nor the
// value of one (`tidemark --log-level warn run`); null when there is none.
const char* command_word(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.empty() || argument.front() != '-') return argv[i];
    if (argument.find('=') != std::string::npos) continue;  // --log-level=warn
    const auto options = app.get_options([&](const CLI::Option* option) { return option->check_name(argument); });
    if (!options.empty() && options.front()->get_items_expected_max() > 0) ++i;  // its value
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  keep_large_blocks_mapped();
  tidemark::app::start_logging();

  CLI::App app{"Tidemark loads batches of records into PostgreSQL exactly once in effect: replay a batch any\n"
               "number of times, kill the process at any instant, and the state, the side effects and the\n"
               "checkpoint still end where one clean run would have left them. See README.md and docs/."};
  app.name("tidemark");  // in the usage line and the man page, whatever path started it
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", "tidemark " TIDEMARK_VERSION);
  // Before the commands: they inherit the fall-through to these options.
  tidemark::app::add_log_options(app);

  int exit_code = tidemark::app::kExitOk;
  // Every command, in one list.
  tidemark::app::register_run_command(app, exit_code);
  tidemark::app::register_quarantine_commands(app, exit_code);
  tidemark::app::register_pipeline_commands(app, exit_code);
  tidemark::app::register_serve_command(app, exit_code);
  tidemark::app::register_relay_commands(app, exit_code);
  tidemark::app::register_views_command(app, exit_code);
  tidemark::app::register_status_command(app, exit_code);
  tidemark::app::register_retention_command(app, exit_code);
  tidemark::app::register_nats_commands(app, exit_code);
  tidemark::app::register_db_commands(app, exit_code);
  tidemark::app::register_check_command(app, exit_code);

  try {
    // CLI11 would only say "a subcommand is required"; name the word it did not know.
    const auto commands = app.get_subcommands({});
    const char* word = command_word(app, argc, argv);
    const auto named = [&](const CLI::App* command) { return command->get_name() == word; };
    if (word != nullptr && std::none_of(commands.begin(), commands.end(), named)) {
      std::string known;
      for (const auto* command : commands) known += (known.empty() ? "" : ", ") + command->get_name();
      throw tidemark::app::UsageError(std::string("unknown command '") + word + "' (commands: " + known +
                                      "); see tidemark --help");
    }
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return tidemark::app::kExitUsage;
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return tidemark::app::exit_code_for_current_exception();  // 2 for usage and config errors, else 1
  }
  return exit_code;
}
