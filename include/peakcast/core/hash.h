// SHA-256 (OpenSSL EVP) as lower-case hex.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace peakcast {

std::string sha256_hex(std::string_view data);

// A stable 64-bit hash for feature hashing and user ids (FNV-1a; not for security).
uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ULL);

}  // namespace peakcast
