// convert_file: parse a file in its own layout and write the same records (ids, streams, constants
// and all) in another release's layout. The whole output is built in memory and checked before
// anything touches the disk, then written to a temporary file that is renamed over the target.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "format/codec.h"
#include "format/record.h"
#include "primitives/misc/load.h"

namespace kiln {

void convert_file(const std::string& in, const std::string& out, const ConvertOptions& options) {
  format::FormatVersion target = format::target_version(options.version, "convert");
  auto src = std::make_shared<format::FileSource>(in);
  format::ParsedFile file = format::read_file(*src, [&](const ArraySpec& spec, uint64_t offset, uint64_t nbytes) {
    return detail::load_constant(src, spec, offset, nbytes);
  });
  std::string metadata = options.metadata ? *options.metadata : file.metadata;
  if (!metadata.empty() && !format::header_has_metadata(target)) {
    throw std::invalid_argument(
        options.metadata ? "[convert] Metadata cannot be written for MLX " + target.str() +
                               ": its layout has no metadata field (added in 0.32.1)."
                         : "[convert] The file has metadata, but MLX " + target.str() +
                               "'s layout has no metadata field (added in 0.32.1); pass an empty metadata to drop it.");
  }
  format::ByteWriter w;
  format::write_header(w, target, static_cast<int32_t>(file.records.size()), file.shapeless, metadata);
  std::unordered_set<uint64_t> written;
  for (auto& rec : file.records) {
    std::vector<uint64_t> added;
    format::write_record(w, rec, target, written, added, "convert");
    written.insert(added.begin(), added.end());
  }
  namespace fs = std::filesystem;
  fs::path target_path(out);
  fs::path dir = target_path.has_parent_path() ? target_path.parent_path() : fs::path(".");
  std::string tmpl = (dir / (".kiln-convert-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) throw std::runtime_error("[convert] Failed to create a file in " + dir.string() + ": " + std::strerror(errno));
  std::string tmp(name.data());
  // Until the rename, any failure removes the temporary file and leaves `out` untouched.
  struct Guard {
    int fd;
    std::string path;
    bool done = false;
    ~Guard() {
      if (fd >= 0) ::close(fd);
      if (!done) ::unlink(path.c_str());
    }
  } guard{fd, tmp};
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("[convert] Failed to " + what + " " + out + ": " + std::strerror(errno));
  };
  auto put = [&](const uint8_t* p, size_t len) {
    while (len > 0) {
      ssize_t n = ::write(fd, p, len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write");
      p += n;
      len -= static_cast<size_t>(n);
    }
  };
  // Constant payloads are streamed from the input one at a time.
  auto& buf = w.bytes();
  size_t prev = 0;
  for (auto& [pos, a] : w.payloads()) {
    put(buf.data() + prev, pos - prev);
    prev = pos;
    auto p = format::payload_bytes(a);
    put(p.data(), p.size());
  }
  put(buf.data() + prev, buf.size() - prev);
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) fail("write");
  guard.fd = -1;
  if (::close(fd) != 0) fail("write");
  if (::rename(tmp.c_str(), out.c_str()) != 0) fail("write");
  guard.done = true;
}

}  // namespace kiln
