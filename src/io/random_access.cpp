#include "io/random_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace kiln::io_detail {

RandomFileSource::RandomFileSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("[import_function] Failed to open " + path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("[import_function] Failed to open " + path + " (not a regular file)");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

RandomFileSource::~RandomFileSource() {
  if (fd_ >= 0) ::close(fd_);
}

void RandomFileSource::read_at(uint64_t offset, void* dst, size_t n) const {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw std::runtime_error("[read] Unable to read from file " + path_ + ": expected " + std::to_string(n) +
                               " more bytes at offset " + std::to_string(offset) + ".");
    }
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

void RandomMemorySource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > data_.size() || n > data_.size() - offset) {
    throw std::runtime_error("[read] Unable to read from " + name_ + ": expected " + std::to_string(n) +
                             " bytes at offset " + std::to_string(offset) + ".");
  }
  if (n) std::memcpy(dst, data_.data() + offset, n);
}

}  // namespace kiln::io_detail
