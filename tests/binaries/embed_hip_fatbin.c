/* A host shared object carrying an offload bundle in .hip_fatbin, as hipcc
 * lays it out (the section, 4096-aligned, holding the bundle), built from a
 * bundle lrrt's own kernels made: the hsa stand-in then runs its kernels, so
 * a manifest naming this library is verified end to end. LRRT_BUNDLE is the
 * bundle's path. */
#define LRRT_STR2(x) #x
#define LRRT_STR(x) LRRT_STR2(x)
__asm__(".section .hip_fatbin,\"a\",@progbits\n"
        ".p2align 12\n"
        ".incbin \"" LRRT_STR(LRRT_BUNDLE) "\"\n"
        ".previous\n");
#ifndef LRRT_EMBED_ONLY /* a second translation unit: its bundle only */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* A constructor that leaves a mark: the tests check that inspecting or
 * running this library never loads it (no constructor of a user's library
 * runs inside lrrt). */
__attribute__((constructor)) static void lrrt_fixture_constructor(void) {
  const char *mark = getenv("LRRT_FIXTURE_CONSTRUCTOR_MARK");
  if (mark && *mark) {
    int fd = open(mark, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
  }
}

int lrrt_fixture_host_function(int x) { return x + 1; }
#endif
