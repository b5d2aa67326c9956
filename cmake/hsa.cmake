# hsa backend detection (owned by the hsa backend work).
set(LRRT_HAVE_HSA OFF)
message(STATUS "lrrt: hsa backend skipped: not implemented yet")
