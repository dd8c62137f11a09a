// FLASH_ATTN as the model calls it: q a strided view [D, T, H] of an F32
// [D, H, T] tensor, K and V strided views [D, n_kv, Hkv] of a KV cache laid
// out [D, Hkv, n_ctx] (positions past n_kv hold poison: a backend that reads
// them produces NaNs), mask F32 [n_kv, T'] (T' >= T; 0 or -inf), scale f[0].
// For query head h (KV head h / (H/Hkv)) and token t:
//   s_j = scale · q·k_j + mask[j, t],  out[:, h, t] = Σ_j softmax(s)_j v_j,
// and 0 for a row whose mask is all -inf.
#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaskPadRows = 3;

enum class Mask { kNone, kCausal, kCausalOneRowHidden };

struct AttnShape {
  std::string name;
  int64_t d, h, h_kv, t, n_kv;
  Mask mask;
};

struct AttnCase {
  GgmlType kv_type;
  AttnShape shape;
};

// q stored [D, H, T], seen as [D, T, H].
HostTensor query_view(const AttnShape& s) {
  const uint64_t row = s.d * 4;
  const Strides nb{4, row * s.h, row, row * s.h * s.t};
  return strided(GgmlType::F32, {s.d, s.t, s.h, 1}, nb, kLeadBytes, kLeadBytes + nb[3]);
}

// A cache [D, Hkv, n_ctx] with room past n_kv, seen as [D, n_kv, Hkv].
HostTensor cache_view(GgmlType type, const AttnShape& s) {
  const int64_t n_ctx = s.n_kv + 11;
  const uint64_t row = row_size(type, s.d);
  const Strides nb{traits(type).type_size, row * s.h_kv, row, row * s.h_kv * s.n_kv};
  return strided(type, {s.d, s.n_kv, s.h_kv, 1}, nb, kLeadBytes, kLeadBytes + row * s.h_kv * n_ctx);
}

// Causal over n_past = n_kv - T earlier positions: token t sees j <= n_past + t.
HostTensor causal_mask(const AttnShape& s) {
  HostTensor m = contiguous(GgmlType::F32, {s.n_kv, s.t + kMaskPadRows, 1, 1});
  const int64_t n_past = s.n_kv - s.t;
  for (int64_t t = 0; t < s.t + kMaskPadRows; ++t) {
    const bool hidden_row = s.mask == Mask::kCausalOneRowHidden && t == s.t / 2;
    for (int64_t j = 0; j < s.n_kv; ++j) {
      const bool visible = j <= n_past + t && !hidden_row;
      m.f32(j, t) = visible ? 0.0f : -std::numeric_limits<float>::infinity();
    }
  }
  return m;
}

struct Reference {
  std::vector<double> want, bound;
};

// out[:, h, t] and its bounds for one query row.
void reference_row(const AttnCase& c, const std::vector<double>& q,
                   const std::vector<std::vector<double>>& k,
                   const std::vector<std::vector<double>>& v, const double* mask, double scale,
                   Reference& ref) {
  const AttnShape& s = c.shape;
  std::vector<double> score(s.n_kv, -kInf);
  double s_max = -kInf, delta = 0;
  for (int64_t j = 0; j < s.n_kv; ++j) {
    if (mask != nullptr && mask[j] == -kInf) continue;
    double dot = 0, dot_mag = 0;
    for (int64_t i = 0; i < s.d; ++i) {
      dot += q[i] * k[j][i];
      dot_mag += std::fabs(q[i] * k[j][i]);
    }
    score[j] = scale * dot + (mask ? mask[j] : 0.0);
    s_max = std::max(s_max, score[j]);
    delta = std::max(delta, flash_attn_score_bound(c.kv_type, s.d, scale, dot_mag,
                                                   block_weighted_amax(k[j], q, 32)));
  }
  std::vector<double> p(s.n_kv, 0.0);  // unnormalised; stays 0 where masked
  double sum = 0;
  for (int64_t j = 0; j < s.n_kv; ++j) {
    if (score[j] != -kInf) p[j] = std::exp(score[j] - s_max);
    sum += p[j];
  }
  for (int64_t i = 0; i < s.d; ++i) {
    double out = 0, mag = 0;  // a fully masked row: both stay 0
    for (int64_t j = 0; j < s.n_kv; ++j) {
      if (p[j] == 0) continue;
      out += p[j] / sum * v[j][i];
      mag += p[j] / sum * std::fabs(v[j][i]);
    }
    ref.want.push_back(out);
    ref.bound.push_back(flash_attn_out_bound(c.kv_type, s.n_kv, delta, mag));
  }
}

// gtest names a failing case by this instead of its bytes.
void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << type_name(c.kv_type) << "/" << c.shape.name;
}

class FlashAttn : public ConformanceTestWithParam<AttnCase> {};

