/* lrrt C ABI: backends, devices, their properties, details and memory info.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_DEVICE_H_
#define LRRT_C_DEVICE_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

LRRT_API lr_status_t lr_backend_count(uint32_t *count);
LRRT_API lr_status_t lr_backend_get_info(uint32_t index, lr_backend_info_t *info);

/* Devices are numbered across backends: GPU backends (hsa, cuda) first, host
 * last, so device 0 is what "auto" picks. */
LRRT_API lr_status_t lr_device_count(uint32_t *count);
LRRT_API lr_status_t lr_device_open(uint32_t index, lr_device_t *device);
/* backend: "auto", "host", "hsa" or "cuda"; ordinal counts that backend's
 * devices. "auto" picks the first GPU device and falls back to host. */
LRRT_API lr_status_t lr_device_select(const char *backend, uint32_t ordinal,
                                      lr_device_t *device);
LRRT_API lr_status_t lr_device_name(lr_device_t device, char *name,
                                    size_t name_size);
LRRT_API lr_status_t lr_device_get_properties(lr_device_t device,
                                              lr_device_properties_t *props);
/* Backend-specific facts beyond lr_device_properties_t, as key/value text in
 * display order: driver version, clocks, PCIe link, ISA names, xnack mode,
 * queue sizes... */
LRRT_API lr_status_t lr_device_detail_count(lr_device_t device, uint32_t *count);
LRRT_API lr_status_t lr_device_get_detail(lr_device_t device, uint32_t index,
                                          char *key, size_t key_size,
                                          char *value, size_t value_size);

/* Where a device's peak memory bandwidth comes from. */
typedef enum lr_peak_bandwidth_source_t {
  LR_PEAK_BANDWIDTH_UNKNOWN = 0,
  LR_PEAK_BANDWIDTH_REPORTED = 1, /* the device's memory clock and bus width (cuda, hsa) */
  LR_PEAK_BANDWIDTH_MEASURED = 2  /* measured by lrrt (host: a parallel memcpy) */
} lr_peak_bandwidth_source_t;

/* What sweeps need to judge memory-bound kernels: the last-level cache (to
 * flush it for cold measurements) and the peak memory bandwidth (to report a
 * kernel's share of it). Zero means unknown; the method strings say how each
 * was found ("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE", "sysfs cpu0 cache index3",
 * "memory clock 2619 MHz x 6144-bit bus x 2 (DDR)"). */
typedef struct lr_device_memory_info_t {
  uint64_t last_level_cache_bytes;
  double peak_bandwidth_bytes_per_second;
  uint32_t peak_bandwidth_source; /* lr_peak_bandwidth_source_t */
  char last_level_cache_method[128];
  char peak_bandwidth_method[128];
} lr_device_memory_info_t;

/* Fills info. The host backend measures its bandwidth on the first call for
 * a device (a parallel memcpy of a few hundred MiB, tens of milliseconds) and
 * returns the same numbers afterwards. */
LRRT_API lr_status_t lr_device_get_memory_info(lr_device_t device,
                                               lr_device_memory_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_DEVICE_H_ */
