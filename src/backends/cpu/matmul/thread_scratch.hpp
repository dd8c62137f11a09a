// Per-thread scratch memory of the matmul kernels: 64-byte aligned, grown on
// demand and kept for the thread's later calls, so steady-state GEMMs
// allocate nothing.
#pragma once
#include <cstddef>
#include <cstdint>

namespace polyinfer::cpu {

enum class ScratchSlot { kActPanels, kWeightTile, kDecodePrep, kCount };

// At least `bytes` bytes for the calling thread; valid until its next call
// with the same slot.
uint8_t* thread_scratch(ScratchSlot slot, size_t bytes);

}  // namespace polyinfer::cpu
