// Exit 0 and print the device when a cuda device is usable; otherwise exit 77
// (ctest's skip code) and print why, for tests labelled `gpu`.
#include <cstdio>
#include <cstring>

#include "lrrt/lrrt.h"

int main() {
  if (lr_init() != LR_SUCCESS) {
    std::printf("lr_init failed: %s\n", lr_last_error_message());
    return 77;
  }
  uint32_t count = 0;
  lr_backend_count(&count);
  for (uint32_t i = 0; i < count; ++i) {
    lr_backend_info_t info;
    if (lr_backend_get_info(i, &info) != LR_SUCCESS || std::strcmp(info.name, "cuda") != 0) continue;
    if (!info.usable || info.device_count == 0) {
      std::printf("no usable cuda device: %s\n", info.message);
      lr_shutdown();
      return 77;
    }
    lr_device_t dev;
    lr_device_properties_t props;
    if (lr_device_select("cuda", 0, &dev) == LR_SUCCESS && lr_device_get_properties(dev, &props) == LR_SUCCESS)
      std::printf("%s (%s)\n", props.name, props.arch);
    lr_shutdown();
    return 0;
  }
  std::printf("this lrrt was built without the cuda backend\n");
  lr_shutdown();
  return 77;
}
