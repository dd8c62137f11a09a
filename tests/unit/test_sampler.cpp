// The token sampler: greedy, seeding, the llama.cpp filter chain and the penalties,
// checked against float64 references on seeded random logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "polyinfer/error.hpp"
#include "polyinfer/sampler.hpp"

namespace polyinfer {
namespace {

std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> out(n);
  for (float& x : out) x = normal(rng);
  return out;
}

// No filtering: the draw is the plain softmax of logits / temp.
SamplerParams unfiltered(float temp, uint64_t seed) {
  SamplerParams p;
  p.temp = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

size_t argmax(const std::vector<float>& logits) {
  return static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Token ids by rank: logit descending, lower id first on ties (the sampler's order).
std::vector<int32_t> ranked(const std::vector<float>& logits) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  return ids;
}

// Float64 softmax of logits[ids] / temp, indexed like ids.
std::vector<double> softmax(const std::vector<float>& logits, const std::vector<int32_t>& ids,
                            double temp) {
  double max = -INFINITY;
  for (int32_t id : ids) max = std::max(max, static_cast<double>(logits[static_cast<size_t>(id)]));
  std::vector<double> p;
  double sum = 0.0;
  for (int32_t id : ids) {
    p.push_back(std::exp((logits[static_cast<size_t>(id)] - max) / temp));
    sum += p.back();
  }
  for (double& x : p) x /= sum;
  return p;
}

std::vector<int32_t> all_ids(size_t n) {
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

// Upper 1 - 3e-7 quantile (z = 5) of chi-square with df degrees of freedom, by the
// Wilson-Hilferty approximation: a correct sampler fails it about once in 3 million.
double chi_square_bound(size_t df) {
  const double d = static_cast<double>(df);
  const double a = 2.0 / (9.0 * d);
  return d * std::pow(1.0 - a + 5.0 * std::sqrt(a), 3.0);
}

// Draws n tokens and checks that they all lie in `ids` and that their counts fit
// the float64 probabilities `p` of those ids (chi-square goodness of fit).
void expect_distribution(Sampler& s, const std::vector<float>& logits,
                         const std::vector<int32_t>& ids, const std::vector<double>& p, size_t n) {
  std::vector<size_t> counts(logits.size(), 0);
  for (size_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(logits))];
  const std::set<int32_t> kept(ids.begin(), ids.end());
  for (size_t id = 0; id < counts.size(); ++id) {
    if (!kept.count(static_cast<int32_t>(id))) {
      EXPECT_EQ(counts[id], 0u) << "filtered token " << id << " was drawn";
    }
  }
  double chi2 = 0.0;
  for (size_t j = 0; j < ids.size(); ++j) {
    const double expected = p[j] * static_cast<double>(n);
    const double d = static_cast<double>(counts[static_cast<size_t>(ids[j])]) - expected;
    chi2 += d * d / expected;
  }
  EXPECT_LT(chi2, chi_square_bound(ids.size() - 1)) << ids.size() << " kept tokens";
}

TEST(Sampler, GreedyPicksTheArgmax) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto logits = random_logits(1000, seed, 3.0f);
    for (const float temp : {0.0f, -1.0f}) {
      SamplerParams p;
      p.temp = temp;
      p.seed = seed;
      Sampler s(p);
      EXPECT_EQ(static_cast<size_t>(s.sample(logits)), argmax(logits));
    }
  }
}

TEST(Sampler, GreedyTakesTheFirstOfTiedMaxima) {
  auto logits = random_logits(500, 7, 1.0f);
  const float top = *std::max_element(logits.begin(), logits.end()) + 1.0f;
  logits[123] = top;
  logits[45] = top;
  logits[400] = top;
  SamplerParams p;
  p.temp = 0.0f;
  Sampler s(p);
  EXPECT_EQ(s.sample(logits), 45);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferent) {
  const auto logits = random_logits(5000, 11, 2.0f);
  auto run = [&](uint64_t seed) {
    Sampler s(unfiltered(1.0f, seed));
    std::vector<int32_t> out;
    for (int i = 0; i < 300; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  const auto a = run(42), b = run(43);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  // With N(0, 2) logits over 5000 tokens, two independent draws agree with
  // probability sum(p^2) ~ e^4 / 5000 ~ 1%; half is far out of reach.
  EXPECT_LT(same, a.size() / 2);
}

TEST(Sampler, ResetReplaysTheSequence) {
  const auto logits = random_logits(300, 12, 2.0f);
  Sampler s(unfiltered(0.9f, 99));
  std::vector<int32_t> first;
  for (int i = 0; i < 50; ++i) first.push_back(s.sample(logits));
  s.reset();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits), first[static_cast<size_t>(i)]) << i;
}

TEST(Sampler, DefaultSeedIsRandomAndReadable) {
  const SamplerParams a, b;
  EXPECT_NE(a.seed, b.seed);  // 2^-64 chance of a false failure
  EXPECT_EQ(Sampler(a).seed(), a.seed);
}

TEST(Sampler, DefaultsAreLlamaCpps) {
  const SamplerParams p;
  EXPECT_EQ(p.temp, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_EQ(p.top_p, 0.95f);
  EXPECT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.repeat_last_n, 64);
}

TEST(Sampler, DrawsInvertTheCdfAtTheDocumentedUniform) {
  // Unfiltered, the candidates are in id order and each sample() maps one output x
  // of mt19937_64(seed) to u = (x >> 11) * 2^-53: the token is the first whose
  // cumulative probability exceeds u. Draws within 1e-6 of a step of the float64
  // CDF are skipped: there the sampler's float weights may round either way.
  const auto logits = random_logits(20, 50, 1.0f);
  const auto p = softmax(logits, all_ids(logits.size()), 1.0);
  std::vector<double> cdf(p.size());
  std::partial_sum(p.begin(), p.end(), cdf.begin());
  Sampler s(unfiltered(1.0f, 777));
  std::mt19937_64 rng(777);
  int skipped = 0;
  for (int i = 0; i < 5000; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const int32_t got = s.sample(logits);
    const auto step = std::upper_bound(cdf.begin(), cdf.end(), u);
    const bool near =
        std::any_of(cdf.begin(), cdf.end(), [&](double c) { return std::fabs(c - u) < 1e-6; });
    if (near) {
      ++skipped;
      continue;
    }
    ASSERT_EQ(got, static_cast<int32_t>(step - cdf.begin())) << "draw " << i << " u " << u;
  }
  EXPECT_LT(skipped, 10);  // 20 steps * 2e-6 wide * 5000 draws: 0.2 expected
}

TEST(Sampler, MinusInfinityLogitsAreNeverDrawn) {
  auto logits = random_logits(2000, 51, 0.5f);
  for (size_t i = 0; i < logits.size(); i += 2) logits[i] = -INFINITY;
  SamplerParams configs[4] = {unfiltered(2.0f, 1), unfiltered(2.0f, 2), unfiltered(2.0f, 3),
                              unfiltered(2.0f, 4)};
  configs[1].top_k = 1500;
  configs[2].top_p = 0.999f;
  configs[3].min_p = 1e-30f;
  for (const SamplerParams& p : configs) {
    Sampler s(p);
    for (int i = 0; i < 3000; ++i) ASSERT_EQ(s.sample(logits) % 2, 1) << "seed " << p.seed;
  }
}

TEST(Sampler, TopKOneIsGreedy) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto logits = random_logits(2000, seed, 2.0f);
    if (seed % 3 == 0) logits[1999] = logits[argmax(logits)];  // a tie: the lower id wins
    SamplerParams p = unfiltered(1.5f, seed);
    p.top_k = 1;
    Sampler s(p);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(static_cast<size_t>(s.sample(logits)), argmax(logits));
  }
}

