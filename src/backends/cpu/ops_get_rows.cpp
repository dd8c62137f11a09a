// GET_ROWS: embedding lookup. Rows of any stored type are dequantized on the
// fly, so the token embedding stays in its GGUF block format.
#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer::cpu {
namespace {

bool supports_get_rows(const pi_node& n) {
  const pi_tensor &table = n.src[0], &ids = n.src[1];
  const auto tt = type_traits(table.type);
  return tt && tt->dequantizable && table.ne[0] % tt->block_size == 0 && table.ne[2] == 1 &&
         table.ne[3] == 1 && ids.type == kTypeI32 && ids.nb[0] == 4 && ids.ne[2] == 1 &&
         ids.ne[3] == 1 && is_f32_rows(n.dst) && n.dst.ne[0] == table.ne[0] &&
         n.dst.ne[1] == ids.ne[0] && n.dst.ne[2] == ids.ne[1];
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void run_get_rows(const OpContext& ctx) {
  const pi_tensor &table = ctx.node.src[0], &ids = ctx.node.src[1], &dst = ctx.node.dst;
  const GgmlType type = static_cast<GgmlType>(table.type);
  const int64_t n = ids.ne[0] * ids.ne[1];
  const Range rows = split_range(n, ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const int64_t i0 = r % ids.ne[0], i1 = r / ids.ne[0];
    const int32_t id = *reinterpret_cast<const int32_t*>(row_ptr(ids, i1, 0, 0) + i0 * 4);
    // Out-of-range ids were rejected by the model (token ids < n_vocab); clamp
    // anyway so a bad id can never read outside the table.
    const int64_t row = id < 0 ? 0 : (id >= table.ne[1] ? table.ne[1] - 1 : id);
    dequantize_row(type, row_ptr(table, row, 0, 0),
                   reinterpret_cast<float*>(row_ptr(dst, i0, i1, 0)), table.ne[0]);
  }
}

}  // namespace

const OpImpl kOpGetRows{supports_get_rows, no_work, run_get_rows};

}  // namespace polyinfer::cpu
