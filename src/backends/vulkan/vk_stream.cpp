#include "backends/vulkan/vk_stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "backends/vulkan/vk_check.hpp"

using polyinfer::vk::check;

namespace {
// Transfers go through staging chunks of at most this size, so a multi-GB
// weight upload needs no staging copy of itself.
constexpr uint64_t kChunk = 64ull << 20;
// Staged uploads in flight before write() waits for the oldest ones.
constexpr uint64_t kMaxStagingInFlight = 256ull << 20;
constexpr size_t kMaxFreeStaging = 8;
constexpr uint64_t kMinStaging = 64ull << 10;
// Staging a batch of writes holds before it is queued on its own: a decode
// step's three inputs take 192 KiB (64 KiB at least each); a weight's upload
// is not held back, nor are more than 16 small writes.
constexpr uint64_t kMaxBatch = 1ull << 20;
// How long a read polls its fence before it sleeps in the driver: longer
// than a decode step. On the H200 (driver 580) vkWaitForFences returned
// 50-90 us after a decode step's end, polling 35 us: llama-1b Q4_0 tg128
// 878-898 -> 944-959 tok/s (BENCHMARKS.md, session 28).
constexpr std::chrono::milliseconds kPollFor{20};
// Writes from wrapped host memory of at least this many bytes run by DMA
// straight from it, and wait for the copy (the caller may reuse the source
// on return); smaller ones are staged and held back with the next graph.
constexpr uint64_t kDirectWriteMin = 1ull << 20;
// Recordings of one graph key before a submit waits for its own earlier
// submissions rather than record another: enough to keep the queue fed.
constexpr size_t kMaxRecordingsPerKey = 3;

// The copies before it visible to the host once the submission's fence signals.
void host_read_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                       0, nullptr, 0, nullptr);
}

uint64_t staging_size(uint64_t need) {
  uint64_t s = kMinStaging;
  while (s < need) s *= 2;
  return s;
}
}  // namespace

pi_stream_s::pi_stream_s(pi_device d) : dev(d) {
  if (dev->profile) profiler_ = std::make_unique<polyinfer::vk::Profiler>();
  dev->streams.push_back(this);
}

pi_stream_s::~pi_stream_s() {
  std::erase(dev->streams, this);
  drop_prepared();
  // Writes still held are queued, so that all of the stream's work runs; a
  // failure has no one to tell (stream_destroy returns nothing) and leaves
  // nothing queued to wait for.
  try {
    flush_batch();
  } catch (const std::exception&) {
  }
  retire(true);
  if (profiler_) std::fputs(profiler_->report().c_str(), stderr);
  for (auto& b : free_staging_) dev->allocator->destroy_host_buffer(b);
  for (VkFence f : free_fences_) vkDestroyFence(dev->device, f, nullptr);
}

VkFence pi_stream_s::acquire_fence() {
  if (!free_fences_.empty()) {
    VkFence f = free_fences_.back();
    free_fences_.pop_back();
    return f;
  }
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  check(vkCreateFence(dev->device, &fi, nullptr, &f), "vkCreateFence");
  return f;
}

polyinfer::vk::Allocator::HostBuffer pi_stream_s::acquire_staging(uint64_t size, bool cached) {
  auto best = free_staging_.end();
  for (auto it = free_staging_.begin(); it != free_staging_.end(); ++it) {
    if (it->cached == cached && it->size >= size &&
        (best == free_staging_.end() || it->size < best->size))
      best = it;
  }
  if (best != free_staging_.end()) {
    auto b = *best;
    free_staging_.erase(best);
    return b;
  }
  return dev->allocator->create_host_buffer(
      staging_size(size), VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      cached);
}

VkCommandBuffer pi_stream_s::begin_one_shot() {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = dev->command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(dev->device, &ai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  // Order after everything earlier on the queue (graphs writing what is read
  // back, or reading what is about to be overwritten).
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                       1, &mb, 0, nullptr, 0, nullptr);
  return cmd;
}

void pi_stream_s::submit(Pending p, VkCommandBuffer graph) {
  // Counted first: release(), on any failure below, takes it off again.
  for (const auto& st : p.staging) staging_in_flight_ += st.size;
  try {
    p.fence = acquire_fence();
  } catch (...) {
    // Never queued: nothing of it ran (no profile to read).
    if (p.recording) --p.recording->in_flight;
    p.recording = nullptr;
    release(p);
    throw;
  }
  VkCommandBuffer cmds[2];
  uint32_t n = 0;
  if (p.one_shot) cmds[n++] = p.one_shot;
  if (graph) cmds[n++] = graph;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = n;
  si.pCommandBuffers = cmds;
  const VkResult r = vkQueueSubmit(dev->queue, 1, &si, p.fence);
  if (r != VK_SUCCESS) {
    release(p);
    check(r, "vkQueueSubmit");
  }
  if (graph && dev->profile_span) profiler_->graph_queued();
  pending_.push_back(std::move(p));
}

void pi_stream_s::recycle(polyinfer::vk::Allocator::HostBuffer& st) {
  if (free_staging_.size() < kMaxFreeStaging) {
    free_staging_.push_back(st);
  } else {
    dev->allocator->destroy_host_buffer(st);
  }
}

