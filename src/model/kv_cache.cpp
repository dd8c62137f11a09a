#include "model/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "polyinfer/error.hpp"

namespace polyinfer {

KvCache::KvCache(const std::vector<const BackendDevice*>& devices,
                 const std::vector<int>& layer_device, const LlamaHParams& hp, int64_t n_ctx,
                 GgmlType type)
    : type_(type),
      n_ctx_(n_ctx),
      head_dim_(hp.head_dim),
      n_head_kv_(hp.n_head_kv),
      n_layer_(hp.n_layer),
      layer_device_(layer_device) {
  if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::Q8_0) {
    throw Error(ErrorCode::kInvalidArgument, "KV cache type must be f32, f16 or q8_0");
  }
  if (head_dim_ % traits(type).block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument, "KV cache type " + std::string(type_name(type)) +
                                                 " needs a head size that is a multiple of " +
                                                 std::to_string(traits(type).block_size) +
                                                 "; this model's is " + std::to_string(head_dim_) +
                                                 " (use --cache-type f16)");
  }
  row_bytes_ = row_size(type, head_dim_);
  layer_bytes_ = row_bytes_ * static_cast<uint64_t>(n_head_kv_ * n_ctx_);
  for (int il = 0; il < n_layer_; ++il) {
    buffers_.push_back(DeviceBuffer::allocate(*devices.at(layer_device_.at(il)), 2 * layer_bytes_));
  }
}

uint64_t KvCache::layer_bytes(const LlamaHParams& hp, int64_t n_ctx, GgmlType type) {
  return 2 * row_size(type, hp.head_dim) * static_cast<uint64_t>(hp.n_head_kv * n_ctx);
}

uint64_t KvCache::bytes_on(int device) const {
  return 2 * layer_bytes_ *
         static_cast<uint64_t>(std::count(layer_device_.begin(), layer_device_.end(), device));
}

TensorId KvCache::slot(Graph& g, int il, int kv, int64_t p0, int64_t n) const {
  const Shape ne{head_dim_, n_head_kv_, n, 1};
  return g.bound(type_, ne, buffers_[il].handle(),
                 base(kv) + static_cast<uint64_t>(p0 * n_head_kv_) * row_bytes_, layer_device_[il]);
}

TensorId KvCache::view(Graph& g, int il, int kv, int64_t n_kv) const {
  const Shape ne{head_dim_, n_kv, n_head_kv_, 1};
  const uint64_t pos_stride = row_bytes_ * n_head_kv_;
  const Strides nb{traits(type_).type_size, pos_stride, row_bytes_, pos_stride * n_kv};
  return g.bound(type_, ne, nb, buffers_[il].handle(), base(kv), layer_device_[il]);
}

}  // namespace polyinfer
