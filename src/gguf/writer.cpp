#include <bit>
#include <cerrno>
#include <cstring>

#include "polyinfer/error.hpp"
#include "polyinfer/gguf_writer.hpp"

namespace polyinfer {

void VectorSink::write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + n);
}

FileSink::FileSink(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr) throw Error(ErrorCode::kIo, path + ": " + std::strerror(errno));
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 22);
}

FileSink::~FileSink() {
  if (f_ != nullptr) std::fclose(f_);
}

void FileSink::write(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, f_) != n) {
    throw Error(ErrorCode::kIo, path_ + ": write failed: " + std::strerror(errno));
  }
}

void FileSink::close() {
  if (f_ == nullptr) return;
  const bool ok = std::fflush(f_) == 0;
  const int err = errno;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok || !closed) throw Error(ErrorCode::kIo, path_ + ": " + std::strerror(err));
}

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    throw Error(ErrorCode::kBadAlignment,
                "alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment != kGgufDefaultAlignment) set("general.alignment", GgufValue::u32(alignment));
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  if (!keys_.insert(key).second) {
    throw Error(ErrorCode::kDuplicateKey, "duplicate metadata key '" + key + "'");
  }
  kvs_.push_back({key, std::move(value)});
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type,
                            const std::vector<int64_t>& ne) {
  if (ne.empty() || ne.size() > kGgufMaxDims) {
    throw Error(ErrorCode::kBadTensorShape, "tensor '" + name + "' needs 1 to 4 dims");
  }
  if (!names_.insert(name).second) {
    throw Error(ErrorCode::kDuplicateTensor, "duplicate tensor name '" + name + "'");
  }
  GgufTensorInfo t{};
  t.name = name;
  t.type = type;
  t.n_dims = static_cast<uint32_t>(ne.size());
  t.ne = {1, 1, 1, 1};
  for (size_t d = 0; d < ne.size(); ++d) t.ne[d] = ne[d];
  t.n_bytes = row_size(type, t.ne[0]) * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3]);
  t.offset = next_offset_;
  next_offset_ += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  tensors_.push_back(std::move(t));
}

void GgufWriter::write_string(const std::string& s) {
  put<uint64_t>(s.size());
  sink_->write(s.data(), s.size());
  header_bytes_ += 8 + s.size();
}

void GgufWriter::write_value(const GgufValue& v) {
  if (const std::string* s = v.as_string()) {
    write_string(*s);
    return;
  }
  if (!v.is_array()) {
    const size_t size = scalar_size(v.type());
    const uint64_t bits = v.scalar_bits();
    sink_->write(&bits, size);  // little-endian host: the low bytes come first
    header_bytes_ += size;
    return;
  }
  put<uint32_t>(static_cast<uint32_t>(v.array_type()));
  put<uint64_t>(v.array_size());
  header_bytes_ += 12;
  if (v.array_type() == GgufValueType::STRING) {
    for (const std::string& s : v.strings()) write_string(s);
  } else if (v.array_type() == GgufValueType::ARRAY) {
    for (const GgufValue& a : v.arrays()) write_value(a);
  } else {
    sink_->write(v.packed_bytes().data(), v.packed_bytes().size());
    header_bytes_ += v.packed_bytes().size();
  }
}

void GgufWriter::write_padding(uint64_t written) {
  static const uint8_t zeros[256] = {};
  uint64_t pad = (alignment_ - written % alignment_) % alignment_;
  while (pad > 0) {
    const size_t n = pad < sizeof(zeros) ? static_cast<size_t>(pad) : sizeof(zeros);
    sink_->write(zeros, n);
    pad -= n;
  }
}

void GgufWriter::begin(ByteSink& sink) {
  sink_ = &sink;
  header_bytes_ = 0;
  put<uint32_t>(0x46554747u);  // "GGUF"
  put<uint32_t>(3);
  put<uint64_t>(tensors_.size());
  put<uint64_t>(kvs_.size());
  header_bytes_ += 24;
  for (const GgufKv& kv : kvs_) {
    write_string(kv.key);
    put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    header_bytes_ += 4;
    write_value(kv.value);
  }
  for (const GgufTensorInfo& t : tensors_) {
    write_string(t.name);
    put<uint32_t>(t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) put<uint64_t>(static_cast<uint64_t>(t.ne[d]));
    put<uint32_t>(static_cast<uint32_t>(t.type));
    put<uint64_t>(t.offset);
    header_bytes_ += 4 + 8 * t.n_dims + 4 + 8;
  }
  write_padding(header_bytes_);
  current_ = 0;
  current_filled_ = 0;
}

void GgufWriter::write_data(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (current_ >= tensors_.size()) {
      throw Error(ErrorCode::kInvalidArgument, "GGUF writer: more tensor data than declared");
    }
    const GgufTensorInfo& t = tensors_[current_];
    const uint64_t take = std::min<uint64_t>(n, t.n_bytes - current_filled_);
    sink_->write(p, take);
    p += take;
    n -= take;
    current_filled_ += take;
    if (current_filled_ == t.n_bytes) {
      // Pad to the next tensor's offset; the last tensor is padded too, like gguf-py.
      write_padding(t.n_bytes);
      ++current_;
      current_filled_ = 0;
    }
  }
}

void GgufWriter::finish() {
  // Zero-byte tensors at the end need no data; skip past them.
  while (current_ < tensors_.size() && tensors_[current_].n_bytes == 0 && current_filled_ == 0) {
    ++current_;
  }
  if (current_ != tensors_.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "GGUF writer: tensor '" + tensors_[current_].name + "' is missing data");
  }
}

}  // namespace polyinfer
