//===- Transport.cpp - connections, the idle room, HTTP framing -----------===//

#include "runtime/serve/Transport.h"

#include <cctype>
#include <cstring>

namespace pccx::serve {

thread_local Connection *tlConnection = nullptr;

bool equalsIgnoringCase(const std::string &a, const char *b) {
  size_t n = std::strlen(b);
  if (a.size() != n)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i]))
      return false;
  return true;
}

std::optional<ApiError> framingError(const httplib::Request &req,
                                     size_t maxBody) {
  auto range = req.headers.equal_range("Content-Length");
  std::optional<uint64_t> length;
  for (auto it = range.first; it != range.second; ++it) {
    const std::string &v = it->second;
    uint64_t n = 0;
    bool digits = !v.empty() && v.size() <= 19 &&
                  std::all_of(v.begin(), v.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (digits)
      n = std::stoull(v);
    if (!digits || (length && *length != n))
      return apiError(400, "invalid_content_length",
                      "the request has a malformed or conflicting "
                      "Content-Length");
    length = n;
  }
  if (req.has_header("Transfer-Encoding")) {
    if (length)
      return apiError(400, "invalid_content_length",
                      "the request has both Content-Length and "
                      "Transfer-Encoding");
    if (req.get_header_value_count("Transfer-Encoding") != 1 ||
        !equalsIgnoringCase(req.get_header_value("Transfer-Encoding"),
                            "chunked"))
      return apiError(501, "unsupported_transfer_encoding",
                      "only Transfer-Encoding: chunked is supported");
  }
  if (length && *length > maxBody)
    return apiError(413, "request_too_large",
                    "the request body is larger than " +
                        std::to_string(maxBody) + " bytes");
  if (req.is_multipart_form_data())
    return apiError(415, "unsupported_media_type",
                    "multipart bodies are not accepted; send JSON");
  return std::nullopt;
}

} // namespace pccx::serve
