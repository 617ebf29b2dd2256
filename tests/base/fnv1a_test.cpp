// Fnv1a (base/fnv1a.h) against the algorithm's published test vectors (the FNV authors' list for
// 64-bit FNV-1a), and an integer added as its bytes, least significant first.
#include "base/fnv1a.h"

#include <gtest/gtest.h>

#include <string>

namespace {

uint64_t of(const std::string& text) {
  ipu::base::Fnv1a h;
  for (const char c : text) h.add_byte(static_cast<uint8_t>(c));
  return h.value;
}

TEST(Fnv1a, MatchesThePublishedVectors) {
  EXPECT_EQ(of(""), 0xcbf29ce484222325u);
  EXPECT_EQ(of("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(of("foobar"), 0x85944171f73967e8u);
}

TEST(Fnv1a, AnIntegerIsItsBytesLeastSignificantFirst) {
  ipu::base::Fnv1a word;
  word.add(uint32_t{0x61626364});  // "dcba" in memory order
  EXPECT_EQ(word.value, of("dcba"));
  ipu::base::Fnv1a wide;
  wide.add(uint64_t{0x6162636465666768});
  EXPECT_EQ(wide.value, of("hgfedcba"));
}

}  // namespace
