// The fused units that fold a norm's neighbours into decode products
// (fusion.hpp's kMatvecAdd and kNormMatvec). F16: the kernel is matvec.cu's
// matvec_f16_rows, or matvec_f16_direct for an ADD after rows it cannot hold
// (over 16,384 values, or activations off 16 bytes); quantized: matvec_fast,
// whose blocks each make the 8-bit activations of x · w in shared memory. In
// a decode step each RMS_NORM + MUL kernel cost about 3.6 us in place on
// llama-8b F16 (H200, session 20), a kernel and its PDL wait between two
// products; folded, the products do its arithmetic. kMatvecNormQ: the
// product before the norm does the ADD and quantizes sum · w per 32 rows, the
// products after it scale by the norm's factor (matvec.hpp's MatvecNormQ).
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/matvec.hpp"

namespace polyinfer::cuda {

const char* const kLaunchNodes = "unit not taken: launch its nodes one by one";

namespace {

// The products are the unit's nodes [from, to) (to 0: to its end); the
// other nodes' src[0] are activations, which kernels write.
MatvecEnv env_of(const UnitContext& c, uint32_t from, uint32_t to) {
  return MatvecEnv{c.scratch, c.act_cache, c.stream, weights_constant(c, from, to), c.sm_count};
}

}  // namespace

const char* launch_matvec_add(const UnitContext& c) {
  const NodeViews &mv = c.views[0], &av = c.views[1];
  MatvecFold f{};
  f.kind = kFoldAdd;
  // fusion.cpp's matvec_add_at: one ADD source is the product's output, the
  // other (the residual) shares no byte with it.
  f.res = av.src[0].data == mv.dst.data ? av.src[1] : av.src[0];
  f.sum = av.dst;
  return launch_matvec_fold(&mv.src[0], &mv.dst, 1, &c.nodes[0].src[0].type, mv.src[1], f,
                            env_of(c, 0, 1))
             ? nullptr
             : kLaunchNodes;
}

const char* launch_norm_matvec(const UnitContext& c) {
  const int n = static_cast<int>(c.count) - 2;
  View w[kMaxGroupMats], d[kMaxGroupMats];
  uint32_t types[kMaxGroupMats];
  for (int m = 0; m < n; ++m) {
    w[m] = c.views[2 + m].src[0];
    d[m] = c.views[2 + m].dst;
    types[m] = c.nodes[2 + m].src[0].type;
  }
  MatvecFold f{};
  f.kind = kFoldNorm;
  f.nw = c.views[1].src[1];
  f.norm = c.views[0].dst;
  f.out = c.views[1].dst;
  f.eps = c.nodes[0].f[0];
  const View& x = c.views[0].src[0];
  if (!launch_matvec_fold(w, d, n, types, x, f, env_of(c, 2, 0))) return kLaunchNodes;
  // Quantized products over the MUL's output after the unit (of another
  // type than the unit's) fold the norm the same way (matvec.cu's refold).
  if (types[0] != kF16) {
    ActQuantCache a{f.out.data, x.ne[0], 1, f.out.nb[1], false, true, ActForm::kNormFold};
    a.fold = FoldedNorm{x, f.nw, f.eps};
    *c.act_cache = a;
  }
  return nullptr;
}

const char* launch_matvec_norm_q(const UnitContext& c) {
  const NodeViews &mv = c.views[0], &av = c.views[1], &ml = c.views[3];
  MatvecNormQ e{};
  // fusion.cpp's matvec_norm_q_at: as matvec_add_at's residual.
  e.res = av.src[0].data == mv.dst.data ? av.src[1] : av.src[0];
  e.sum = av.dst;
  e.nw = ml.src[1];
  e.norm = c.views[2].dst;
  e.out = ml.dst;
  e.eps = c.nodes[2].f[0];
  e.counts = c.norm_counts;
  return launch_matvec_norm_q(mv.src[0], mv.dst, c.nodes[0].src[0].type, mv.src[1], e,
                              env_of(c, 0, 1))
             ? nullptr
             : kLaunchNodes;
}

}  // namespace polyinfer::cuda
