// Random-access byte sources: a file read with pread, or a block of memory. The .mlxfn reader decodes
// from them (format/bytes.h) and an imported file's lazy constants read their payloads through them
// (primitives/misc/load.h). The sequential sources of the array-file readers are in io/source.h.
//
// A constant's payload can also be used in place (`view`): the file is memory-mapped read-only, once,
// on the first request, and the payload becomes a view into the mapping, so importing copies no weights
// and the pages come from the page cache. A file that shrinks after it was mapped would make reading a
// mapped page fault (SIGBUS), as with every memory-mapped loader; KILN_MMAP=0 in the environment turns
// mapping off (every payload is then copied with pread, which reports a shortened file as an error).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
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
  // The n bytes at `offset` in place, without copying: a pointer that keeps what it points into alive,
  // or null when the source cannot lend them (mapping off or failed, the range not inside the file as
  // it is now, `offset` not a multiple of `align`). Callers then copy with read_at.
  virtual std::shared_ptr<const void> view(uint64_t offset, size_t n, size_t align) const;
};

// Whether sources lend payloads in place (view): on unless KILN_MMAP=0 is set. Tests switch it.
bool mapping_enabled();
void set_mapping_enabled(bool on);

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
  std::shared_ptr<const void> view(uint64_t offset, size_t n, size_t align) const override;

 private:
  struct Mapping;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
  mutable std::mutex map_mutex_;
  mutable std::shared_ptr<Mapping> map_;  // the whole file, mapped on the first view
  mutable bool map_tried_ = false;
};

class RandomMemorySource : public RandomSource {
 public:
  explicit RandomMemorySource(std::vector<uint8_t> data, std::string name = "<memory>")
      : data_(std::make_shared<const std::vector<uint8_t>>(std::move(data))), name_(std::move(name)) {}
  uint64_t size() const override { return data_->size(); }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  const std::string& name() const override { return name_; }
  // In place inside the block, which the view keeps alive.
  std::shared_ptr<const void> view(uint64_t offset, size_t n, size_t align) const override;

 private:
  std::shared_ptr<const std::vector<uint8_t>> data_;
  std::string name_;
};

}  // namespace kiln::io_detail
