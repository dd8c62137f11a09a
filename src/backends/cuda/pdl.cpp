#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

// Per host thread: a submit sets it for the device it launches on.
thread_local bool g_pdl = false;

}  // namespace

void set_pdl_launches(bool on) {
  g_pdl = on;
}

bool pdl_launches() {
  return g_pdl;
}

}  // namespace polyinfer::cuda
