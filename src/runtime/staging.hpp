// The pageable-copy staging pipeline behind lr_memcpy on GPU backends.
//
// A copy between pageable host memory and the device cannot be a DMA: the
// driver copies through pinned buffers of its own, one chunk at a time on one
// thread (5-16 GB/s on the H200 against 55 GB/s pinned). lrrt stages it
// itself, in lanes: the copy is cut into pieces dealt round-robin to up to
// `lanes` threads, and each lane is an independent pipeline with its own
// queue and a few small pinned slots:
//
//   H2D lane: memcpy(piece j -> slot) | DMA(slot) ... refill a slot once its DMA is done
//   D2H lane: DMA(piece j+1.. -> slots) | memcpy(slot of piece j -> destination)
//
// Lanes never wait for each other, so a slow thread delays only its own
// pieces, and the DMA engines always have work queued from some lane.
//
// Pieces of 4 MiB in 3 slots per lane (8 lanes: 96 MiB pinned, allocated on
// the first staged copy) won three sweeps on the H200 (scripts/staging-sweep,
// docs/results/h200-staging-sweep-2026-11-29): 256 KiB-1 MiB pieces lost to
// the cost of a DMA per piece, 16 MiB ones to the unoverlapped tail, and a
// third slot keeps a lane's next DMA queued while it copies. Writes
// into the user's pageable buffer (D2H) use non-temporal stores: no
// read-for-ownership of a destination about to be overwritten (28 -> 45 GB/s
// for D2H there).
//
// lr_memcpy uses it for host-to-device and device-to-host copies of at least
// `threshold` bytes whose host side is not an lr_host_malloc allocation, on
// every backend except host (where host memory is device memory).
// Environment (read when a device's pipeline is made):
//   LRRT_STAGING=off|force      never stage | stage every copy on every backend (tests)
//   LRRT_STAGING_THREADS=N      lanes (threads, the caller included)
//   LRRT_STAGING_CHUNK=SIZE     bytes per piece and slot (e.g. 512K, 1M)
//   LRRT_STAGING_SLOTS=N        pinned slots per lane
//   LRRT_STAGING_MIN=SIZE       smallest copy staged
//   LRRT_STAGING_NT=d2h|h2d|both|none   which direction writes with non-temporal stores
//   LRRT_STAGING_POLL_US=N      lanes poll their slot's event every N us (0: Event::synchronize)
//   LRRT_STAGING_TRACE=1        print where the lanes' time went when the pipeline is released
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backend.hpp"
#include "thread_pool.hpp"

namespace lrrt::rt {

struct DeviceState;

struct StagingConfig {
  size_t chunk_bytes = size_t(4) << 20;       // largest piece one DMA moves (= slot size)
  size_t min_chunk_bytes = size_t(1) << 20;  // smallest piece of a split copy (smaller lost on the H200)
  unsigned slots = 3;                         // pinned slots per lane
  unsigned lanes = 0;                         // 0 = half the cores, 2 to 8
  // Smallest copy lr_memcpy stages. On the H200 (2026-11-29) staging lost to
  // the driver's own pageable path at 1-4 MiB and won from 16 MiB up.
  size_t threshold = size_t(16) << 20;
  bool nt_to_host = true;     // D2H: non-temporal stores into the user's buffer
  bool nt_to_device = false;  // H2D: non-temporal stores into the slot (off: the DMA reads it from cache)
  unsigned poll_us = 0;       // 0: a lane waits in Event::synchronize; else polls query() every poll_us
  bool trace = false;

  // The defaults above, overridden by the LRRT_STAGING_* variables; throws
  // LR_ERROR_INVALID_ARGUMENT naming a malformed one.
  static StagingConfig from_env();
};

enum class StagingMode { Auto, Off, Force };
// Starts as LRRT_STAGING says (auto|off|force; auto when unset).
StagingMode staging_mode();
void set_staging_mode(StagingMode mode);

// memcpy with non-temporal stores on x86-64 (AVX2 where the CPU has it, else
// SSE2) for the aligned middle of copies of 4 KiB or more; memcpy elsewhere.
void copy_streaming(void* dst, const void* src, size_t size);

class StagingPipeline {
 public:
  explicit StagingPipeline(Device& device, StagingConfig config = {});
  ~StagingPipeline();
  StagingPipeline(const StagingPipeline&) = delete;
  StagingPipeline& operator=(const StagingPipeline&) = delete;

  // Blocking copy of `size` bytes, HostToDevice or DeviceToHost; the host
  // side may be any memory. Thread-safe (copies are serialised).
  void copy(void* dst, const void* src, size_t size, CopyKind kind);

  const StagingConfig& config() const { return config_; }
  // Piece size for a copy of `size` bytes: four pieces per lane where the
  // chunk bounds allow it, so smaller copies still overlap.
  size_t piece_for(size_t size) const;

 private:
  // Nanoseconds a lane spent per activity, summed over copies (LRRT_STAGING_TRACE).
  struct LaneTimes {
    double wait = 0, host_copy = 0, issue = 0, total = 0;
  };
  struct Lane {
    std::unique_ptr<Queue> queue;
    std::vector<std::byte*> slots;
    std::vector<std::unique_ptr<Event>> slot_free;  // recorded after each slot's DMA
    LaneTimes times[2];                              // [0] H2D, [1] D2H
  };
  void wait_slot(Event& event) const;
  void run_lane(Lane& lane, unsigned index, unsigned lanes, std::byte* dst, const std::byte* src,
                size_t size, size_t piece, CopyKind kind);

  Device& device_;
  StagingConfig config_;
  std::mutex mutex_;
  std::vector<Lane> lanes_;
  ThreadPool pool_;  // the lanes
  double wall_ns_[2] = {0, 0};
  size_t bytes_[2] = {0, 0};
  size_t copies_[2] = {0, 0};
};

// lr_memcpy's hook: performs the copy through the device's pipeline (made on
// first use) and returns true when the copy qualifies; false otherwise (the
// caller copies as before).
bool staged_copy(DeviceState& state, void* dst, const void* src, size_t size, CopyKind kind);

}  // namespace lrrt::rt
