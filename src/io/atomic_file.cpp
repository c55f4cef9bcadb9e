#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace kiln::io_detail {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// A name beside `path` that no other writer (thread or process) picks: pid, a counter and random bits.
std::string temp_name(const std::string& path, int attempt) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[96];
  std::snprintf(buf, sizeof buf, ".kiln-tmp-%ld-%llu-%08llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(rng() & 0xffffffffULL) ^ static_cast<unsigned long long>(attempt));
  return path + buf;
}

}  // namespace

void write_file_atomically(const std::string& path, const char* api, const std::function<void(std::ostream&)>& body) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = temp_name(path, attempt);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    throw std::runtime_error(std::string(api) + " Failed to open " + path + " for writing: " + errno_text(errno) + ".");
  }
  ::close(fd);
  auto remove_tmp = [&] { ::unlink(tmp.c_str()); };
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw std::runtime_error(std::string(api) + " Failed to open " + path + " for writing.");
      body(out);
      out.flush();
      out.close();
      if (!out) throw std::runtime_error(std::string(api) + " Failed to write " + path + ".");
    }
    int sync_fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (sync_fd < 0 || ::fsync(sync_fd) != 0) {
      int e = errno;
      if (sync_fd >= 0) ::close(sync_fd);
      throw std::runtime_error(std::string(api) + " Failed to write " + path + ": " + errno_text(e) + ".");
    }
    ::close(sync_fd);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw std::runtime_error(std::string(api) + " Failed to write " + path + ": " + errno_text(errno) + ".");
    }
  } catch (...) {
    remove_tmp();
    throw;
  }
}

}  // namespace kiln::io_detail
