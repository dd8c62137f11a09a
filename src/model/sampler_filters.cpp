#include "model/sampler_filters.hpp"

#include <algorithm>
#include <cmath>

namespace polyinfer::sampling {
namespace {

// A strict total order, so every standard library sorts the same way.
bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Weight of a logit at temperature 1, relative to the largest (which weighs 1).
float weight(const Workspace& w, float logit) {
  return std::exp(logit - w.max_logit);
}

// The top-p histogram: buckets 1/32 logit wide below the maximum. Past 32 logits
// the weights are below e^-32 and share the last bucket.
constexpr size_t kBuckets = 1024;
constexpr float kBucketsPerLogit = 32.0f;

// How far a logit lies below the largest, in buckets (+inf for a -inf logit).
float depth(float max_logit, float logit) {
  return (max_logit - logit) * kBucketsPerLogit;
}

size_t bucket_of(float depth) {
  // Through int32: a float-to-unsigned-64 conversion costs several instructions on x86-64.
  return depth < static_cast<float>(kBuckets - 1) ? static_cast<size_t>(static_cast<int32_t>(depth))
                                                  : kBuckets - 1;
}

struct Cut {
  size_t bucket;       // the bucket where the cumulative mass first reaches the target
  double mass_before;  // the mass of the buckets before it
  double target;       // p times the total mass
};

Cut find_cut(Workspace& w, float p) {
  w.bucket_mass.assign(kBuckets, 0.0);
  for (const Candidate& x : w.items) {
    w.bucket_mass[bucket_of(depth(w.max_logit, x.logit))] += weight(w, x.logit);
  }
  double total = 0.0;
  for (const double m : w.bucket_mass) total += m;
  Cut cut{0, 0.0, static_cast<double>(p) * total};
  while (cut.bucket + 1 < kBuckets && cut.mass_before + w.bucket_mass[cut.bucket] < cut.target) {
    cut.mass_before += w.bucket_mass[cut.bucket++];
  }
  return cut;
}

}  // namespace

int32_t first_argmax(std::span<const float> logits, float max_logit) {
  return static_cast<int32_t>(std::find(logits.begin(), logits.end(), max_logit) - logits.begin());
}

void keep_top_k(Workspace& w, int32_t k) {
  const size_t n = w.logits.size();
  w.items.clear();
  if (k <= 0 || static_cast<size_t>(k) >= n) {
    for (size_t i = 0; i < n; ++i) w.items.push_back({static_cast<int32_t>(i), w.logits[i], 0.0f});
    return;
  }
  // A heap of the k best so far with the worst on top; a later token with an equal
  // logit has a higher id and ranks lower, so only a strictly larger one gets in.
  for (size_t i = 0; i < static_cast<size_t>(k); ++i) {
    w.items.push_back({static_cast<int32_t>(i), w.logits[i], 0.0f});
  }
  std::make_heap(w.items.begin(), w.items.end(), ranks_before);
  float worst = w.items.front().logit;
  for (size_t i = static_cast<size_t>(k); i < n; ++i) {
    if (w.logits[i] <= worst) continue;
    std::pop_heap(w.items.begin(), w.items.end(), ranks_before);
    w.items.back() = {static_cast<int32_t>(i), w.logits[i], 0.0f};
    std::push_heap(w.items.begin(), w.items.end(), ranks_before);
    worst = w.items.front().logit;
  }
  // The heap layout differs between standard libraries; the rank order does not.
  std::sort(w.items.begin(), w.items.end(), ranks_before);
}

void keep_top_p(Workspace& w, float p) {
  if (p >= 1.0f) return;
  const Cut cut = find_cut(w, p);
  const float max = w.max_logit;
  // The straddling bucket first: few tokens, a branch almost never taken.
  w.straddling.clear();
  for (const Candidate& x : w.items) {
    if (bucket_of(depth(max, x.logit)) == cut.bucket) w.straddling.push_back(x);
  }
  // The buckets above it are kept whole (their mass is below the target), compacted
  // in place without a branch: whether a token stays is a coin flip to a predictor.
  // (bucket < cut exactly when depth < cut.) Hand-written so the order is the same
  // on every standard library.
  const float cut_depth = static_cast<float>(cut.bucket);
  Candidate* items = w.items.data();
  size_t kept = 0;
  for (size_t i = 0, n = w.items.size(); i < n; ++i) {
    const Candidate x = items[i];
    items[kept] = x;
    kept += static_cast<size_t>(depth(max, x.logit) < cut_depth);
  }
  w.items.resize(kept);
  // The straddling bucket in rank order, up to the token that reaches the target.
  std::sort(w.straddling.begin(), w.straddling.end(), ranks_before);
  double cumulative = cut.mass_before;
  for (const Candidate& x : w.straddling) {
    w.items.push_back(x);
    cumulative += weight(w, x.logit);
    if (cumulative >= cut.target) break;
  }
}

void keep_min_p(Workspace& w, float p) {
  if (p <= 0.0f) return;
  const double threshold = static_cast<double>(w.max_logit) + std::log(static_cast<double>(p));
  size_t kept = 0;
  for (const Candidate& x : w.items) {
    if (static_cast<double>(x.logit) >= threshold) w.items[kept++] = x;
  }
  w.items.resize(kept);
}

int32_t draw(Workspace& w, float temp, double u) {
  double total = 0.0;
  for (Candidate& x : w.items) {
    x.weight = std::exp((x.logit - w.max_logit) / temp);
    total += static_cast<double>(x.weight);
  }
  const double target = u * total;
  double cumulative = 0.0;
  for (const Candidate& x : w.items) {
    cumulative += static_cast<double>(x.weight);
    if (cumulative > target) return x.id;
  }
  // u * total rounded up to total: the draw belongs to the last item with weight.
  // The largest logit weighs exactly 1, so there is one.
  const auto last = std::find_if(w.items.rbegin(), w.items.rend(),
                                 [](const Candidate& x) { return x.weight > 0.0f; });
  return last->id;
}

}  // namespace polyinfer::sampling
