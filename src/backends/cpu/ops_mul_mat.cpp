// PI_OP_MUL_MAT on the CPU: dst[n, m, b2, b3] = sum_k W[k, n, b2/r2, b3/r3] * A[k, m, b2, b3]
// with W = src0 (any type with matmul kernels, rows of whole blocks), A = src1
// (F32 rows), dst F32, r2 = B2'/B2 and r3 = B3'/B3 (ggml's batch broadcast).
//
// Phase 1: the threads convert the rows of A, split by rows, into the shared
// scratch (the form the weight type's dot product wants). Phase 2: the output
// of each batch is cut into tiles of kRowTile weight rows x kColTile columns;
// each thread takes a contiguous run of tiles (row tiles fastest, so a
// thread's activation tile stays in cache while it streams its weights) and
// writes only its tiles of dst.
#include <algorithm>

#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/op_context.hpp"
#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

// A multiple of every panel height; 64 rows of a 4096-wide Q4_0 matrix are 147 KiB.
constexpr int64_t kRowTile = 64;
// Columns sharing one repacked weight panel; 256 keep the accumulators in L1/L2.
constexpr int64_t kColTile = 256;

const MatmulKernels* kernels_of(const pi_tensor& w) {
  const auto traits = type_traits(w.type);
  return traits ? matmul_kernels(static_cast<GgmlType>(w.type)) : nullptr;
}

bool supports(const pi_node& n) {
  const pi_tensor &w = n.src[0], &a = n.src[1], &d = n.dst;
  const MatmulKernels* mk = kernels_of(w);
  if (mk == nullptr || !is_f32_rows(a) || !is_f32_rows(d)) return false;
  const TypeTraits& t = traits(static_cast<GgmlType>(w.type));
  const int64_t k = w.ne[0];
  return k > 0 && k % t.block_size == 0 && w.nb[0] == t.type_size && a.ne[0] == k &&
         d.ne[0] == w.ne[1] && d.ne[1] == a.ne[1] && d.ne[2] == a.ne[2] && d.ne[3] == a.ne[3] &&
         a.ne[2] % w.ne[2] == 0 && a.ne[3] % w.ne[3] == 0 && d.nb[1] % sizeof(float) == 0;
}

size_t work_size(const pi_node& n, int /*nth*/) {
  return kernels_of(n.src[0])->act_row_size(n.src[0].ne[0]) * static_cast<size_t>(nrows(n.src[1]));
}

void convert_activations(const OpContext& ctx, const MatmulKernels& mk, size_t act_stride) {
  const pi_tensor& a = ctx.node.src[1];
  const Range rows = split_range(nrows(a), ctx.ith, ctx.nth);
  for (int64_t j = rows.begin; j < rows.end; ++j) {
    mk.convert_act(row_f32(a, unflatten(a, j)), ctx.work.data() + j * act_stride, a.ne[0]);
  }
}

void run(const OpContext& ctx) {
  const pi_tensor &w = ctx.node.src[0], &a = ctx.node.src[1], &d = ctx.node.dst;
  const MatmulKernels& mk = *kernels_of(w);
  const int64_t k = w.ne[0];
  const size_t act_stride = mk.act_row_size(k);
  convert_activations(ctx, mk, act_stride);
  ctx.sync();

  const int64_t n_rows = w.ne[1], n_cols = a.ne[1];
  const int64_t row_tiles = (n_rows + kRowTile - 1) / kRowTile;
  const int64_t col_tiles = (n_cols + kColTile - 1) / kColTile;
  const int64_t r2 = a.ne[2] / w.ne[2], r3 = a.ne[3] / w.ne[3];
  const Range tiles = split_range(row_tiles * col_tiles * a.ne[2] * a.ne[3], ctx.ith, ctx.nth);
  for (int64_t t = tiles.begin; t < tiles.end; ++t) {
    const int64_t r0 = t % row_tiles * kRowTile;
    const int64_t c0 = t / row_tiles % col_tiles * kColTile;
    const int64_t batch = t / (row_tiles * col_tiles);  // i2 + ne2 * i3 of src1
    const int64_t i2 = batch % a.ne[2], i3 = batch / a.ne[2];
    const uint8_t* wp = row_ptr(w, r0, i2 / r2, i3 / r3);
    const uint8_t* ap = ctx.work.data() + (batch * n_cols + c0) * act_stride;
    auto* dp = reinterpret_cast<float*>(row_ptr(d, c0, i2, i3)) + r0;
    mk.gemm(k, wp, w.nb[1], std::min(kRowTile, n_rows - r0), ap, act_stride,
            std::min(kColTile, n_cols - c0), dp, d.nb[1] / sizeof(float));
  }
}

}  // namespace

const OpImpl kOpMulMat{supports, work_size, run};

}  // namespace polyinfer::cpu
