// Random-access byte sources: a file read with pread, or a block of memory. The .mlxfn reader decodes
// from them (format/bytes.h) and an imported file's lazy constants read their payloads through them
// (primitives/misc/load.h). The sequential sources of the array-file readers are in io/source.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::io_detail {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at `offset`; throws std::runtime_error when that is not possible.
  virtual void read_at(uint64_t offset, void* dst, size_t n) const = 0;
  virtual const std::string& name() const = 0;
};

class RandomFileSource : public RandomSource {
 public:
  // Throws std::runtime_error("[import_function] Failed to open <path>").
  explicit RandomFileSource(const std::string& path);
  ~RandomFileSource() override;
  RandomFileSource(const RandomFileSource&) = delete;
  RandomFileSource& operator=(const RandomFileSource&) = delete;
  uint64_t size() const override { return size_; }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  const std::string& name() const override { return path_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

class RandomMemorySource : public RandomSource {
 public:
  explicit RandomMemorySource(std::vector<uint8_t> data, std::string name = "<memory>")
      : data_(std::move(data)), name_(std::move(name)) {}
  uint64_t size() const override { return data_.size(); }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  const std::string& name() const override { return name_; }

 private:
  std::vector<uint8_t> data_;
  std::string name_;
};

}  // namespace kiln::io_detail
