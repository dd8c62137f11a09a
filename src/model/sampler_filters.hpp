// The truncation filters and the final draw of the sampler chain. Each runs in
// O(vocab) passes plus a sort of what it keeps, never a sort of the vocabulary:
// top-k selects through a k-sized heap, top-p cuts inside one bucket of a logit
// histogram. Orders are fixed by this code (ties by the lower id), not by the
// standard library, so a seed gives the same tokens everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace polyinfer::sampling {

// One vocabulary entry still in play.
struct Candidate {
  int32_t id;
  float logit;
  float weight;  // scratch: exp((logit - max_logit) / temp) in draw()
};

// sample()'s buffers, reused from call to call: after the first call with a given
// vocabulary size nothing is allocated.
struct Workspace {
  std::vector<float> logits;          // the penalized row, indexed by token id
  float max_logit = 0.0f;             // its largest value; no filter ever drops it
  std::vector<Candidate> items;       // the candidates in play
  std::vector<Candidate> straddling;  // top-p: the histogram bucket holding the cut
  std::vector<double> bucket_mass;    // top-p: softmax mass per histogram bucket
};

// Index of the first largest logit.
int32_t first_argmax(std::span<const float> logits, float max_logit);

// Fills items with the k highest-ranked tokens (logit descending, lower id first on
// ties), in rank order; k <= 0 or k >= vocab keeps every token, in id order.
void keep_top_k(Workspace& w, int32_t k);

// Keeps the highest-ranked items whose softmax mass (at temperature 1) first reaches
// p; p >= 1 keeps all.
void keep_top_p(Workspace& w, float p);

// Keeps the items whose probability is at least p times the largest one, i.e.
// logit >= max_logit + log(p); p <= 0 keeps all. Order is preserved.
void keep_min_p(Workspace& w, float p);

// Draws one id from softmax(logit / temp) over the items, mapping u in [0, 1) onto
// their cumulative weights in list order. temp must be > 0.
int32_t draw(Workspace& w, float temp, double u);

}  // namespace polyinfer::sampling
