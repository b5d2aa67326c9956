// The runtime turns faults inside host kernels into status codes with its own
// SIGSEGV/SIGBUS handler; doctest's crash handler would replace it.
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
