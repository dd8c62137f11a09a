// A read-only memory mapping of a whole regular file.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace polyinfer {

class MappedFile {
 public:
  // Throws Error(kIo) naming the path and the system error.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace polyinfer