TEST_P(FlashAttn, MatchesReference) {
  const AttnCase& c = GetParam();
  const AttnShape& s = c.shape;
  const std::string name = std::string(type_name(c.kv_type)) + "/" + s.name;
  Rng rng(case_seed("FLASH_ATTN/" + name));
  HostTensor q = query_view(s);
  fill_normal(q, rng, 2.5);  // peaked softmax rows: the running max moves
  HostTensor k = cache_view(c.kv_type, s), v = cache_view(c.kv_type, s);
  fill_normal(k, rng);
  fill_normal(v, rng);
  const HostTensor mask = s.mask != Mask::kNone ? causal_mask(s) : HostTensor{};
  HostTensor dst = contiguous(GgmlType::F32, {s.d, s.h, s.t, 1});
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  pi_node node{};
  node.op = PI_OP_FLASH_ATTN;
  node.f[0] = scale;
  const NodeRun r = backend().run(node, {&q, &k, &v, s.mask != Mask::kNone ? &mask : nullptr}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  Reference ref;
  const int64_t group = s.h / s.h_kv;
  for (int64_t t = 0; t < s.t; ++t) {
    const std::vector<double> m =
        s.mask != Mask::kNone ? mask.row_values(t) : std::vector<double>{};
    for (int64_t h = 0; h < s.h; ++h) {
      std::vector<std::vector<double>> kr, vr;
      for (int64_t j = 0; j < s.n_kv; ++j) {
        kr.push_back(k.row_values(j, h / group));
        vr.push_back(v.row_values(j, h / group));
      }
      reference_row(c, q.row_values(t, h), kr, vr, m.empty() ? nullptr : m.data(), scale, ref);
    }
  }
  expect_output(dst, ref.want, ref.bound, "FLASH_ATTN " + name);
}

const AttnShape kShapes[] = {
    {"decode", 64, 4, 4, 1, 77, Mask::kCausal},
    {"decode_gqa4_no_mask", 64, 8, 2, 1, 77, Mask::kNone},
    {"prefill_gqa2", 64, 4, 2, 13, 45, Mask::kCausal},
    {"prefill_gqa4_from_empty", 64, 8, 2, 71, 71, Mask::kCausal},
    {"head128_gqa4", 128, 4, 1, 5, 133, Mask::kCausal},
    {"masked_row", 32, 2, 1, 4, 19, Mask::kCausalOneRowHidden},
    {"head40_gqa8", 40, 8, 1, 3, 29, Mask::kCausal},  // D no vector width divides
    // Decode over several KV chunks (backends split n_kv and merge): GQA 4 and 8.
    {"decode_head128_gqa4_long", 128, 8, 2, 1, 300, Mask::kCausal},
    {"decode_head32_gqa8_long", 32, 8, 1, 1, 130, Mask::kCausal},
    {"decode_all_masked_long", 64, 4, 1, 1, 150, Mask::kCausalOneRowHidden},
    // Decode at the short/long boundary (256 positions) and with D = 256 over several passes.
    {"decode_head128_gqa4_256", 128, 8, 2, 1, 256, Mask::kCausal},
    // Long enough for the Vulkan decode attention to split the cache over several
    // workgroups per head (nine runs of 2 chunks of 64; six of one chunk of 128
    // with two tokens, one query row fully masked).
    {"decode_head128_split", 128, 8, 2, 1, 1100, Mask::kCausal},
    {"decode2_head64_split_masked_row", 64, 4, 2, 2, 700, Mask::kCausalOneRowHidden},
    {"decode_head256_gqa2", 256, 4, 2, 1, 200, Mask::kCausal},
    // Prefill with n_kv % 4 == 0 (mask rows CUDA reads in 16-byte pieces), tiles of
    // 64 x 64 that every token sees whole (no mask to add) beside partly masked ones.
    {"prefill_head128_gqa4_aligned", 128, 8, 2, 80, 128, Mask::kCausal},
    {"prefill_head64_from_empty_192", 64, 4, 2, 192, 192, Mask::kCausal},
    {"prefill_masked_row_aligned", 64, 4, 2, 70, 128, Mask::kCausalOneRowHidden},
    // Prompts in blocks of 16 tokens over tiles of 32 positions (Vulkan's tiled
    // kernel) with D = 32 (four queries per output lane) and without a mask.
    {"prefill_head32_gqa4", 32, 8, 2, 40, 90, Mask::kCausal},
    {"prefill_head128_no_mask", 128, 4, 4, 33, 50, Mask::kNone},
};

std::vector<AttnCase> all_cases() {
  std::vector<AttnCase> cases;
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    for (const AttnShape& s : kShapes) {
      if (s.d % traits(t).block_size == 0) cases.push_back({t, s});  // Q8_0: D % 32 == 0
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(KvTypes, FlashAttn, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           return std::string(type_name(info.param.kv_type)) + "_" +
                                  info.param.shape.name;
                         });

}  // namespace
}  // namespace polyinfer::conformance
