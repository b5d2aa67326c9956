# cuda backend detection (owned by the cuda backend work).
set(LRRT_HAVE_CUDA OFF)
message(STATUS "lrrt: cuda backend skipped: not implemented yet")
