// GET_ROWS: one block per looked-up row, each thread decoding chunks of eight
// values of the table row in its stored format.
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quant_decode.cuh"

namespace polyinfer::cuda {
namespace {

__global__ void get_rows_kernel(View table, uint32_t type, View ids, View dst) {
  pdl_start();
  const int64_t n = ids.ne[0], total = ids.ne[0] * ids.ne[1];
  for (int64_t r = blockIdx.x; r < total; r += gridDim.x) {
    const int64_t i = r % n, j = r / n;
    int64_t id = *reinterpret_cast<const int32_t*>(ids.data + i * ids.nb[0] + j * ids.nb[1]);
    // Ids are checked by the model; clamping keeps a bad id from reading
    // outside the table (the CPU backend's guard).
    id = id < 0 ? 0 : (id >= table.ne[1] ? table.ne[1] - 1 : id);
    const uint8_t* row = table.data + id * table.nb[1];
    float* out = reinterpret_cast<float*>(row_at(dst, i, j, 0));
    if (type == kF32 || type == kF16 || type == kBF16) {  // any row length
      for (int64_t e = threadIdx.x; e < table.ne[0]; e += blockDim.x)
        out[e] = load_plain(type, row, e);
      continue;
    }
    for (int64_t c = threadIdx.x; c < table.ne[0] / 8; c += blockDim.x) {
      float v[8];
      decode8(type, row, c, v);
      for (int e = 0; e < 8; ++e) out[8 * c + e] = v[e];
    }
  }
}

bool supports_get_rows(const pi_node& n) {
  const pi_tensor &table = n.src[0], &ids = n.src[1];
  const TypeSize ts = type_size(table.type);
  if (ts.block == 0 || table.nb[0] != static_cast<uint64_t>(ts.bytes) || !rows_aligned(table))
    return false;
  if (table.ne[0] % ts.block != 0) return false;
  return table.ne[2] == 1 && table.ne[3] == 1 && ids.type == kI32 && ids.nb[0] == 4 &&
         ids.offset % 4 == 0 && ids.ne[2] == 1 && ids.ne[3] == 1 && is_f32_rows(n.dst) &&
         n.dst.ne[0] == table.ne[0] && n.dst.ne[1] == ids.ne[0] && n.dst.ne[2] == ids.ne[1];
}

const char* launch_get_rows(const LaunchContext& c) {
  const int64_t total = c.node.src[1].ne[0] * c.node.src[1].ne[1];
  launch_pdl(get_rows_kernel, static_cast<unsigned>(total < 65536 ? total : 65536), 128, 0,
             c.stream, c.src[0], c.node.src[0].type, c.src[1], c.dst);
  return nullptr;
}

}  // namespace

const OpImpl kOpGetRows{supports_get_rows, no_scratch, launch_get_rows};

}  // namespace polyinfer::cuda