void pi_stream_s::release(Pending& p) {
  if (p.fence) {
    vkResetFences(dev->device, 1, &p.fence);
    free_fences_.push_back(p.fence);
  }
  if (p.one_shot) vkFreeCommandBuffers(dev->device, dev->command_pool, 1, &p.one_shot);
  for (auto& st : p.staging) {
    staging_in_flight_ -= std::min(staging_in_flight_, st.size);
    recycle(st);
  }
  p.staging.clear();
  if (p.recording) {
    if (p.recording->queries)
      profiler_->add_nodes(dev->device, p.recording->queries, p.profile_keys, dev->timestamps);
    if (p.recording->span) profiler_->add_span(dev->device, p.recording->span, dev->timestamps);
    --p.recording->in_flight;
  }
  p.recording = nullptr;
  p.graph.reset();
}

void pi_stream_s::retire(bool wait_all) {
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (wait_all) {
      const VkResult r = vkWaitForFences(dev->device, 1, &p.fence, VK_TRUE, UINT64_MAX);
      if (r != VK_SUCCESS) check(r, "vkWaitForFences");
    } else if (vkGetFenceStatus(dev->device, p.fence) != VK_SUCCESS) {
      break;
    }
    release(p);
    pending_.pop_front();
  }
}

pi_stream_s::Batch& pi_stream_s::open_batch() {
  if (!batch_) {
    Batch b;
    b.pending.one_shot = begin_one_shot();
    batch_ = std::move(b);
  }
  return *batch_;
}