TEST(Sampler, UnfilteredDrawsMatchTheSoftmax) {
  // 50 tokens, logits N(0, 1.5): the rarest has an expected count in the hundreds.
  const auto logits = random_logits(50, 2024, 1.5f);
  const auto ids = all_ids(logits.size());
  for (const float temp : {1.0f, 0.7f}) {
    Sampler s(unfiltered(temp, 5));
    expect_distribution(s, logits, ids, softmax(logits, ids, temp), 200000);
  }
}

TEST(Sampler, TopKDrawsMatchTheRenormalizedTopK) {
  const auto logits = random_logits(3000, 31, 2.0f);
  SamplerParams p = unfiltered(1.0f, 8);
  p.top_k = 12;
  Sampler s(p);
  const auto r = ranked(logits);
  const std::vector<int32_t> kept(r.begin(), r.begin() + 12);
  expect_distribution(s, logits, kept, softmax(logits, kept, 1.0), 100000);
}

// A top-p that keeps exactly the m highest-ranked of `ids` (already in rank order):
// halfway between the float64 masses of the first m - 1 and the first m tokens, so
// rounding in the sampler's own sums cannot move the cut.
float top_p_keeping(const std::vector<float>& logits, const std::vector<int32_t>& ids, size_t m) {
  const auto p = softmax(logits, ids, 1.0);
  const double below = std::accumulate(p.begin(), p.begin() + static_cast<ptrdiff_t>(m - 1), 0.0);
  return static_cast<float>(below + p[m - 1] / 2.0);
}

