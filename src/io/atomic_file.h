// Writing a file so that it is either complete or absent: the bytes go to a fresh temporary file in
// the same directory (created with O_EXCL, mode 0666 less the umask, as a plain open would), which is
// flushed, fsync'd and then renamed over the destination. On any error the temporary file is removed
// and the destination is left as it was. (A symbolic link at the destination is replaced, not
// followed.)
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace kiln::io_detail {

// `api` prefixes messages ("[save]"); `body` writes the content and may throw.
void write_file_atomically(const std::string& path, const char* api, const std::function<void(std::ostream&)>& body);

}  // namespace kiln::io_detail