void pi_stream_s::order_in_batch(Batch& b, VkBuffer buffer, uint64_t offset, uint64_t size,
                                 bool whole_batch) {
  const bool overlaps = std::any_of(b.written.begin(), b.written.end(), [&](const auto& w) {
    return whole_batch ||
           (w.buffer == buffer && w.offset < offset + size && offset < w.offset + w.size);
  });
  if (!overlaps) return;
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(b.pending.one_shot, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  b.written.clear();
}

void pi_stream_s::take_batch(Pending& p) {
  if (!batch_) return;
  p.one_shot = batch_->pending.one_shot;
  p.staging = std::move(batch_->pending.staging);
  batch_.reset();
  const VkResult r = vkEndCommandBuffer(p.one_shot);
  if (r != VK_SUCCESS) {
    // Never queued, as in submit's failure.
    if (p.recording) --p.recording->in_flight;
    p.recording = nullptr;
    release(p);
    check(r, "vkEndCommandBuffer");
  }
}

void pi_stream_s::flush_batch() {
  if (!batch_) return;
  Pending p;
  take_batch(p);
  submit(std::move(p), VK_NULL_HANDLE);
}

void pi_stream_s::copy_now(VkBuffer from, uint64_t from_off, VkBuffer to, uint64_t to_off,
                           uint64_t n, bool to_host) {
  Batch& b = open_batch();
  order_in_batch(b, to, to_off, n, to_host);
  const VkBufferCopy region{from_off, to_off, n};
  vkCmdCopyBuffer(b.pending.one_shot, from, to, 1, &region);
  if (to_host) host_read_barrier(b.pending.one_shot);
  flush_batch();
  wait_fence(pending_.back().fence);
  if (to_host && dev->profile_span) profiler_->read_returned();
  retire(true);
}

void pi_stream_s::write(pi_buffer buf, uint64_t offset, const void* src, uint64_t size) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  const VkBuffer dst = buf->alloc.block->buffer;
  if (size >= kDirectWriteMin) {
    if (const auto hit = dev->imports.find(src, size); hit.buffer != VK_NULL_HANDLE) {
      copy_now(hit.buffer, hit.offset, dst, buf->alloc.offset + offset, size, false);
      return;
    }
  }
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(kChunk, size - done);
    retire(false);
    while (staging_in_flight_ + n > kMaxStagingInFlight && !pending_.empty()) {
      Pending& p = pending_.front();
      check(vkWaitForFences(dev->device, 1, &p.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      retire(false);
    }
    Batch& b = open_batch();
    b.pending.staging.push_back(acquire_staging(n, false));
    const auto& st = b.pending.staging.back();
    std::memcpy(st.mapped, bytes + done, n);
    const uint64_t at = buf->alloc.offset + offset + done;
    order_in_batch(b, dst, at, n, false);
    const VkBufferCopy region{0, at, n};
    vkCmdCopyBuffer(b.pending.one_shot, st.buffer, dst, 1, &region);
    b.written.push_back({dst, at, n});
    // The write's bytes, at least 64 KiB, not the staging buffer's size: after
    // a model's upload the free buffers are its 64 MiB chunks, and a 4-byte
    // input took one and went to the queue alone (a vkQueueSubmit, ~6 us on
    // the H200, twice per decode step).
    b.bytes += std::max(n, kMinStaging);
    if (b.bytes >= kMaxBatch) flush_batch();
    done += n;
  }
}

void pi_stream_s::wait_fence(VkFence f) {
  if (dev->poll_fences) {
    const auto until = std::chrono::steady_clock::now() + kPollFor;
    do {
      const VkResult r = vkGetFenceStatus(dev->device, f);
      if (r == VK_SUCCESS) return;
      if (r != VK_NOT_READY) check(r, "vkGetFenceStatus");
    } while (std::chrono::steady_clock::now() < until);
  }
  check(vkWaitForFences(dev->device, 1, &f, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void pi_stream_s::read(pi_buffer buf, uint64_t offset, void* dst, uint64_t size) {
  const VkBuffer src = buf->alloc.block->buffer;
  if (const auto hit = dev->imports.find(dst, size); hit.buffer != VK_NULL_HANDLE && size > 0) {
    copy_now(src, buf->alloc.offset + offset, hit.buffer, hit.offset, size, true);
    return;
  }
  auto* bytes = static_cast<uint8_t*>(dst);
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(kChunk, size - done);
    auto staging = acquire_staging(n, true);
    copy_now(src, buf->alloc.offset + offset + done, staging.buffer, 0, n, true);
    std::memcpy(bytes + done, staging.mapped, n);
    recycle(staging);
    done += n;
  }
}

polyinfer::vk::Recording* pi_stream_s::take_recording(polyinfer::vk::RecordedGraph& rg) {
  polyinfer::vk::Recording* r = rg.idle();
  while (r == nullptr && rg.recordings.size() >= kMaxRecordingsPerKey && !pending_.empty()) {
    check(vkWaitForFences(dev->device, 1, &pending_.front().fence, VK_TRUE, UINT64_MAX),
          "vkWaitForFences");
    retire(false);
    r = rg.idle();
  }
  return r;
}

pi_stream_s::Pending pi_stream_s::planned(const pi_graph& g, const char** action) {
  const bool reused = reuse_.plan(dev, g, dev->profile_nodes, &plan_);
  const polyinfer::vk::GraphPlan& plan = plan_;
  Pending p;
  p.graph = polyinfer::vk::recorded_graph(dev, plan);
  p.recording = take_recording(*p.graph);
  const bool recorded = p.recording == nullptr;
  if (recorded) p.recording = p.graph->record(dev, plan);
  // Not in flight, so its parameter words are the host's to rewrite; the
  // submit makes the (coherent) writes visible to the device. A kept plan
  // changes only the words of its decode-field dispatches.
  auto* words = static_cast<uint32_t*>(p.recording->params.mapped);
  if (reused && p.recording->params_epoch == reuse_.epoch())
    polyinfer::vk::write_params(g, plan, reuse_.field_dispatches(), words);
  else
    polyinfer::vk::write_params(g, plan, words);
  p.recording->params_epoch = reuse_.epoch();
  p.recording->zero_words();
  if (p.recording->queries) {
    std::vector<polyinfer::vk::Profiler::Dispatch> dispatches;
    for (const auto& d : plan.dispatches)
      dispatches.push_back({d.first, d.count, d.op.shader, d.folded});
    p.profile_keys = polyinfer::vk::Profiler::dispatch_keys(g, dispatches);
  }
  ++p.recording->in_flight;
  *action = recorded ? "record" : reused ? "replay, plan reused" : "replay";
  return p;
}

void pi_stream_s::add_submit(const char* action, std::chrono::steady_clock::time_point t0) {
  if (!profiler_) return;
  const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - t0;
  profiler_->add_submit(action, us.count());
}

void pi_stream_s::submit_graph(const pi_graph& g) {
  const auto t0 = std::chrono::steady_clock::now();
  drop_prepared();
  if (g.n_nodes == 0) return;
  retire(false);
  const char* action = nullptr;
  Pending p = planned(g, &action);
  take_batch(p);
  VkCommandBuffer cmd = p.recording->cmd;
  submit(std::move(p), cmd);
  add_submit(action, t0);
}

void pi_stream_s::prepare_graph(const pi_graph& g) {
  const auto t0 = std::chrono::steady_clock::now();
  drop_prepared();
  retire(false);
  const char* action = nullptr;
  Pending p = planned(g, &action);
  prepared_ = Prepared{g, std::move(p), dev->buffers_freed.load()};
  add_submit((std::string("prepare: ") + action).c_str(), t0);
}

bool pi_stream_s::submit_prepared() {
  const auto t0 = std::chrono::steady_clock::now();
  if (!prepared_) return false;
  if (prepared_->freed != dev->buffers_freed.load()) {
    const pi_graph g = prepared_->graph;
    submit_graph(g);  // drops the prepared recording first
    return true;
  }
  // Before the prepared graph leaves prepared_: a throw here leaves it to
  // the next drop.
  retire(false);
  Prepared q = std::move(*prepared_);
  prepared_.reset();
  take_batch(q.pending);
  VkCommandBuffer cmd = q.pending.recording->cmd;
  submit(std::move(q.pending), cmd);
  add_submit("prepared: submit", t0);
  return true;
}

void pi_stream_s::drop_prepared() {
  if (!prepared_) return;
  --prepared_->pending.recording->in_flight;
  prepared_.reset();
}

void pi_stream_s::sync() {
  flush_batch();
  retire(true);
}
