// Per-sub-block scale searches of ggml's K-quant reference quantizers
// (ggml-quants.c make_qkx2_quants and make_qx_quants), reimplemented with the
// same float32 arithmetic so the chosen codes match ggml's.
#pragma once

#include <cstdint>

namespace polyinfer::quant {

// Largest sub-block the searches handle (Q4_K/Q5_K use 32, Q6_K uses 16); the
// scratch arrays live on the stack at this size.
inline constexpr int kMaxSubBlock = 32;

// Parameters of the asymmetric search: codes 0..nmax, and nstep + 1 trial
// inverse scales (nmax + rmin + rdelta * is) / (max - min), is = 0..nstep.
struct AsymmetricSearch {
  int nmax;
  float rmin;
  float rdelta;
  int nstep;
};

struct ScaleAndMin {
  float scale;  // x ~= scale * L - min
  float min;    // >= 0: the amount subtracted
};

// Fits x[0..n) ~= scale * L - min with L in 0..nmax minimising the weighted
// squared error sum(w * err^2) over the trial scales (make_qkx2_quants with
// use_mad = false). Writes the codes of the best fit to L.
ScaleAndMin search_scale_min(const float* x, const float* w, int n, const AsymmetricSearch& p,
                             uint8_t* L);

// Fits x[0..n) ~= scale * (L - nmax) with L - nmax in -nmax..nmax-1, weighting
// each element by x^2 (make_qx_quants with rmse_type 1 and no importance
// weights). Writes the codes L (0..2*nmax-1) and returns the scale, which has
// the sign that maps the largest |x| to -nmax. Returns 0 for an all-zero x.
float search_symmetric_scale(const float* x, int n, int nmax, int8_t* L);

}  // namespace polyinfer::quant
