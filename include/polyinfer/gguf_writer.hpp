// Writing GGUF v3 files (spec: ggml/docs/gguf.md), streamed: the header (metadata and
// tensor infos) is written first, then each tensor's data in the declared order, in
// as many chunks as the caller likes, so a multi-GB model never sits in memory.
//
//   GgufWriter w;
//   w.set("general.architecture", GgufValue::string("llama"));
//   w.add_tensor("token_embd.weight", GgmlType::Q8_0, {4096, 32000});
//   FileSink sink("out.gguf");
//   w.begin(sink);
//   w.write_data(bytes, n);   // repeated until every tensor's bytes are written
//   w.finish();
//   sink.close();
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "polyinfer/gguf.hpp"

namespace polyinfer {

// Where the writer's bytes go.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, size_t n) = 0;
};

class VectorSink : public ByteSink {
 public:
  void write(const void* data, size_t n) override;
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Buffered file output; throws Error(kIo) naming the path on any failure.
class FileSink : public ByteSink {
 public:
  explicit FileSink(const std::string& path);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  void write(const void* data, size_t n) override;
  void close();  // flushes and reports errors; the destructor closes silently

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

class GgufWriter {
 public:
  // alignment: general.alignment (a power of two); written as a key when not 32.
  explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment);

  // Adds a metadata entry (kept in insertion order). Throws kDuplicateKey.
  void set(const std::string& key, GgufValue value);
  // Declares a tensor; ne in ggml order (ne[0] contiguous), 1..4 dims.
  // Throws kDuplicateTensor, kBadTensorShape (block size, dims).
  void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne);

  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // Writes the header to sink; the sink must outlive finish().
  void begin(ByteSink& sink);
  // Appends data to the current tensor, moving to the next one (and padding) as each
  // is filled. Throws kInvalidArgument when more bytes arrive than were declared.
  void write_data(const void* data, size_t n);
  // Throws kInvalidArgument if any declared tensor bytes are missing.
  void finish();

 private:
  void write_value(const GgufValue& v);
  void write_string(const std::string& s);
  void write_padding(uint64_t written);
  template <typename T>
  void put(T v) {
    sink_->write(&v, sizeof(T));
  }

  uint32_t alignment_;
  std::vector<GgufKv> kvs_;
  std::unordered_set<std::string> keys_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_set<std::string> names_;
  uint64_t next_offset_ = 0;
  ByteSink* sink_ = nullptr;
  size_t current_ = 0;           // tensor receiving data
  uint64_t current_filled_ = 0;  // its bytes written so far
  uint64_t header_bytes_ = 0;
};

}  // namespace polyinfer
