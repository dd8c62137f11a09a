// PI_OP_MUL_MAT on the CPU: dst[n, m, b2, b3] = sum_k W[k, n, b2/r2, b3/r3] * A[k, m, b2, b3]
// with W = src0 (any type with matmul kernels, rows of whole blocks), A = src1
// (F32 rows), dst F32, r2 = B2'/B2 and r3 = B3'/B3 (ggml's batch broadcast).
//
// Phase 1: the threads convert the rows of A, split by rows, into the shared
// scratch (the form the weight type's dot product wants). Phase 2: the output
// of each batch is cut into column tiles of up to kColTile columns, each
// split by weight rows (in kRowUnit steps) into as many parts as there are
// threads (fewer for small matrices); the threads take contiguous runs of
// these parts and write only their parts of dst. A part is one gemm call, so
// a thread converts a column tile's activations to the kernel's panel form
// once and streams its share of the weights once.
#include <algorithm>

#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/op_context.hpp"
#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

// Row parts are multiples of every panel height, so only a matrix's last
// panel is partial.
constexpr int64_t kRowUnit = 16;
// Columns per gemm call: their repacked activations (~1.3 * k bytes each)
// stay in L2/L3 while the weights stream.
constexpr int64_t kColTile = 512;

// The kernels depend on the column count too (Q8_0 decodes in F32).
const MatmulKernels* kernels_of(const pi_node& n) {
  const pi_tensor& w = n.src[0];
  const auto traits = type_traits(w.type);
  return traits ? matmul_kernels(static_cast<GgmlType>(w.type), n.src[1].ne[1]) : nullptr;
}

bool supports(const pi_node& n) {
  const pi_tensor &w = n.src[0], &a = n.src[1], &d = n.dst;
  const MatmulKernels* mk = kernels_of(n);
  if (mk == nullptr || !is_f32_rows(a) || !is_f32_rows(d)) return false;
  const TypeTraits& t = traits(static_cast<GgmlType>(w.type));
  const int64_t k = w.ne[0];
  return k > 0 && k % t.block_size == 0 && w.nb[0] == t.type_size && a.ne[0] == k &&
         d.ne[0] == w.ne[1] && d.ne[1] == a.ne[1] && d.ne[2] == a.ne[2] && d.ne[3] == a.ne[3] &&
         a.ne[2] % w.ne[2] == 0 && a.ne[3] % w.ne[3] == 0 && d.nb[1] % sizeof(float) == 0;
}

size_t work_size(const pi_node& n, int /*nth*/) {
  return kernels_of(n)->act_row_size(n.src[0].ne[0]) * static_cast<size_t>(nrows(n.src[1]));
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
  const MatmulKernels& mk = *kernels_of(ctx.node);
  const int64_t k = w.ne[0];
  const size_t act_stride = mk.act_row_size(k);
  convert_activations(ctx, mk, act_stride);
  ctx.sync();

  const int64_t n_rows = w.ne[1], n_cols = a.ne[1];
  const int64_t row_units = (n_rows + kRowUnit - 1) / kRowUnit;
  const int64_t parts = std::min<int64_t>(ctx.nth, row_units);
  const int64_t col_tiles = (n_cols + kColTile - 1) / kColTile;
  const int64_t r2 = a.ne[2] / w.ne[2], r3 = a.ne[3] / w.ne[3];
  const Range items = split_range(parts * col_tiles * a.ne[2] * a.ne[3], ctx.ith, ctx.nth);
  for (int64_t t = items.begin; t < items.end; ++t) {
    const Range units =
        split_range(row_units, static_cast<int>(t % parts), static_cast<int>(parts));
    const int64_t r0 = units.begin * kRowUnit;
    const int64_t rows = std::min(units.end * kRowUnit, n_rows) - r0;
    const int64_t c0 = t / parts % col_tiles * kColTile;
    const int64_t batch = t / (parts * col_tiles);  // i2 + ne2 * i3 of src1
    const int64_t i2 = batch % a.ne[2], i3 = batch / a.ne[2];
    const uint8_t* wp = row_ptr(w, r0, i2 / r2, i3 / r3);
    const uint8_t* ap = ctx.work.data() + (batch * n_cols + c0) * act_stride;
    auto* dp = reinterpret_cast<float*>(row_ptr(d, c0, i2, i3)) + r0;
    if (rows > 0) {
      mk.gemm(k, wp, w.nb[1], rows, ap, act_stride, std::min(kColTile, n_cols - c0), dp,
              d.nb[1] / sizeof(float));
    }
  }
}

}  // namespace

const OpImpl kOpMulMat{supports, work_size, run};

}  // namespace polyinfer::cpu