TEST(Sampler, TopPDrawsMatchTheRenormalizedNucleus) {
  const auto logits = random_logits(3000, 32, 3.0f);
  const auto r = ranked(logits);
  SamplerParams p = unfiltered(1.0f, 9);
  p.top_p = top_p_keeping(logits, r, 15);
  Sampler s(p);
  const std::vector<int32_t> kept(r.begin(), r.begin() + 15);
  expect_distribution(s, logits, kept, softmax(logits, kept, 1.0), 100000);
}

TEST(Sampler, TopPOnAFullVocabularyNeverDrawsOutsideTheNucleus) {
  // 152k tokens with no top-k: the cut falls inside one histogram bucket of thousands.
  const auto logits = random_logits(152064, 33, 1.0f);
  const auto r = ranked(logits);
  const size_t m = 20000;
  SamplerParams p = unfiltered(1.0f, 10);
  p.top_p = top_p_keeping(logits, r, m);
  Sampler s(p);
  std::vector<bool> in_nucleus(logits.size(), false);
  for (size_t i = 0; i < m; ++i) in_nucleus[static_cast<size_t>(r[i])] = true;
  for (int i = 0; i < 2000; ++i) {
    const int32_t t = s.sample(logits);
    ASSERT_TRUE(in_nucleus[static_cast<size_t>(t)]) << "draw " << i << " token " << t;
  }
}

// A min-p that keeps exactly the m highest-ranked of `ids`: the probability ratio
// to the top token halfway (in log space) between the m-th and the (m+1)-th.
float min_p_keeping(const std::vector<float>& logits, const std::vector<int32_t>& ids, size_t m) {
  const double top = logits[static_cast<size_t>(ids[0])];
  const double last_kept = logits[static_cast<size_t>(ids[m - 1])];
  const double first_dropped = logits[static_cast<size_t>(ids[m])];
  return static_cast<float>(std::exp((last_kept + first_dropped) / 2.0 - top));
}

TEST(Sampler, MinPDrawsMatchTheRenormalizedKeptSet) {
  const auto logits = random_logits(3000, 34, 2.0f);
  const auto r = ranked(logits);
  SamplerParams p = unfiltered(1.0f, 11);
  p.min_p = min_p_keeping(logits, r, 9);
  Sampler s(p);
  const std::vector<int32_t> kept(r.begin(), r.begin() + 9);
  expect_distribution(s, logits, kept, softmax(logits, kept, 1.0), 100000);
}

TEST(Sampler, FullChainFiltersAtTemperatureOneThenScales) {
  // top-k 60 -> top-p keeps 25 of those -> min-p keeps 10 -> draw at temp 0.6.
  const auto logits = random_logits(8000, 35, 2.5f);
  const auto r = ranked(logits);
  const std::vector<int32_t> top60(r.begin(), r.begin() + 60);
  SamplerParams p;
  p.temp = 0.6f;
  p.top_k = 60;
  p.top_p = top_p_keeping(logits, top60, 25);
  p.min_p = min_p_keeping(logits, top60, 10);
  p.seed = 12;
  Sampler s(p);
  const std::vector<int32_t> kept(r.begin(), r.begin() + 10);
  expect_distribution(s, logits, kept, softmax(logits, kept, 0.6), 100000);
}

// Float64 reference of the penalty formulas for one token seen `count` times.
double penalized(double logit, int count, const SamplerParams& p) {
  logit = logit <= 0.0 ? logit * p.repeat_penalty : logit / p.repeat_penalty;
  return logit - (count * static_cast<double>(p.frequency_penalty) +
                  (count > 0 ? static_cast<double>(p.presence_penalty) : 0.0));
}

