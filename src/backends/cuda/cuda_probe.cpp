// probe, device_count and device_info: what `polyinfer backends` shows. The
// runtime is linked statically, so the only thing a machine needs is the
// driver; without it cudaDriverGetVersion reports 0 and probe says so.
#include "backends/cuda/cuda_probe.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace polyinfer::cuda {
namespace {

// "12.8" from CUDA's 12080.
void version_text(int v, char* out, size_t cap) {
  std::snprintf(out, cap, "%d.%d", v / 1000, (v % 1000) / 10);
}

// The kernel module's version ("580.159.04") from the driver's proc file;
// empty where that file is absent (containers may not mount it).
void module_version(char (&out)[32]) {
  out[0] = '\0';
  std::FILE* f = std::fopen("/proc/driver/nvidia/version", "r");
  if (f == nullptr) return;
  char line[256];
  if (std::fgets(line, sizeof line, f) != nullptr) {
    // "NVRM version: NVIDIA UNIX [Open] Kernel Module [for x86_64]  580.159.04  Release ...":
    // the version is the first word after "Kernel Module" that starts with a digit.
    const char* at = std::strstr(line, "Kernel Module");
    char word[32];
    int used = 0;
    for (at = at ? at + 13 : nullptr; at && std::sscanf(at, "%31s%n", word, &used) == 1;
         at += used) {
      if (word[0] >= '0' && word[0] <= '9') {
        std::snprintf(out, 32, "%s", word);
        break;
      }
    }
  }
  std::fclose(f);
}

}  // namespace

int probe(char* reason, size_t reason_len) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char dv[16], rv[16];
  version_text(driver, dv, sizeof dv);
  version_text(runtime, rv, sizeof rv);
  if (driver == 0) {
    std::snprintf(reason, reason_len, "no NVIDIA driver found (libcuda.so.1 missing); runtime %s",
                  rv);
    return 0;
  }
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    std::snprintf(reason, reason_len,
                  "cudaGetDeviceCount: %s (driver supports CUDA %s, runtime %s)",
                  cudaGetErrorString(e), dv, rv);
    return 0;
  }
  if (n == 0) {
    std::snprintf(reason, reason_len, "no CUDA device (driver supports CUDA %s, runtime %s)", dv,
                  rv);
    return 0;
  }
  return 1;
}

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

pi_status device_info(int index, pi_device_info* out) {
  if (out == nullptr || index < 0 || index >= device_count()) return PI_ERR_INVALID;
  std::memset(out, 0, sizeof *out);
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return PI_ERR_DEVICE;
  std::memcpy(out->name, p.name, std::min(sizeof out->name, sizeof p.name) - 1);
  std::snprintf(out->vendor, sizeof out->vendor, "NVIDIA");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  // The kernel module's version (as nvidia-smi), and the CUDA version the
  // driver supports, which the runtime API does report.
  char module[32];
  module_version(module);
  std::snprintf(out->driver_version, sizeof out->driver_version, "%s%sCUDA %d.%d", module,
                module[0] ? ", " : "", driver / 1000, (driver % 1000) / 10);
  std::snprintf(out->compute_version, sizeof out->compute_version, "sm_%d%d", p.major, p.minor);
  if (cudaDeviceGetPCIBusId(out->bus_id, sizeof out->bus_id, index) != cudaSuccess)
    out->bus_id[0] = '\0';
  static_assert(sizeof out->uuid == sizeof p.uuid.bytes);
  std::memcpy(out->uuid, p.uuid.bytes, sizeof out->uuid);
  out->kind = p.integrated ? PI_DEVICE_IGPU : PI_DEVICE_GPU;
  out->memory_total = p.totalGlobalMem;
  size_t free_b = 0, total_b = 0;
  int prev = 0;
  cudaGetDevice(&prev);
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    out->memory_free = free_b;
  }
  cudaSetDevice(prev);
  out->host_visible = 0;
  return PI_OK;
}

}  // namespace polyinfer::cuda
