// Programmatic dependent launch (PDL, compute capability 9.0+; CUDA Programming
// Guide, "Programmatic Dependent Launch and Synchronization").
//
// A kernel launched through launch_pdl() with PDL on may start while the
// kernel before it on the stream is still running. Every kernel of this
// plugin therefore calls pdl_start() before it reads or writes anything an
// earlier kernel touches: it lets the next kernel launch and waits for its
// own dependency (both no-ops when it was launched without PDL or the device
// predates sm_90). The next kernel's blocks then take free multiprocessors
// and run their independent prologue early: the matrix-vector kernels copy
// their first weight segment before they wait, when no node has written the
// weights' buffer (pi_buffer_s::kernel_written), so weights stream while the
// kernel before them drains (decode runs ~300 short dependent kernels per
// token on llama-8b).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace polyinfer::cuda {

// What every kernel does before it touches memory an earlier kernel touches:
// griddepcontrol.launch_dependents (the next kernel on the stream may launch
// once every block of this one has issued it or exited), then
// griddepcontrol.wait (until the kernel before this one has completed and its
// writes are visible). The trigger comes first so that the next kernel's
// blocks can take free multiprocessors (and the matrix-vector kernels start
// their weight copies) while this one still waits; on an H100 (session 14,
// tg128) that gave llama-8b Q4_K_M 296-298 tok/s against 281-282 with the
// trigger after the wait and 281-282 without PDL. Every block still waits
// before it exits, so a kernel completes only after the one before it:
// dependencies stay transitive however early the launches come.
__device__ __forceinline__ void pdl_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether launch_pdl() on this thread asks for programmatic serialization
// (set per submit from the device: sm_90+ and option pdl= not 0).
void set_pdl_launches(bool on);
bool pdl_launches();

// kernel<<<grid, block, smem, stream>>>(args...), with PDL when on. Errors
// surface through cudaGetLastError() as for a <<<>>> launch.
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  const bool on = pdl_launches();
  cfg.attrs = on ? &attr : nullptr;
  cfg.numAttrs = on ? 1 : 0;
  (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace polyinfer::cuda
