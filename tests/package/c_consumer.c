/* A C program that uses only the installed lrrt.h and liblrrt.so: loads the
 * installed host build of vector_add, adds two fresh random int32 vectors on
 * the host backend and checks every element (the output starts poisoned).
 *   c_consumer KERNEL_DIR */
#include <lrrt/lrrt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    lr_status_t status_ = (call);                                                          \
    if (status_ != LR_SUCCESS) {                                                           \
      fprintf(stderr, "c_consumer: %s failed: %s: %s\n", #call, lr_status_string(status_), \
              lr_last_error_message());                                                    \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "c_consumer: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc((size_t)n);
  if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "c_consumer: cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* xorshift64*: a fresh seed each run, printed so a failure can be replayed. */
static uint64_t next(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_consumer KERNEL_DIR\n");
    return 2;
  }
  char expected_version[32];
  snprintf(expected_version, sizeof expected_version, "%d.%d.%d", LRRT_VERSION_MAJOR, LRRT_VERSION_MINOR,
           LRRT_VERSION_PATCH);
  if (strcmp(lr_version_string(), expected_version) != 0) {
    fprintf(stderr, "c_consumer: liblrrt.so is %s but lrrt.h says %s\n", lr_version_string(), expected_version);
    return 1;
  }

  CHECK(lr_init());
  lr_device_t device;
  CHECK(lr_device_select("host", 0, &device));

  char path[4096];
  snprintf(path, sizeof path, "%s/vector_add.host.so", argv[1]);
  size_t image_size = 0;
  void* image = read_file(path, &image_size);
  lr_module_t* module = NULL;
  CHECK(lr_module_load(device, image, image_size, &module));
  free(image);

  /* A missing kernel is a status and a message, not a crash. */
  lr_kernel_t* kernel = NULL;
  if (lr_kernel_get(module, "no_such_kernel", &kernel) != LR_ERROR_NOT_FOUND || lr_last_error_message()[0] == 0) {
    fprintf(stderr, "c_consumer: lr_kernel_get of a missing kernel did not fail with LR_ERROR_NOT_FOUND and a message\n");
    return 1;
  }
  CHECK(lr_kernel_get(module, "vector_add_i32", &kernel));

  const uint32_t n = 100003; /* not a multiple of the workgroup size */
  const size_t bytes = n * sizeof(int32_t);
  int32_t* a = malloc(bytes);
  int32_t* b = malloc(bytes);
  int32_t* c = malloc(bytes);
  uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32) ^ 0x9e3779b97f4a7c15ull;
  const uint64_t first_seed = seed;
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = (int32_t)(uint32_t)next(&seed);
    b[i] = (int32_t)(uint32_t)next(&seed);
  }
  memset(c, 0xAB, bytes);

  void *da = NULL, *db = NULL, *dc = NULL;
  CHECK(lr_malloc(device, bytes, &da));
  CHECK(lr_malloc(device, bytes, &db));
  CHECK(lr_malloc(device, bytes, &dc));
  CHECK(lr_memcpy(device, da, a, bytes, LR_MEMCPY_HOST_TO_DEVICE));
  CHECK(lr_memcpy(device, db, b, bytes, LR_MEMCPY_HOST_TO_DEVICE));
  CHECK(lr_memcpy(device, dc, c, bytes, LR_MEMCPY_HOST_TO_DEVICE)); /* poisoned */

  struct {
    const void* a;
    const void* b;
    void* c;
    uint32_t n;
  } args = {da, db, dc, n};
  lr_launch_config_t config = {{(n + 255) / 256, 1, 1}, {256, 1, 1}, 0};
  CHECK(lr_launch(kernel, &config, &args, sizeof args));
  CHECK(lr_synchronize(device));
  CHECK(lr_memcpy(device, c, dc, bytes, LR_MEMCPY_DEVICE_TO_HOST));

  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t want = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
    if (c[i] != want && wrong++ < 5)
      fprintf(stderr, "c_consumer: c[%u] = %d, expected %d (seed %llu)\n", i, c[i], want, (unsigned long long)first_seed);
  }
  CHECK(lr_free(device, da));
  CHECK(lr_free(device, db));
  CHECK(lr_free(device, dc));
  CHECK(lr_module_destroy(module));
  CHECK(lr_shutdown());
  free(a);
  free(b);
  free(c);
  if (wrong) {
    fprintf(stderr, "c_consumer: %u of %u elements wrong\n", wrong, n);
    return 1;
  }
  printf("c_consumer: vector_add_i32 on %u elements: all correct (lrrt %s)\n", n, lr_version_string());
  return 0;
}
