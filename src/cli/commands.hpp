// The lrrt subcommands. Each lives in its own file and registers itself on the
// top-level app; main.cpp calls every register_* function and dispatches.
//
// Contract for a subcommand callback:
//  - return normally: the process exits with cli::exit_code() (0 unless the
//    command called set_exit_code, e.g. 1 when verification failed);
//  - throw lrrt::bundle::Error (InputError → 2, DeviceError → 3): main prints
//    "lrrt: error: <message>" on stderr and exits with its code;
//  - an lrrt::Error from the runtime that escapes exits 3 (2 for
//    LR_ERROR_INVALID_ARGUMENT / INVALID_IMAGE / NOT_FOUND).
#pragma once

namespace CLI {
class App;
}

namespace lrrt::cli {

void register_run(CLI::App& app);
void register_info(CLI::App& app);
void register_inspect(CLI::App& app);
void register_bench(CLI::App& app);
void register_compare(CLI::App& app);
void register_plan(CLI::App& app);
void register_init(CLI::App& app);

void set_exit_code(int code);
int exit_code();

}  // namespace lrrt::cli