TEST(Sampler, PenaltiesFollowTheFormulasOverTheWindow) {
  const auto logits = random_logits(400, 40, 3.0f);
  std::mt19937_64 rng(41);
  std::vector<int32_t> history(100);
  for (int32_t& t : history) t = static_cast<int32_t>(rng() % 60);  // repeats guaranteed
  for (const int32_t window : {0, 1, 16, 64, -1}) {
    SamplerParams p;
    p.repeat_penalty = 1.3f;
    p.frequency_penalty = 0.25f;
    p.presence_penalty = 0.5f;
    p.repeat_last_n = window;
    Sampler s(p);
    for (const int32_t t : history) s.accept(t);
    std::vector<int> counts(logits.size(), 0);
    const size_t n = window < 0 ? history.size() : static_cast<size_t>(window);
    for (size_t i = history.size() - n; i < history.size(); ++i) {
      ++counts[static_cast<size_t>(history[i])];
    }
    auto got = logits;
    s.apply_penalties(got);
    for (size_t i = 0; i < logits.size(); ++i) {
      const double want = counts[i] > 0 ? penalized(logits[i], counts[i], p) : logits[i];
      // float arithmetic against float64: a few ulps of the larger operand.
      EXPECT_NEAR(got[i], want, 1e-6 * (1.0 + std::fabs(want)))
          << "window " << window << " token " << i << " count " << counts[i];
    }
  }
}

TEST(Sampler, RepeatPenaltyMultipliesNonPositiveLogits) {
  SamplerParams p;
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  for (const int32_t t : {0, 1, 2}) s.accept(t);
  std::vector<float> logits = {3.0f, -3.0f, 0.0f, 5.0f};
  s.apply_penalties(logits);
  EXPECT_EQ(logits, (std::vector<float>{1.5f, -6.0f, 0.0f, 5.0f}));
}

TEST(Sampler, PenaltiesDriveGreedyAndTheDistribution) {
  SamplerParams p;
  p.temp = 0.0f;
  p.repeat_penalty = 1.1f;
  Sampler greedy(p);
  const std::vector<float> two = {2.0f, 1.9f};
  EXPECT_EQ(greedy.sample(two), 0);
  greedy.accept(0);
  EXPECT_EQ(greedy.sample(two), 1);  // 2.0 / 1.1 < 1.9

  const auto logits = random_logits(40, 42, 1.0f);
  SamplerParams q = unfiltered(1.0f, 13);
  q.repeat_penalty = 1.5f;
  q.frequency_penalty = 0.3f;
  q.presence_penalty = 0.2f;
  Sampler s(q);
  for (const int32_t t : {3, 3, 3, 7, 19, 7}) s.accept(t);
  auto penalized_logits = logits;
  s.apply_penalties(penalized_logits);
  const auto ids = all_ids(logits.size());
  expect_distribution(s, logits, ids, softmax(penalized_logits, ids, 1.0), 200000);
}

void expect_invalid(const SamplerParams& p) {
  try {
    Sampler s(p);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(Sampler, InvalidParametersThrow) {
  const float nan = std::nanf("");
  for (const float v : {0.0f, -0.1f, 1.01f, nan}) {
    SamplerParams p;
    p.top_p = v;
    expect_invalid(p);
  }
  for (const float v : {-0.01f, 1.01f, nan}) {
    SamplerParams p;
    p.min_p = v;
    expect_invalid(p);
  }
  for (const float v : {0.0f, -1.0f, nan, INFINITY}) {
    SamplerParams p;
    p.repeat_penalty = v;
    expect_invalid(p);
  }
  SamplerParams t;
  t.temp = nan;
  expect_invalid(t);
  SamplerParams f;
  f.frequency_penalty = INFINITY;
  expect_invalid(f);
  SamplerParams w;
  w.repeat_last_n = -2;
  expect_invalid(w);
  // The edges of each range are accepted.
  SamplerParams edges;
  edges.temp = -2.0f;
  edges.top_p = 1.0f;
  edges.min_p = 1.0f;
  edges.repeat_last_n = -1;
  EXPECT_NO_THROW(Sampler{edges});
}

TEST(Sampler, BadInputsThrow) {
  Sampler s(SamplerParams{});
  EXPECT_THROW(s.sample({}), Error);
  EXPECT_THROW(s.accept(-1), Error);
  std::vector<float> logits = {0.5f, std::nanf(""), 1.0f};
  EXPECT_THROW(s.sample(logits), Error);
  logits[1] = INFINITY;
  EXPECT_THROW(s.sample(logits), Error);
  logits = {-INFINITY, -INFINITY};
  EXPECT_THROW(s.sample(logits), Error);  // nothing to draw from
  s.accept(5);                            // outside a 2-token vocabulary
  logits = {0.0f, 1.0f};
  EXPECT_THROW(s.sample(logits), Error);
  EXPECT_THROW(s.apply_penalties(logits), Error);
}

}  // namespace
}  // namespace polyinfer
