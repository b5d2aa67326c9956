// What the device may still use after a wait for it timed out or failed.
#pragma once

#include <exception>
#include <memory>

namespace lrrt::rt {

// Owns `object` to the end of the process: never destroyed, still reachable
// (so LeakSanitizer reports only real leaks). For what work that may still
// run uses: the queue of a timed-out wait, the argument copies and signals of
// an abandoned replay. Thread-safe.
void keep_until_exit(std::shared_ptr<void> object);

// True when `error` holds an lrrt::Error with LR_ERROR_TIMEOUT.
bool is_timeout(const std::exception_ptr& error);

}  // namespace lrrt::rt
