// The host memory this process has page-locked through buffer_wrap_host
// (cudaHostRegister), so that buffer_write knows when its source is such
// memory: cudaMemcpyAsync then returns before the copy has read it, where the
// ABI lets the caller reuse the source at once, so the write waits for it.
#pragma once

#include <cstdint>

namespace polyinfer::cuda {

void add_host_pin(const void* ptr, uint64_t size);
void remove_host_pin(const void* ptr);
// Whether [ptr, ptr + size) lies within one page-locked range.
bool host_pinned(const void* ptr, uint64_t size);

}  // namespace polyinfer::cuda
