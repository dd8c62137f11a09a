#include "model/weight_store.hpp"

#include <algorithm>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

constexpr uint64_t kAlign = 256;          // tensor starts in an uploaded buffer
constexpr uint64_t kChunk = 64ull << 20;  // progress granularity

uint64_t aligned(uint64_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

WeightStore::WeightStore(const GgufFile& file, std::vector<const BackendDevice*> devices)
    : file_(file),
      devices_(std::move(devices)),
      wanted_(devices_.size()),
      wrapped_(devices_.size()),
      uploaded_(devices_.size()),
      offsets_(devices_.size()),
      bytes_(devices_.size(), 0) {}

void WeightStore::want(const GgufTensorInfo& t, int d) {
  auto& w = wanted_.at(static_cast<size_t>(d));
  if (std::find(w.begin(), w.end(), &t) == w.end()) w.push_back(&t);
}

void WeightStore::load(const LoadProgress& progress) {
  const auto file = file_.bytes();
  uint64_t total = 0;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (wanted_[d].empty()) continue;
    // The mapping is read-only; kernels only read weights, the ABI just has no const.
    if (devices_[d]->info().host_visible) {
      wrapped_[d] =
          DeviceBuffer::wrap_host(*devices_[d], const_cast<uint8_t*>(file.data()), file.size());
    }
    for (const GgufTensorInfo* t : wanted_[d]) {
      bytes_[d] += t->n_bytes;
      total += t->n_bytes;
    }
  }
  uint64_t done = 0;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!wanted_[d].empty() && !wraps(static_cast<int>(d)))
      upload(static_cast<int>(d), done, total, progress);
  }
  prefault(done, total, progress);
}

void WeightStore::upload(int d, uint64_t& done, uint64_t total, const LoadProgress& progress) {
  const auto i = static_cast<size_t>(d);
  uint64_t size = 0;
  for (const GgufTensorInfo* t : wanted_[i]) {
    offsets_[i][t] = size;
    size += aligned(t->n_bytes);
  }
  uploaded_[i] = DeviceBuffer::allocate(*devices_[i], size);
  const uint8_t* data = file_.bytes().data() + file_.data_offset();
  for (const GgufTensorInfo* t : wanted_[i]) {
    for (uint64_t at = 0; at < t->n_bytes; at += kChunk) {
      const uint64_t n = std::min(kChunk, t->n_bytes - at);
      uploaded_[i].write(offsets_[i][t] + at, data + t->offset + at, n);
      done += n;
      if (progress) progress(done, total);
    }
  }
  devices_[i]->sync();  // the file pages may be dropped once the device has them
}

// Touches every page of the wrapped tensors once so that the first token does
// not pay for page faults.
void WeightStore::prefault(uint64_t& done, uint64_t total, const LoadProgress& progress) const {
  const auto file = file_.bytes();
  constexpr uint64_t kPage = 4096;
  volatile uint8_t sink = 0;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!wraps(static_cast<int>(d))) continue;
    for (const GgufTensorInfo* t : wanted_[d]) {
      const uint64_t begin = file_.data_offset() + t->offset;
      for (uint64_t at = 0; at < t->n_bytes; at += kChunk) {
        const uint64_t n = std::min(kChunk, t->n_bytes - at);
        for (uint64_t p = 0; p < n; p += kPage) sink = sink + file[begin + at + p];
        done += n;
        if (progress) progress(done, total);
      }
    }
  }
}

WeightRef WeightStore::ref(const GgufTensorInfo& t, int d) const {
  const auto i = static_cast<size_t>(d);
  const Shape ne{t.ne[0], t.ne[1], t.ne[2], t.ne[3]};
  if (wraps(d)) return {t.type, ne, wrapped_[i].handle(), file_.data_offset() + t.offset, d};
  const auto it = offsets_[i].find(&t);
  if (it == offsets_[i].end())
    throw Error(ErrorCode::kInvalidArgument, "weight '" + t.name + "' was not loaded on device");
  return {t.type, ne, uploaded_[i].handle(), it->second, d};
}

}  // namespace polyinfer
