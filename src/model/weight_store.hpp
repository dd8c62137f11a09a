// The bytes of a GGUF's tensors on the devices that use them: the mmapped file
// is wrapped as is on a device that can address host memory (the CPU), so
// those weights are never copied; elsewhere each tensor is uploaded once, into
// one buffer per device.
//
//   WeightStore store(file, devices);
//   store.want(*file.find_tensor("blk.0.attn_q.weight"), 1);   // for every tensor
//   store.load(progress);
//   WeightRef q = store.ref(*file.find_tensor("blk.0.attn_q.weight"), 1);
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {

// A weight on a device: type, shape, and where its bytes are.
struct WeightRef {
  GgmlType type;
  Shape ne;
  pi_buffer buffer = nullptr;
  uint64_t offset = 0;
  int32_t device = 0;  // graph device number
  bool present() const { return buffer != nullptr; }
};

// Called while weights are paged in or uploaded: bytes done, bytes in all.
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

class WeightStore {
 public:
  WeightStore(const GgufFile& file, std::vector<const BackendDevice*> devices);

  // Tensor t will be needed on device d (any number of times).
  void want(const GgufTensorInfo& t, int d);
  // Wraps or allocates and uploads; pages in the wrapped tensors. Throws Error(kBackend).
  void load(const LoadProgress& progress);
  // Where t is on device d, after load(). Throws Error(kInvalidArgument) when t was not
  // wanted there.
  WeightRef ref(const GgufTensorInfo& t, int d) const;
  uint64_t bytes_on(int d) const { return bytes_[static_cast<size_t>(d)]; }

 private:
  void upload(int d, uint64_t& done, uint64_t total, const LoadProgress& progress);
  void prefault(uint64_t& done, uint64_t total, const LoadProgress& progress) const;
  bool wraps(int d) const { return wrapped_[static_cast<size_t>(d)].handle() != nullptr; }

  const GgufFile& file_;
  std::vector<const BackendDevice*> devices_;
  std::vector<std::vector<const GgufTensorInfo*>> wanted_;          // per device, in order
  std::vector<DeviceBuffer> wrapped_;                               // per device: the whole file
  std::vector<DeviceBuffer> uploaded_;                              // per device: its tensors
  std::vector<std::map<const GgufTensorInfo*, uint64_t>> offsets_;  // in uploaded_
  std::vector<uint64_t> bytes_;                                     // per device
};

}  // namespace polyinfer
